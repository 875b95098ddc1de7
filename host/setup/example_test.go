package setup_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/setup"
	"github.com/weirhost/weir/surface"
)

// From a configuration to an agent: the default configuration's offline
// route (a scripted model that needs no network), its three first-party
// plugins, and a tool of the program's own.
func Example() {
	ctx := context.Background()
	cfg := config.Default() // or config.Load(config.Options{File: "weir.yaml"})
	cfg.Model = "offline"

	// One Host per configuration: the route's model, the plugin runtime and
	// the loaded plugins, shared by every session. The API key of a real
	// route is read through Getenv (here none is needed); compiled plugins
	// are kept in CacheDir ("" keeps them in memory).
	h, err := setup.New(ctx, cfg, &setup.Options{Getenv: nil, CacheDir: cacheDir})
	if err != nil {
		panic(err)
	}
	defer h.Close(ctx)
	fmt.Println("route:", h.Route().Name, h.Route().Route.Provider+"/"+h.Route().Route.Model, "priced with", h.Route().Tokenizer)

	files := &host.FuncTool{
		ToolName:    "list_files",
		Description: "List the files of a folder.",
		Parameters:  jsontext.Value(`{"type":"object","properties":{"path":{"type":"string"}}}`),
		Fn: func(context.Context, string) (string, error) {
			return "README.md\nmain.go", nil
		},
	}
	// One agent per session: the configuration fills in what the
	// host.Config leaves zero (route, model, providers, prompt sections,
	// host data, limits).
	s := host.NewSession("example", surface.New(), nil, host.WithIDs(host.CounterIDs("m")))
	defer s.Close()
	a, err := h.Agent(ctx, s, host.Config{Tools: []host.Tool{files}})
	if err != nil {
		panic(err)
	}
	defer a.Close() // the session's providers; the session is closed above

	res, err := a.Run(ctx, a.UserMessage("What files are here?"))
	if err != nil {
		panic(err)
	}
	fmt.Println("turn", res.Turn, res.Reason.Kind, "in", res.Steps, "steps")
	for _, m := range s.Log().Messages() {
		fmt.Printf("%-9s %s\n", m.Role, describe(m))
	}
	var names []string
	for _, c := range a.Providers.Compactors {
		names = append(names, c.ID())
	}
	fmt.Println("compaction:", strings.Join(names, ", "))
	t, err := a.Providers.Meter.Measure(ctx, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("tokenizer:", t.Tokenizer, "· surface tokens counted:", t.SurfaceTokens > 0)
	// Output:
	// route: offline offline/tour.json priced with heuristic
	// turn 1 completed in 2 steps
	// system    You are a careful, concise assistant running inside Weir. Use the tools offered when they help, and say plainly when you do not know.
	// user      What files are here?
	// assistant → list_files({"path":"."})
	// user      ← README.md
	// main.go
	// assistant The working directory holds the files listed above. Ask me to read one of them if you like.
	// compaction: compaction-basic
	// tokenizer: heuristic · surface tokens counted: true
}

func describe(m *surface.Message) string {
	var parts []string
	for _, b := range m.Content {
		switch b.Type {
		case surface.BlockText:
			parts = append(parts, b.Text)
		case surface.BlockToolCall:
			parts = append(parts, fmt.Sprintf("→ %s(%s)", b.Name, b.Arguments))
		case surface.BlockToolResult:
			parts = append(parts, "← "+surface.TextOf(b.Content))
		}
	}
	return strings.Join(parts, " ")
}
