package main

import (
	"context"
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
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

func init() {
	register(&command{name: "run", summary: "run a live session turn against a model (or the offline model)", run: runCmd})
}

// defaultPrompt is the system prompt used when none is configured.
const defaultPrompt = "You are a careful, concise assistant running inside Weir. " +
	"Use the tools offered when they help, and say plainly when you do not know."

// runOptions are the flags shared by run and demo.
type runOptions struct {
	model, provider, baseURL, keyEnv string
	session, system                  string
	contextWindow, maxTokens         int64
}

func (o *runOptions) flags(fs *flag.FlagSet) {
	fs.StringVar(&o.model, "model", "deepseek-chat", `model name, or "offline:SCRIPT.json" for the offline scripted model`)
	fs.StringVar(&o.provider, "provider", "deepseek", "provider name recorded in the log")
	fs.StringVar(&o.baseURL, "base-url", "https://api.deepseek.com", "OpenAI-compatible API base; /chat/completions is appended")
	fs.StringVar(&o.keyEnv, "api-key-env", "DEEPSEEK_API_KEY", "environment variable holding the API key")
	fs.StringVar(&o.session, "session", "", "session file (created when missing, resumed when present); default a new file under .weir/sessions")
	fs.StringVar(&o.system, "system", defaultPrompt, `system prompt ("" for none)`)
	fs.Int64Var(&o.contextWindow, "context-window", 128000, "the model's context window in tokens")
	fs.Int64Var(&o.maxTokens, "max-tokens", 8192, "completion cap per request (0: provider default)")
}

// model opens the configured model and its route.
func (o *runOptions) open(env *env) (llm.Model, host.Route, error) {
	route := host.Route{Provider: o.provider, Model: o.model, ContextWindow: o.contextWindow, MaxTokens: o.maxTokens}
	if path, ok := strings.CutPrefix(o.model, "offline:"); ok {
		m, err := llm.Open(o.model)
		if err != nil {
			return nil, route, err
		}
		route.Provider, route.Model = "offline", filepath.Base(path)
		return m, route, nil
	}
	key := os.Getenv(o.keyEnv)
	if key == "" {
		return nil, route, fmt.Errorf("no API key: $%s is empty. Set it (or name another variable with --api-key-env), "+
			"or try the offline model: host run --model offline:examples/offline/tour.json \"hello\"", o.keyEnv)
	}
	c, err := llm.NewClient(llm.ClientConfig{BaseURL: o.baseURL, APIKey: llm.Secret(key)})
	if err != nil {
		return nil, route, err
	}
	return c, route, nil
}

func (o *runOptions) sessionPath() (string, error) {
	if o.session != "" {
		return o.session, nil
	}
	dir := filepath.Join(".weir", "sessions")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Join(dir, time.Now().UTC().Format("20060102-150405.000")+".jsonl"), nil
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
	if prompt == "" {
		b, err := io.ReadAll(e.stdin)
		if err != nil {
			return err
		}
		prompt = strings.TrimSpace(string(b))
	}
	if prompt == "" {
		return usagef("give a prompt as arguments or on standard input")
	}
	model, route, err := o.open(e)
	if err != nil {
		return err
	}
	path, err := o.sessionPath()
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
	tokens, err := newMeter()
	if err != nil {
		return err
	}
	a, err := host.NewAgent(s, host.Config{Route: route, Model: model, Prompt: &host.SectionPrompt{},
		Sections: []host.Section{{Key: "base", Text: o.system}}, Tools: builtin.Tools(cwd, nil), OnDelta: out.delta,
		Meter: tokens})
	if err != nil {
		return err
	}
	s.Log().Observe(func(ev surface.Event) {
		if ev.Type == surface.TypeStepEnd {
			out.finish()
			tokenLine(e.stderr, tokens, route.ContextWindow)
		}
	})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	s.Log().Observe(out.event)
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
