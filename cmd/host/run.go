package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"github.com/hashicorp/go-hclog"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/builtin"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/setup"
	"github.com/weirhost/weir/surface"
)

func init() {
	register(&command{name: "run", args: "[PROMPT...]", summary: "run a live session turn against a model (or the offline model)", run: runCmd})
}

// runOptions are the flags of run and compact.
type runOptions struct {
	fs                  *flag.FlagSet
	configFile, session string
	system              string
}

// routeFlagKeys maps the selected route's flags to keys; "route." is the
// selected route.
var routeFlagKeys = map[string]string{
	"model": "route.model", "provider": "route.provider", "api": "route.api", "base-url": "route.baseURL",
	"api-key-env": "route.apiKeyEnv", "context-window": "route.contextWindow", "max-tokens": "route.maxTokens",
}

// selectFlagKeys maps the flags that do not change a route to keys.
var selectFlagKeys = map[string]string{"route": "model", "log-level": "log.level", "log-format": "log.format"}

// flags defines the configuration flags; session adds run's own --session
// and --system.
func (o *runOptions) flags(fs *flag.FlagSet, session bool) {
	o.fs = fs
	fs.StringVar(&o.configFile, "config", "", "configuration file (default ./weir.yaml, then weir/weir.yaml in the user config folder)")
	fs.String("route", "", "route to use, a key of models (default: the configuration's model)")
	fs.String("model", "", `the route's model name, or "offline:SCRIPT.json" for the offline scripted model`)
	fs.String("provider", "", "the route's provider name recorded in the log; it also picks the tokenizer unless the route sets one")
	fs.String("api", "", "the route's wire API: openai (default), anthropic or gemini")
	fs.String("base-url", "", "the route's API base; the API's path is appended (/chat/completions, /v1/messages, /models/MODEL:streamGenerateContent)")
	fs.String("api-key-env", "", "environment variable holding the API key (a loopback base URL needs none)")
	fs.Int64("context-window", 0, "the route's context window in tokens")
	fs.Int64("max-tokens", 0, "completion cap per request (0: provider default)")
	if session {
		fs.StringVar(&o.session, "session", "", "session file, or session id of sessions.store (created when missing, resumed when present); default a new session in sessions.store (a new file under sessions.dir for the file store)")
		fs.StringVar(&o.system, "system", "", `system prompt replacing the configured sections ("" for none)`)
	}
	fs.String("log-level", "", "log level: trace, debug, info, warn, error, off (logs go to standard error)")
	fs.String("log-format", "", "log format: text or json")
}

func (o *runOptions) set(name string) bool {
	set := false
	o.fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// load reads the configuration with the flags set on the command line. The
// route is chosen first, so that a route that does not exist is reported
// as such rather than as a route the other flags fail to complete.
func (o *runOptions) load() (*config.Config, error) {
	sel := config.FlagsFrom(o.fs, selectFlagKeys)
	if m := o.fs.Lookup("model").Value.String(); strings.HasPrefix(m, "offline:") && !o.set("route") {
		sel = append(sel, config.Flag{Name: "model", Key: "model", Value: "offline"})
	}
	if _, _, err := config.Load(config.Options{File: o.configFile, Flags: sel}); err != nil {
		return nil, err
	}
	cfg, src, err := config.Load(config.Options{File: o.configFile, Flags: append(sel, config.FlagsFrom(o.fs, routeFlagKeys)...)})
	if err != nil {
		return nil, err
	}
	// --provider picks the tokenizer as well, unless a source set the
	// route's tokenizer.
	if p := o.fs.Lookup("provider").Value.String(); o.set("provider") {
		if s, ok := src.Of("models." + cfg.Model + ".tokenizer"); !ok || s.Kind == config.FromDefault {
			cfg.Models[cfg.Model].Tokenizer = providerTokenizer(p)
		}
	}
	return cfg, nil
}

// providerTokenizer is the tokenizer that prices a provider's models: the
// DeepSeek tokenizer for deepseek, the estimate for every other provider
// (the plugin host counts with deepseek-v3 and heuristic only).
func providerTokenizer(provider string) string {
	if strings.EqualFold(provider, "deepseek") {
		return "deepseek-v3"
	}
	return "heuristic"
}

// open opens the selected route and its model; log receives the client's
// warnings. The API key comes from the variable the route's apiKeyEnv
// names.
func (o *runOptions) open(cfg *config.Config, log hclog.Logger) (*setup.Route, error) {
	r, err := setup.OpenRoute(cfg, cfg.Model, os.Getenv, log)
	var missing *setup.MissingKeyError
	if errors.As(err, &missing) {
		return nil, fmt.Errorf("no API key: $%s is empty. Set it (or name another variable with --api-key-env), "+
			"or try the offline model: %s run --route offline \"hello\"", missing.Env, prog)
	}
	return r, err
}

// newSessionPath names a new session file in dir: prefix, the UTC time and
// a random part, so that two sessions started in the same second, even
// concurrently, get different files.
func newSessionPath(dir, prefix string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("session folder: %w", err)
	}
	for range 16 {
		var b [3]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		name := fmt.Sprintf("%s%s-%x.jsonl", prefix, time.Now().UTC().Format("20060102-150405"), b)
		path := filepath.Join(dir, name)
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
	}
	return "", fmt.Errorf("session folder %s: no free session file name", dir)
}

