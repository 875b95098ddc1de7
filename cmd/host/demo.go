package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/weirhost/weir/examples/offline"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/builtin"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/llm"
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

func demoCmd(e *env, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	out := fs.String("out", "", "session file to write (default: a new file under .weir/sessions)")
	configFile := fs.String("config", "", "configuration file (only log and sessions.dir apply: the demo's route and prompt are scripted)")
	fixed := fs.Bool("fixed-clock", false, "use a fixed clock, counter ids and examples/offline as the tools' folder, so the session file is reproducible")
	fs.String("log-level", "", "log level: trace, debug, info, warn, error (logs go to standard error)")
	fs.String("log-format", "", "log format: text or json")
	if err := fs.Parse(args); err != nil {
		return usagef("%v", err)
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
	if path == "" {
		dir := cfg.Sessions.Dir
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		path = filepath.Join(dir, "demo-"+time.Now().UTC().Format("20060102-150405")+".jsonl")
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
	cwd, _ := os.Getwd()
	if *fixed {
		cwd = filepath.Join(cwd, "examples", "offline")
	}
	p := newPrinter(e.stdout)
	sections := []host.Section{{Key: "base", Text: config.DefaultSystemPrompt}}
	route := host.Route{Provider: "offline", Model: "demo", ContextWindow: 8192, MaxTokens: 1024}
	// The three default providers run as WebAssembly plugins, loaded from
	// the modules embedded in this binary; the demo's small window needs a
	// smaller compaction headroom than the default.
	ctx := context.Background()
	log := config.NewLogger(cfg.Log, e.stderr)
	set, err := loadPlugins(ctx, cfg, log, map[string][]byte{
		"compaction-basic": []byte(`{"headroomTokens": 1024}`),
		"token-meter":      meterConfig(route, "heuristic"),
	})
	if err != nil {
		return err
	}
	defer set.Close(ctx)
	prov, err := set.forSession(s)
	if err != nil {
		return err
	}
	tokens := prov.meter
	a, err := host.NewAgent(s, host.Config{
		Route:      route,
		Model:      llm.NewScripted(script),
		Prompt:     prov.prompt,
		Sections:   sections,
		Tools:      builtin.Tools(cwd, clock),
		Compactors: prov.compactors,
		Meter:      tokens,
		OnDelta:    p.delta,
		Logger:     log,
		StepBudget: cfg.Sandbox.StepBudget,
	})
	if err != nil {
		return err
	}
	s.Log().Observe(p.event)
	if tokens != nil {
		s.Log().Observe(func(ev surface.Event) {
			if ev.Type == surface.TypeStepEnd {
				p.finish()
				tokenLine(e.stdout, tokens, a.Route().ContextWindow)
			}
		})
	}
	started := time.Now()
	for _, text := range demoTurns {
		switch text {
		case actionPrompt:
			sections = append(sections, host.Section{Key: "style", Text: "Answer like a pirate."})
			a.SetSections(sections)
			fmt.Fprintln(e.stdout, "\n(the configuration adds a prompt section: the next step replaces node 0)")
			continue
		case actionCompact:
			fmt.Fprintln(e.stdout, "\n(manual compaction: compaction-basic summarizes everything after node 0)")
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
	fmt.Fprintf(e.stdout, "  go run ./cmd/host replay %s\n", path)
	fmt.Fprintf(e.stdout, "  go run ./cmd/host transcript %s\n", path)
	last := int64(-1)
	for _, ev := range l.Events() {
		if ev.Type == surface.TypeAssistantMessage {
			last = ev.Seq
		}
	}
	fmt.Fprintf(e.stdout, "  go run ./cmd/host request %s --at %d\n", path, last)
	fmt.Fprintf(e.stdout, "  go run ./cmd/host inspect %s\n", path)
	return nil
}
