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
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

func init() {
	register(&command{name: "demo", summary: "run a complete offline session: streaming, tools, a prompt change, compaction", run: demoCmd})
}

// demoTurns are the user's side of the demo; a nil entry marks the prompt
// change.
var demoTurns = []string{
	"Hello, who are you?",
	"What is in the examples folder?",
	"",
	"Ahoy, are you a pirate now?",
	"What time is it?",
}

func demoCmd(e *env, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	out := fs.String("out", "", "session file to write (default: a new file under .weir/sessions)")
	fixed := fs.Bool("fixed-clock", false, "use a fixed clock, counter ids and examples/offline as the tools' folder, so the session file is reproducible")
	if err := fs.Parse(args); err != nil {
		return usagef("%v", err)
	}
	script, err := llm.ParseScript(offline.Demo)
	if err != nil {
		return err
	}
	path := *out
	if path == "" {
		dir := filepath.Join(".weir", "sessions")
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
	sections := []host.Section{{Key: "base", Text: defaultPrompt}}
	a, err := host.NewAgent(s, host.Config{
		Route:    host.Route{Provider: "offline", Model: "demo", ContextWindow: 8192, MaxTokens: 1024},
		Model:    llm.NewScripted(script),
		Prompt:   &host.SectionPrompt{},
		Sections: sections,
		Tools:    builtin.Tools(cwd, clock),
		OnDelta:  p.delta,
	})
	if err != nil {
		return err
	}
	s.Log().Observe(p.event)
	started := time.Now()
	for _, text := range demoTurns {
		if text == "" {
			sections = append(sections, host.Section{Key: "style", Text: "Answer like a pirate."})
			a.SetSections(sections)
			fmt.Fprintln(e.stdout, "\n(the configuration adds a prompt section: the next step replaces node 0)")
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
	fmt.Fprintf(e.stdout, "  go run ./cmd/host request %s --at <seq of an assistant/message>\n", path)
	return nil
}