// interrupts turns Ctrl-C into a cancelled context: the first cancels the
// work so that it ends cleanly and is recorded; the second exits at once
// with status 130. Call stop when done; interrupted reports whether a
// Ctrl-C arrived.
func interrupts(e *env) (ctx context.Context, interrupted func() bool, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt)
	var got atomic.Bool
	done := make(chan struct{})
	go func() {
		select {
		case <-sig:
		case <-done:
			return
		}
		got.Store(true)
		fmt.Fprintln(e.stderr, "\ninterrupted: ending the step (Ctrl-C again quits at once)")
		cancel(errors.New("cancelled with Ctrl-C"))
		select {
		case <-sig:
			fmt.Fprintln(e.stderr, "quit")
			os.Exit(130)
		case <-done:
		}
	}()
	return ctx, got.Load, func() {
		signal.Stop(sig)
		close(done)
		cancel(nil)
	}
}

func runCmd(e *env, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var o runOptions
	o.flags(fs, true)
	asJSON := fs.Bool("json", false, "print the turn's result and the events it committed as one JSON object on standard output instead of the streamed text (docs/cli.md)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	prompt := strings.Join(pos, " ")
	interactive := prompt == "" && isTerminal(e.stdin)
	if interactive && *asJSON {
		return usagef("--json runs one turn: give the prompt as arguments or on standard input")
	}
	if prompt == "" && !interactive {
		b, err := io.ReadAll(e.stdin)
		if err != nil {
			return err
		}
		prompt = strings.TrimSpace(string(b))
		if prompt == "" {
			return usagef("give a prompt as arguments or on standard input")
		}
	}
	cfg, err := o.load()
	if err != nil {
		return configError(e, "run", err)
	}
	log := newLogger(cfg.Log, e.stderr)
	route, err := o.open(cfg, log)
	if err != nil {
		return err
	}
	var sections []host.Section // the configuration's
	if o.set("system") {
		sections = []host.Section{{Key: "base", Text: o.system}}
	}
	// --session is a session file or a session id of sessions.store; with
	// none, a new session in that store.
	var (
		s       *host.Session
		release func() error
		path    = o.session
	)
	if path != "" {
		s, release, err = openSession(cfg, path, false)
	} else {
		s, release, path, err = newStoredSession(cfg)
	}
	if err != nil {
		return err
	}
	defer release()
	rec := recordTurn(s.Log()) // for --json
	cwd, _ := os.Getwd()
	wait := newModelWait(statusOf(e.stderr), route.Route.Model)
	out := newPrinter(wait.Output(e.stdout))
	if *asJSON {
		out = newPrinter(io.Discard) // standard output carries the JSON only
	}
	s.Log().Observe(wait.observe)
	defer wait.end()
	var (
		ctx         = context.Background()
		interrupted = func() bool { return false }
	)
	if !interactive {
		var stop func()
		ctx, interrupted, stop = interrupts(e)
		defer stop()
	}
	// A tool call the permission policy asks about is confirmed on the
	// terminal; with no terminal there is no one to ask, and it is denied.
	in := &lineReader{r: e.stdin}
	var ask func(*setup.Options)
	if isTerminal(e.stdin) {
		ask = func(o *setup.Options) { o.Ask = terminalAsk(e, in, out.finish) }
	}
	h, err := newHostWith(ctx, e, cfg, route, log, nil, true, ask)
	if err != nil {
		if interrupted() {
			return &exitStatus{code: 130, msg: "interrupted while loading the plugins; session " + path}
		}
		return err
	}
	defer closeHost(ctx, e, h) // after an interrupt, without waiting for compilations
	a, err := h.Agent(ctx, s, withTelemetry(host.Config{Sections: sections, Tools: builtin.Tools(cwd, nil), OnDelta: out.delta}))
	if err != nil {
		return err
	}
	defer a.Close()
	if interrupted() {
		return &exitStatus{code: 130, msg: "interrupted while starting the MCP servers; session " + path}
	}
	if meter := a.Providers.Meter; meter != nil {
		s.Log().Observe(func(ev surface.Event) {
			if ev.Type == surface.TypeStepEnd {
				out.finish()
				tokenLine(e.stderr, meter, route.Route.ContextWindow)
			}
		})
	}
	out.watch(s.Log(), a.Providers.Compactors)
	if interactive {
		return chat(e, a.Agent, out, path, in)
	}
	res, err := a.Run(ctx, a.UserMessage(prompt))
	out.finish()
	if err != nil {
		if interrupted() {
			return &exitStatus{code: 130, msg: fmt.Sprintf("interrupted: %v; session %s", explain(err), path)}
		}
		return err
	}
	takeBack(e, a.Agent)
	fmt.Fprintf(e.stderr, "turn %d: %s · session %s\n", res.Turn, describeEnd(res.Reason), path)
	if *asJSON {
		if err := rec.write(e.stdout, path, res.Turn, res.Reason, res.Steps); err != nil {
			return err
		}
	}
	if interrupted() {
		return &exitStatus{code: 130}
	}
	if res.Reason.Kind == surface.EndError {
		return errSilent
	}
	return nil
}

// isTerminal reports whether r is an interactive terminal: a character
// device with terminal attributes (/dev/null is a character device, and
// not a terminal).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && isTTY(f.Fd())
}

