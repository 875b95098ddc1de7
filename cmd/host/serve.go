package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/eval"
	winspect "github.com/weirhost/weir/host/inspect"
)

func init() {
	register(&command{name: "serve", args: "[SESSION... | --dir DIR]", summary: "a read-only web inspector for session logs: trajectory, prompt cards, compactions, requests, tokens, live updates", run: serveCmd})
}

// serveReady, when set (tests), receives the base URL once the server
// listens.
var serveReady func(url string)

// serveStop, when set (tests), ends the server when it is closed.
var serveStop <-chan struct{}

func serveCmd(e *env, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8383", "address to listen on (host:port; port 0 picks a free one)")
	dir := fs.String("dir", "", "serve every *.jsonl session file of this folder")
	public := fs.Bool("public", false, "allow a non-loopback --addr (a token is then required)")
	token := fs.String("token", "", "the access token for a --public address (default: a random one, printed)")
	models := fs.Int("models", winspect.DefaultModels, "keep at most this many sessions' whole models in memory (the least recently viewed are dropped)")
	configFile := fs.String("config", "", "the configuration whose eval.prices price requests and turns (default ./weir.yaml, then weir/weir.yaml in the user config folder)")
	prices := fs.String("prices", "", "price requests and turns in dollars per million tokens, hit=X,miss=Y,output=Z (default: eval.prices when the configuration sets it; otherwise no cost is shown)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 && *dir == "" {
		return usagef("usage: %[1]s serve [--addr HOST:PORT] SESSION... | --dir DIR", prog)
	}
	if *dir != "" {
		if st, err := os.Stat(*dir); err != nil || !st.IsDir() {
			return usagef("--dir %q is not a folder", *dir)
		}
	}
	for _, p := range pos {
		if _, err := winspect.Load(p); err != nil {
			return err
		}
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return usagef("--addr %q is not HOST:PORT: %v", *addr, err)
	}
	loop := host == "localhost"
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		loop = true
	}
	if !loop && !*public {
		return usagef("--addr %q is not a loopback address: the inspector shows whole sessions, so a non-loopback address needs --public (and serves only with a token)", *addr)
	}
	if *models < 1 {
		return usagef("--models %d: at least one session's model is kept", *models)
	}
	if *token != "" && !*public {
		return usagef("--token is for a --public address; a loopback address needs none")
	}
	if *public && *token == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return fmt.Errorf("making a token: %w", err)
		}
		*token = hex.EncodeToString(b)
	}
	p, err := servePrices(e, *prices, *configFile)
	if err != nil {
		return err
	}
	srv, err := winspect.New(winspect.Options{Files: pos, Dir: *dir, Token: *token, Public: *public, Models: *models, Prices: p})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", *addr, err)
	}
	url := "http://" + ln.Addr().String() + "/"
	if *token != "" {
		url += "?token=" + *token
	}
	fmt.Fprintf(e.stdout, "Weir inspector (read-only) at %s\nPress Ctrl-C to stop.\n", url)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	hs.RegisterOnShutdown(srv.Close)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		select {
		case <-ctx.Done():
		case <-serveStop:
		}
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		_ = hs.Close()
	}()
	if serveReady != nil {
		serveReady("http://" + ln.Addr().String())
	}
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// servePrices is the price table serve prices usage with: --prices, else
// eval.prices when the configuration sets it (as eval reads it); nil, no
// cost shown, when neither does.
func servePrices(e *env, flagValue, file string) (*eval.Prices, error) {
	if flagValue != "" {
		p, err := parsePrices(flagValue)
		if err != nil {
			return nil, usagef("--prices: %v", err)
		}
		return &p, nil
	}
	cfg, src, err := config.Load(config.Options{File: file})
	if err != nil {
		return nil, configError(e, "serve", err)
	}
	for _, k := range []string{"eval.prices.cacheHit", "eval.prices.cacheMiss", "eval.prices.output"} {
		if s, ok := src.Of(k); ok && s.Kind != config.FromDefault {
			p := orDefault(eval.Prices(cfg.Eval.Prices))
			return &p, nil
		}
	}
	return nil, nil
}
