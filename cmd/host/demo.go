package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/weirhost/weir/examples/offline"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/builtin"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/setup"
	"github.com/weirhost/weir/plugins"
	"github.com/weirhost/weir/surface"
)

func init() {
	register(&command{name: "demo", summary: "run a complete offline session: streaming, tools, a prompt change, compaction", run: demoCmd})
}

// demoTurns are the user's side of the demo. Two entries are actions: a
// prompt change and a manual compaction.
var demoTurns = []string{
	"Hello, who are you?",
	"What is in the examples folder?",
	actionPrompt,
	"Ahoy, are you a pirate now?",
	"What time is it?",
	actionCompact,
	"Thanks, that is all for now.",
}

const (
	actionPrompt  = "(prompt change)"
	actionCompact = "(compaction)"
)

// demoWorkspace is the folder tree the demo's file tools see: the layout of
// this repository's examples folder, so the scripted question about it has
// a real answer wherever the demo runs.
var demoWorkspace = map[string][]byte{
	"examples/embed/":              nil,
	"examples/offline/demo.json":   offline.Demo,
	"examples/offline/tour.json":   offline.Tour,
	"examples/prompt-plugin/":      nil,
	"examples/pruner/":             nil,
	"examples/sessions/demo.jsonl": nil,
}

// makeWorkspace writes demoWorkspace under a new temporary folder; remove
// it when done.
func makeWorkspace() (string, error) {
	root, err := os.MkdirTemp("", "weir-demo-")
	if err != nil {
		return "", fmt.Errorf("demo workspace: %w", err)
	}
	for name, data := range demoWorkspace {
		p := filepath.Join(root, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			err = os.MkdirAll(p, 0o755)
		} else if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			err = os.WriteFile(p, data, 0o644)
		}
		if err != nil {
			os.RemoveAll(root)
			return "", fmt.Errorf("demo workspace: %w", err)
		}
	}
	return root, nil
}

