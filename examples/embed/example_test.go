package embed_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/setup"
	"github.com/weirhost/weir/plugins"
	"github.com/weirhost/weir/surface"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A program brings its own tools: here, one that upper-cases text. Its
// parameters schema is derived from shoutArgs, and the model's arguments
// are checked against it before the function runs.
type shoutArgs struct {
	Text string `json:"text" jsonschema:"the text to shout"`
}

var shout = host.MustTool("shout", "Return the text in capital letters.",
	func(_ context.Context, in shoutArgs) (string, error) {
		return strings.ToUpper(in.Text), nil
	})

// The offline model plays a script: call the tool, then answer.
const script = `{"replies": [
  {"toolCalls": [{"id": "call-1", "name": "shout", "arguments": {"text": "hello"}}]},
  {"text": "Done: the tool shouted for me."}
]}`

func Example() {
	ctx := context.Background()
	model, err := llm.ParseScript([]byte(script))
	if err != nil {
		panic(err)
	}
	// A session in memory; host.Open keeps one in a store (a file, SQLite,
	// PostgreSQL or your own: see store_test.go), and setup.OpenStore opens
	// the store a sessions.store setting names.
	s := host.NewSession("embedded", surface.New(), nil, host.WithIDs(host.CounterIDs("m")))
	defer s.Close()

	// host/setup turns a configuration into a Host: the route, one
	// sandboxed plugin runtime and the configured plugins (the default
	// configuration's three first-party WebAssembly providers), shared by
	// every session. The program gives its own route here, the scripted
	// model. Compiled modules are kept in CacheDir ("" keeps them in
	// memory: every process then compiles them again, several seconds).
	cfg := config.Default() // or config.Load(config.Options{File: "weir.yaml"})
	h, err := setup.New(ctx, cfg, &setup.Options{
		Route: &setup.Route{Name: "offline",
			Route: host.Route{Provider: "offline", Model: "script", ContextWindow: 8192},
			Model: llm.NewScripted(model)},
		PluginConfig: map[string][]byte{plugins.CompactionBasic: []byte(`{"headroomTokens": 1024}`)},
		CacheDir:     cacheDir,
	})
	if err != nil {
		panic(err)
	}
	defer h.Close(ctx)

	// An interceptor wraps every tool call (host.Config.ToolInterceptors;
	// ModelInterceptors wrap the model calls): here an approval gate that
	// lets only the tools it knows run, and keeps an audit of the calls.
	var audit []string
	approve := func(ctx context.Context, call host.ToolCall, next host.ToolRun) ([]surface.Block, error) {
		if call.Name != "shout" {
			audit = append(audit, call.ID+" "+call.Name+" refused")
			return nil, &host.ToolRefusal{Code: "TOOL_DENIED", Reason: "this tool needs approval"}
		}
		audit = append(audit, call.ID+" "+call.Name+" approved")
		return next(ctx, call)
	}

	// OpenTelemetry is opt-in: give the agent a tracer provider (and a
	// meter provider for metrics). Here the SDK keeps the spans in memory;
	// a program would export them (OTLP, ...). Without one nothing is
	// recorded.
	spans := tracetest.NewInMemoryExporter()
	tracing := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tracing.Shutdown(ctx)

	// One agent per session: what the host.Config leaves zero (the route,
	// the model, the providers, limits) comes from the Host.
	agent, err := h.Agent(ctx, s, host.Config{
		Sections:         []host.Section{{Key: "base", Text: "You are terse."}},
		Tools:            []host.Tool{shout},
		ToolInterceptors: []host.ToolInterceptor{approve},
		TracerProvider:   tracing,
		AgentName:        "embed-example",
	})
	if err != nil {
		panic(err)
	}
	defer agent.Close() // the session's providers
	// A subscriber follows the session from another goroutine: it gets
	// every committed event, in order, without ever holding up the loop.
	sub := s.Subscribe(0)
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		var types []string
		for e := range sub.Events() {
			types = append(types, e.Type)
		}
		fmt.Println("subscriber saw:", strings.Join(types, " "))
		fmt.Println("subscriber dropped:", sub.Dropped())
	}()

	res, err := agent.Run(context.Background(), agent.UserMessage("Say hello loudly."))
	if err != nil {
		panic(err)
	}
	sub.Close() // the events already delivered stay readable
	<-printed
	if err := res.Err(); err != nil { // a failed or aborted turn, typed
		panic(err)
	}
	fmt.Println("turn", res.Turn, res.Reason.Kind, "in", res.Steps, "steps")
	fmt.Println("audit:", strings.Join(audit, "; "))
	for _, m := range s.Log().Messages() {
		fmt.Printf("%-9s %s\n", m.Role, describe(m))
	}
	// Every request is a pure function of the log.
	req, _ := host.BuildRequest(s.Log(), s.ID())
	fmt.Println("next request:", len(req.Messages), "messages, first is", req.Messages[0].Role)
	m, err := agent.Providers.Meter.Measure(ctx, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("surface tokens:", m.SurfaceTokens > 0)
	printSpans(spans.GetSpans())
	// Output:
	// subscriber saw: turn/start step/start system/message user/message request/header request/context assistant/message tool/call tool/result step/end step/start assistant/message step/end turn/end
	// subscriber dropped: 0
	// turn 1 completed in 2 steps
	// audit: call-1 shout approved
	// system    You are terse.
	// user      Say hello loudly.
	// assistant → shout({"text":"hello"})
	// user      ← HELLO
	// assistant Done: the tool shouted for me.
	// next request: 5 messages, first is system
	// surface tokens: true
	// span invoke_agent embed-example
	// span   weir.step
	// span     weir.compaction
	// span       compact compaction-basic
	// span         measure token-meter
	// span     render system-prompt
	// span     chat script
	// span     execute_tool shout
	// span   weir.step
	// span     weir.compaction
	// span       compact compaction-basic
	// span         measure token-meter
	// span     render system-prompt
	// span     chat script
	// observe spans: 15
}

// printSpans prints the spans as a tree, the token meter's observe spans
// (one per committed event) counted rather than listed.
func printSpans(spans tracetest.SpanStubs) {
	kids := map[string][]tracetest.SpanStub{}
	observes := 0
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "observe ") {
			observes++
			continue
		}
		parent := ""
		if s.Parent.IsValid() {
			parent = s.Parent.SpanID().String()
		}
		kids[parent] = append(kids[parent], s)
	}
	var walk func(parent, indent string)
	walk = func(parent, indent string) {
		list := kids[parent]
		slices.SortFunc(list, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
		for _, s := range list {
			fmt.Printf("span %s%s\n", indent, s.Name)
			walk(s.SpanContext.SpanID().String(), indent+"  ")
		}
	}
	walk("", "")
	fmt.Println("observe spans:", observes)
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