// chat is the interactive prompt loop: one turn per line. Ctrl-C cancels the
// running step (the log records the cancellation); Ctrl-C at the prompt, an
// end of input or "/exit" leaves.
func chat(e *env, a *host.Agent, out *printer, path string, in *lineReader) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	return chatLoop(e, a, out, path, in, sig)
}

// chatLoop is chat with its Ctrl-C signals read from sig.
//
// A line whose turn ends before the line entered the log (Ctrl-C while
// the step was being prepared, a compaction before it, a pre-step
// handler's reject) is taken back, and the prompt says so: it is not kept
// to go out with the next line, which the user may write knowing it was
// not sent.
func chatLoop(e *env, a *host.Agent, out *printer, path string, in *lineReader, sig <-chan os.Signal) error {
	lines := in.lines()
	fmt.Fprintf(e.stderr, "session %s · Ctrl-C cancels a step, Ctrl-C at the prompt or /exit leaves\n", path)
	for {
		fmt.Fprint(e.stderr, "> ")
		var line string
		select {
		case <-sig:
			fmt.Fprintln(e.stderr)
			return nil
		case l, ok := <-lines:
			if !ok {
				fmt.Fprintln(e.stderr)
				return nil
			}
			line = strings.TrimSpace(l)
		}
		switch line {
		case "":
			continue
		case "/exit", "/quit":
			return nil
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		done := make(chan struct{})
		go func() {
			select {
			case <-sig:
				cancel(errors.New("cancelled with Ctrl-C"))
			case <-done:
			}
		}()
		fmt.Fprint(e.stderr, "  …\r")
		res, err := a.Run(ctx, a.UserMessage(line))
		close(done)
		cancel(nil)
		out.finish()
		if err != nil {
			return err
		}
		if res.Reason.Kind != surface.EndCompleted {
			fmt.Fprintf(e.stderr, "turn %d: %s\n", res.Turn, describeEnd(res.Reason))
		}
		takeBack(e, a)
	}
}

// takeBack takes the messages a turn left queued (it ended before
// committing them) out of the queue and says that they were not sent.
func takeBack(e *env, a *host.Agent) {
	for _, m := range a.TakePending() {
		fmt.Fprintf(e.stderr, "not sent: %q was taken back (the turn ended before it entered the log); type it again to send it\n",
			termLine(previewOf(m, 60)))
	}
}

func describeEnd(r surface.EndReason) string {
	switch r.Kind {
	case surface.EndError:
		if r.Error != nil {
			return fmt.Sprintf("error %s: %s", termLine(string(r.Error.Code)), termLine(r.Error.Message))
		}
	case surface.EndAborted:
		return "aborted (" + termLine(r.Reason) + ")"
	}
	return r.Kind
}