func demoCmd(e *env, args []string) error {
	started := time.Now()
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	out := fs.String("out", "", "session file to write (default: a new file under sessions.dir, .weir/sessions)")
	configFile := fs.String("config", "", "configuration file: its plugins, sandbox, sessions.dir and log apply; the route, prompt and the configuration of compaction-basic and token-meter are the demo's own")
	fixed := fs.Bool("fixed-clock", false, "use a fixed clock and counter ids, so the session file is the same on every run (examples/sessions/demo.jsonl is one)")
	fs.String("log-level", "", "log level: trace, debug, info, warn, error, off (logs go to standard error)")
	fs.String("log-format", "", "log format: text or json")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
		return err
	}
	cfg, _, err := config.Load(config.Options{File: *configFile, Flags: config.FlagsFrom(fs, map[string]string{"log-level": "log.level", "log-format": "log.format"})})
	if err != nil {
		return configError(e, "demo", err)
	}
	script, err := llm.ParseScript(offline.Demo)
	if err != nil {
		return err
	}
	path := *out
	if _, err := os.Lstat(path); path != "" && err == nil {
		return fmt.Errorf("%s already exists, and the demo writes a new session: remove it or give another --out", path)
	}
	if path == "" {
		if path, err = newSessionPath(cfg.Sessions.Dir, "demo-"); err != nil {
			return err
		}
	}
	var opts []host.SessionOption
	clock := time.Now
	if *fixed {
		start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
		clock = func() time.Time { return start }
		opts = append(opts, host.WithIDs(host.CounterIDs("demo")), host.WithClock(func() int64 { return start.UnixMilli() }))
	}
	s, err := host.OpenFile(path, opts...)
	if err != nil {
		return err
	}
	defer s.Close()
	work, err := makeWorkspace()
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	p := newPrinter(e.stdout)
	sections := []host.Section{{Key: "base", Text: config.DefaultSystemPrompt}}
	route := &setup.Route{Route: host.Route{Provider: "offline", Model: "demo", ContextWindow: 8192, MaxTokens: 1024},
		Tokenizer: "heuristic", Model: llm.NewScripted(script)}
	// The three default providers run as WebAssembly plugins, loaded from
	// the modules embedded in this binary; the demo's small window needs a
	// smaller compaction headroom than the default.
	ctx := context.Background()
	log := newLogger(cfg.Log, e.stderr)
	h, err := newHost(ctx, e, cfg, route, log, map[string][]byte{"compaction-basic": []byte(`{"headroomTokens": 1024}`)})
	if err != nil {
		return err
	}
	defer closeHost(ctx, e, h)
	a, err := h.Agent(ctx, s, withTelemetry(host.Config{
		Sections: sections,
		Data:     map[string]string{}, // no host data: the session file is the same wherever it runs
		Tools:    builtin.Tools(work, clock),
		OnDelta:  p.delta,
	}))
	if err != nil {
		return err
	}
	defer a.Close()
	tokens := a.Providers.Meter
	p.watch(s.Log(), a.Providers.Compactors)
	if tokens != nil {
		s.Log().Observe(func(ev surface.Event) {
			if ev.Type == surface.TypeStepEnd {
				p.finish()
				tokenLine(e.stdout, tokens, a.Route().ContextWindow)
			}
		})
	}
	fmt.Fprintln(e.stdout, "(the file tools see a scratch folder laid out like this repository's examples folder)")
	for _, text := range demoTurns {
		switch text {
		case actionPrompt:
			sections = append(sections, host.Section{Key: "style", Text: "Answer like a pirate."})
			a.SetSections(sections)
			fmt.Fprintln(e.stdout, "\n(the configuration adds a prompt section: the next step replaces node 0)")
			continue
		case actionCompact:
			fmt.Fprintf(e.stdout, "\n(manual compaction: %s)\n", compactorsLine(a.Providers.Compactors))
			before := s.Log().NodeCount()
			if _, err := a.CompactNow(context.Background()); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "  surface: %d nodes → %d nodes; node 0 is still the system prompt\n", before, s.Log().NodeCount())
			continue
		}
		fmt.Fprintf(e.stdout, "\nyou: %s\n", text)
		res, err := a.Run(context.Background(), a.UserMessage(text))
		p.finish()
		if err != nil {
			return err
		}
		if res.Reason.Kind != surface.EndCompleted {
			return fmt.Errorf("turn %d ended %s", res.Turn, describeEnd(res.Reason))
		}
	}
	l := s.Log()
	fmt.Fprintf(e.stdout, "\nDone in %s: %d events, %d surface nodes, replaceGeneration %d.\n",
		time.Since(started).Round(time.Millisecond), l.Len(), l.NodeCount(), l.ReplaceGeneration())
	fmt.Fprintf(e.stdout, "Session file: %s\n\nInspect it:\n", path)
	fmt.Fprintf(e.stdout, "  %s replay %s\n", invocation(), path)
	fmt.Fprintf(e.stdout, "  %s transcript %s\n", invocation(), path)
	last := int64(-1)
	for _, ev := range l.Events() {
		if ev.Type == surface.TypeAssistantMessage {
			last = ev.Seq
		}
	}
	fmt.Fprintf(e.stdout, "  %s request %s --at %d\n", invocation(), path, last)
	fmt.Fprintf(e.stdout, "  %s inspect %s\n", invocation(), path)
	return nil
}

// invocation is how the demo's trailer tells the user to run the program
// again: "go run ./cmd/weir" when this process is a binary go run built
// (it lives in go's build folder), else the name it was invoked as.
func invocation() string {
	if exe, err := os.Executable(); err == nil && strings.Contains(filepath.ToSlash(exe), "/go-build") {
		return "go run ./cmd/weir"
	}
	return prog
}

// compactorsLine says who compacts in the demo: compaction-basic's
// behaviour when it is the one configured, else the configured plugins.
func compactorsLine(cs []host.CompactionProvider) string {
	if len(cs) == 1 && cs[0].ID() == plugins.CompactionBasic {
		return plugins.CompactionBasic + " summarizes everything after node 0"
	}
	var names []string
	for _, c := range cs {
		names = append(names, strconv.Quote(c.ID()))
	}
	if len(names) == 0 {
		return "no compaction plugin is enabled"
	}
	return "the configured compaction plugins act in order: " + strings.Join(names, ", ")
}
