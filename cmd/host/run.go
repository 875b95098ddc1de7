package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/builtin"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

func init() {
	register(&command{name: "run", summary: "run a live session turn against a model (or the offline model)", run: runCmd})
}

// runOptions are the flags of run.
type runOptions struct {
	fs                  *flag.FlagSet
	configFile, session string
	system              string
}

// runFlagKeys maps run's configuration flags to keys; "route." is the
// selected route.
var runFlagKeys = map[string]string{
	"route": "model", "model": "route.model", "provider": "route.provider", "base-url": "route.baseURL",
	"api-key-env": "route.apiKeyEnv", "context-window": "route.contextWindow", "max-tokens": "route.maxTokens",
	"log-level": "log.level", "log-format": "log.format",
}

func (o *runOptions) flags(fs *flag.FlagSet) {
	o.fs = fs
	fs.StringVar(&o.configFile, "config", "", "configuration file (default ./weir.yaml, then weir/weir.yaml in the user config folder)")
	fs.String("route", "", "route to use, a key of models (default: the configuration's model)")
	fs.String("model", "", `the route's model name, or "offline:SCRIPT.json" for the offline scripted model`)
	fs.String("provider", "", "the route's provider name recorded in the log")
	fs.String("base-url", "", "the route's OpenAI-compatible API base; /chat/completions is appended")
	fs.String("api-key-env", "", "environment variable holding the API key")
	fs.Int64("context-window", 0, "the route's context window in tokens")
	fs.Int64("max-tokens", 0, "completion cap per request (0: provider default)")
	fs.StringVar(&o.session, "session", "", "session file (created when missing, resumed when present); default a new file under sessions.dir")
	fs.StringVar(&o.system, "system", "", `system prompt replacing the configured sections ("" for none)`)
	fs.String("log-level", "", "log level: trace, debug, info, warn, error (logs go to standard error)")
	fs.String("log-format", "", "log format: text or json")
}

func (o *runOptions) set(name string) bool {
	set := false
	o.fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// load reads the configuration with the flags set on the command line.
func (o *runOptions) load() (*config.Config, error) {
	flags := config.FlagsFrom(o.fs, runFlagKeys)
	if m := o.fs.Lookup("model").Value.String(); strings.HasPrefix(m, "offline:") && !o.set("route") {
		flags = append(flags, config.Flag{Name: "model", Key: "model", Value: "offline"})
	}
	cfg, _, err := config.Load(config.Options{File: o.configFile, Flags: flags})
	return cfg, err
}

// open opens the selected route's model.
func (o *runOptions) open(cfg *config.Config) (llm.Model, host.Route, error) {
	r := cfg.Models[cfg.Model]
	route, err := cfg.HostRoute(cfg.Model)
	if err != nil {
		return nil, route, err
	}
	if path, ok := strings.CutPrefix(r.Model, "offline:"); ok {
		m, err := llm.Open(r.Model)
		if err != nil {
			return nil, route, err
		}
		route.Provider, route.Model = "offline", filepath.Base(path)
		return m, route, nil
	}
	var key string
	if r.APIKeyEnv != "" {
		if key = os.Getenv(r.APIKeyEnv); key == "" {
			return nil, route, fmt.Errorf("no API key: $%s is empty. Set it (or name another variable with --api-key-env), "+
				"or try the offline model: host run --model offline:examples/offline/tour.json \"hello\"", r.APIKeyEnv)
		}
	}
	c, err := llm.NewClient(llm.ClientConfig{BaseURL: r.BaseURL, APIKey: llm.Secret(key)})
	if err != nil {
		return nil, route, err
	}
	return c, route, nil
}

func (o *runOptions) sessionPath(cfg *config.Config) (string, error) {
	if o.session != "" {
		return o.session, nil
	}
	if err := os.MkdirAll(cfg.Sessions.Dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Join(cfg.Sessions.Dir, time.Now().UTC().Format("20060102-150405.000")+".jsonl"), nil
}

func runCmd(e *env, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	var o runOptions
	o.flags(fs)
	if err := fs.Parse(args); err != nil {
		return usagef("%v", err)
	}
	prompt := strings.Join(fs.Args(), " ")
	interactive := prompt == "" && isTerminal(e.stdin)
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
	model, route, err := o.open(cfg)
	if err != nil {
		return err
	}
	sections := cfg.Sections(cfg.Model)
	if o.set("system") {
		sections = []host.Section{{Key: "base", Text: o.system}}
	}
	path, err := o.sessionPath(cfg)
	if err != nil {
		return err
	}
	s, err := host.OpenFile(path)
	if err != nil {
		return err
	}
	defer s.Close()
	cwd, _ := os.Getwd()
	out := newPrinter(e.stdout)
	ctx := context.Background()
	log := config.NewLogger(cfg.Log, e.stderr)
	set, prov, err := routeProviders(ctx, cfg, route, s, log)
	if err != nil {
		return err
	}
	defer set.Close(ctx)
	a, err := host.NewAgent(s, host.Config{Route: route, Model: model, Prompt: prov.prompt,
		Sections: sections, Tools: builtin.Tools(cwd, nil), OnDelta: out.delta,
		Compactors: prov.compactors, Meter: prov.meter, Logger: log, StepBudget: cfg.Sandbox.StepBudget})
	if err != nil {
		return err
	}
	if prov.meter != nil {
		s.Log().Observe(func(ev surface.Event) {
			if ev.Type == surface.TypeStepEnd {
				out.finish()
				tokenLine(e.stderr, prov.meter, route.ContextWindow)
			}
		})
	}
	s.Log().Observe(out.event)
	if interactive {
		return chat(e, a, out, path)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := a.Run(ctx, a.UserMessage(prompt))
	out.finish()
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "turn %d: %s · session %s\n", res.Turn, describeEnd(res.Reason), path)
	if res.Reason.Kind == surface.EndError {
		return errSilent
	}
	return nil
}

// isTerminal reports whether r is an interactive terminal.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// chat is the interactive prompt loop: one turn per line. Ctrl-C cancels the
// running step (the log records the cancellation); Ctrl-C at the prompt, an
// end of input or "/exit" leaves.
func chat(e *env, a *host.Agent, out *printer, path string) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(e.stdin)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
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
	}
}

func describeEnd(r surface.EndReason) string {
	switch r.Kind {
	case surface.EndError:
		if r.Error != nil {
			return fmt.Sprintf("error %s: %s", r.Error.Code, r.Error.Message)
		}
	case surface.EndAborted:
		return "aborted (" + r.Reason + ")"
	}
	return r.Kind
}
