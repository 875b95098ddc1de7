package host

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/surface"
)

// otelRig is an SDK tracer provider exporting to memory and a meter
// provider read by hand.
type otelRig struct {
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
}

func newOtelRig(t *testing.T) *otelRig {
	r := &otelRig{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(r.spans))
	r.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() {
		_ = r.tp.Shutdown(context.Background())
		_ = r.mp.Shutdown(context.Background())
	})
	return r
}

func (r *otelRig) config(c *Config) { c.TracerProvider, c.MeterProvider = r.tp, r.mp }

// tree is the exported spans, by name and by id.
type tree struct {
	t     *testing.T
	spans tracetest.SpanStubs
}

func (r *otelRig) tree(t *testing.T) tree { return tree{t, r.spans.GetSpans()} }

// named returns the spans called name, in start order.
func (tr tree) named(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range tr.spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	return out
}

func (tr tree) one(name string) tracetest.SpanStub {
	tr.t.Helper()
	got := tr.named(name)
	require.Len(tr.t, got, 1, "spans named %q", name)
	return got[0]
}

// children returns the names of the spans whose parent is p, in start order.
func (tr tree) children(p tracetest.SpanStub) []string {
	var kids []tracetest.SpanStub
	for _, s := range tr.spans {
		if s.Parent.SpanID() == p.SpanContext.SpanID() {
			kids = append(kids, s)
		}
	}
	slices.SortFunc(kids, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	var names []string
	for _, k := range kids {
		if !strings.HasPrefix(k.Name, "observe ") { // one per committed event
			names = append(names, k.Name)
		}
	}
	return names
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func requireAttrs(t *testing.T, s tracetest.SpanStub, want map[string]any) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		a, ok := got[attribute.Key(k)]
		require.True(t, ok, "span %q has no %s (has %v)", s.Name, k, s.Attributes)
		require.Equal(t, v, a.AsInterface(), "span %q: %s", s.Name, k)
	}
}

func noAttr(t *testing.T, s tracetest.SpanStub, key string) {
	t.Helper()
	_, ok := attrs(s)[attribute.Key(key)]
	require.False(t, ok, "span %q has %s", s.Name, key)
}

// stubMeter is a native token meter: it counts what it observes.
type stubMeter struct {
	observed int
	fail     bool
	m        Measurement
}

func (m *stubMeter) ID() string { return "stub-meter" }
func (m *stubMeter) Observe(evs []surface.Event) error {
	m.observed += len(evs)
	return nil
}
func (m *stubMeter) Measure(context.Context, *surface.Header) (*Measurement, error) {
	if m.fail {
		return nil, errors.New("meter broke")
	}
	m.m.Baseline = "none"
	return &m.m, nil
}

// probeCompactor measures and summarizes through its view, then proposes
// nothing (or fails).
type probeCompactor struct{ fail bool }

func (c *probeCompactor) ID() string { return "probe-compactor" }
func (c *probeCompactor) Compact(ctx context.Context, v *View, req CompactionRequest) ([]surface.Proposal, error) {
	if _, err := v.Measure(ctx, nil); err != nil {
		return nil, err
	}
	if _, err := v.Summarize(ctx, SummaryRequest{Provider: "sum", Model: "sum-1", MaxTokens: 50}); err != nil {
		return nil, err
	}
	if c.fail {
		return nil, errors.New("compactor broke")
	}
	return nil, nil
}

type stubSummarizer struct{}

func (stubSummarizer) Summarize(context.Context, SummaryRequest) (*SummaryResult, error) {
	return &SummaryResult{Usage: &surface.Usage{Input: 40, Output: 8}, FinishReason: "stop", Provider: "sum", Model: "sum-1"}, nil
}

func TestTelemetrySpanTreeOfATurnWithRetryAndTool(t *testing.T) {
	rig := newOtelRig(t)
	meter := &stubMeter{}
	h := newHarness(t, "be brief", func(c *Config) {
		rig.config(c)
		c.AgentName = "tester"
		c.Tools = []Tool{echoTool}
		c.MaxRetryWait = time.Millisecond
		c.Meter = meter
		c.Compactors = []CompactionProvider{&probeCompactor{}}
		c.Summarizer = stubSummarizer{}
	})
	h.model.then(fail(llm.CodeRateLimit), callTool("call-1", "echo", `{"x":1}`), reply("done"))
	res := h.turn("hi")
	require.Equal(t, surface.EndCompleted, res.Reason.Kind)

	tr := rig.tree(t)
	turn := tr.one("invoke_agent tester")
	require.False(t, turn.Parent.IsValid(), "the turn is the root")
	require.Equal(t, trace.SpanKindInternal, turn.SpanKind)
	requireAttrs(t, turn, map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "tester", "gen_ai.provider.name": "test",
		"gen_ai.request.model": "m1", "weir.turn": int64(1), "weir.turn.steps": int64(2), "weir.turn.end": "completed",
		"gen_ai.usage.input_tokens": int64(100), "gen_ai.usage.output_tokens": int64(5),
	})
	require.Equal(t, codes.Unset, turn.Status.Code)

	steps := tr.named("weir.step")
	require.Len(t, steps, 2)
	require.Equal(t, []string{"weir.step", "weir.step"}, tr.children(turn))
	require.Equal(t, []string{"weir.compaction", "render system-prompt", "chat m1", "chat m1", "execute_tool echo"}, tr.children(steps[0]))
	require.Equal(t, []string{"weir.compaction", "render system-prompt", "chat m1"}, tr.children(steps[1]))
	requireAttrs(t, steps[0], map[string]any{"weir.turn": int64(1), "weir.step": int64(1), "weir.step.end": "tools"})
	requireAttrs(t, steps[1], map[string]any{"weir.step": int64(2), "weir.step.end": "answer"})

	chats := tr.named("chat m1")
	require.Len(t, chats, 3)
	for i, c := range chats {
		require.Equal(t, trace.SpanKindClient, c.SpanKind)
		requireAttrs(t, c, map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "test",
			"gen_ai.request.model": "m1", "weir.chat.purpose": "step"})
		require.Equal(t, []int64{1, 2, 1}[i], attrs(c)["weir.attempt"].AsInt64(), "attempt of chat %d", i)
	}
	requireAttrs(t, chats[0], map[string]any{"error.type": "RATE_LIMIT"})
	require.Equal(t, codes.Error, chats[0].Status.Code)
	requireAttrs(t, chats[1], map[string]any{"gen_ai.response.finish_reasons": []string{"tool_calls"}})
	noAttr(t, chats[1], "error.type")
	requireAttrs(t, chats[2], map[string]any{"gen_ai.response.finish_reasons": []string{"stop"},
		"gen_ai.usage.input_tokens": int64(100), "gen_ai.usage.output_tokens": int64(5)})

	tool := tr.one("execute_tool echo")
	requireAttrs(t, tool, map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "echo",
		"gen_ai.tool.call.id": "call-1", "gen_ai.tool.type": "function"})
	noAttr(t, tool, "error.type")

	comp := tr.named("weir.compaction")[0]
	requireAttrs(t, comp, map[string]any{"weir.compaction.reason": "pressure", "weir.compaction.outcome": "nothing",
		"weir.plugin.name": "probe-compactor"})
	require.Equal(t, []string{"compact probe-compactor"}, tr.children(comp))
	call := tr.named("compact probe-compactor")[0]
	requireAttrs(t, call, map[string]any{"weir.plugin.kind": "compaction", "weir.plugin.operation": "compact",
		"weir.plugin.outcome": "ok", "weir.compaction.reason": "pressure"})
	require.Equal(t, []string{"measure stub-meter", "chat sum-1"}, tr.children(call))
	sum := tr.named("chat sum-1")[0]
	requireAttrs(t, sum, map[string]any{"weir.chat.purpose": "summarize", "gen_ai.provider.name": "sum",
		"gen_ai.request.max_tokens": int64(50), "gen_ai.usage.input_tokens": int64(40), "gen_ai.usage.output_tokens": int64(8)})
	requireAttrs(t, tr.named("render system-prompt")[0], map[string]any{"weir.plugin.kind": "prompt",
		"weir.plugin.name": "system-prompt", "weir.plugin.operation": "render", "weir.plugin.outcome": "ok"})

	// Every committed event is folded into the meter under a span of its
	// own, below the open step (or turn).
	observes := tr.named("observe stub-meter")
	require.NotEmpty(t, observes)
	for _, o := range observes[1:] { // the first folds the log when the agent attaches
		require.True(t, o.Parent.IsValid(), "observe under the turn")
		requireAttrs(t, o, map[string]any{"weir.plugin.kind": "meter", "weir.meter.events": int64(1)})
	}

	// One trace; the conversation id on every span.
	for _, s := range tr.spans {
		requireAttrs(t, s, map[string]any{"gen_ai.conversation.id": "test-session"})
		if s.Parent.IsValid() {
			require.Equal(t, turn.SpanContext.TraceID(), s.SpanContext.TraceID(), "span %q", s.Name)
		}
	}

	// Metrics: token usage per type, one duration per model call, provider
	// calls, no failures.
	m := collect(t, rig)
	usage := histInt(t, m, "gen_ai.client.token.usage")
	require.Equal(t, int64(100+2*40), sumWhere(usage, "gen_ai.token.type", "input"), "one answer, two summarize calls")
	require.Equal(t, int64(5+2*8), sumWhere(usage, "gen_ai.token.type", "output"))
	dur := histFloat(t, m, "gen_ai.client.operation.duration")
	require.Equal(t, uint64(5), countWhere(dur, "", ""), "3 attempts and 2 summarize calls")
	require.Equal(t, uint64(1), countWhere(dur, "error.type", "RATE_LIMIT"))
	plug := histFloat(t, m, MetricPluginDuration)
	require.Equal(t, uint64(2), countWhere(plug, "weir.plugin.operation", "render"))
	require.Equal(t, uint64(2), countWhere(plug, "weir.plugin.operation", "compact"))
	require.Equal(t, uint64(len(observes)), countWhere(plug, "weir.plugin.operation", "observe"))
	_, failures := findMetric(m, MetricPluginFailures)
	require.False(t, failures, "no provider failed")
}

func TestTelemetryFailuresAreErrors(t *testing.T) {
	rig := newOtelRig(t)
	h := newHarness(t, "p", func(c *Config) {
		rig.config(c)
		c.Prompt = failingPrompt{}
		c.Meter = &stubMeter{fail: true}
		c.Compactors = []CompactionProvider{&probeCompactor{}}
	})
	h.model.then(fail(llm.CodeAuth))
	res := h.turn("hi")
	require.Equal(t, surface.EndError, res.Reason.Kind)

	tr := rig.tree(t)
	turn := tr.one("invoke_agent")
	requireAttrs(t, turn, map[string]any{"weir.turn.end": "error", "error.type": "AUTH"})
	require.Equal(t, codes.Error, turn.Status.Code)
	noAttr(t, turn, "gen_ai.agent.name")

	chat := tr.one("chat m1")
	requireAttrs(t, chat, map[string]any{"error.type": "AUTH"})
	require.Equal(t, codes.Error, chat.Status.Code)
	require.Equal(t, "AUTH", chat.Status.Description, "the code, never the provider's message")

	render := tr.one("render failing-prompt")
	requireAttrs(t, render, map[string]any{"weir.plugin.outcome": "error", "error.type": "_OTHER"})
	require.Equal(t, codes.Error, render.Status.Code)
	measure := tr.one("measure stub-meter")
	requireAttrs(t, measure, map[string]any{"weir.plugin.outcome": "error"})
	comp := tr.one("weir.compaction")
	requireAttrs(t, comp, map[string]any{"weir.compaction.outcome": "failed"})
	require.Equal(t, codes.Error, comp.Status.Code)
	requireAttrs(t, tr.one("compact probe-compactor"), map[string]any{"weir.plugin.outcome": "error"})

	m := collect(t, rig)
	fails, ok := findMetric(m, MetricPluginFailures)
	require.True(t, ok)
	sum := fails.Data.(metricdata.Sum[int64])
	byOp := map[string]int64{}
	for _, dp := range sum.DataPoints {
		op, _ := dp.Attributes.Value(AttrPluginOperation)
		byOp[op.AsString()] += dp.Value
	}
	require.Equal(t, map[string]int64{"render": 1, "measure": 1, "compact": 1}, byOp)
}

type failingPrompt struct{}

func (failingPrompt) ID() string { return "failing-prompt" }
func (failingPrompt) Render(context.Context, *Assembly) (string, error) {
	return "", errors.New("prompt broke")
}

func TestTelemetryCompactionOnOverflowAndManual(t *testing.T) {
	rig := newOtelRig(t)
	comp := &checkpointCompactor{when: func(_ *View, req CompactionRequest) bool { return req.Reason != CompactPressure }}
	h := newHarness(t, "p", func(c *Config) {
		rig.config(c)
		c.Compactors = []CompactionProvider{comp}
	})
	h.turn("one")
	h.model.then(fail(llm.CodeContextOverflow), reply("fits now"))
	h.turn("two")
	_, err := h.a.CompactNow(context.Background())
	require.NoError(t, err)

	tr := rig.tree(t)
	var reasons []string
	for _, c := range tr.named("weir.compaction") {
		r := attrs(c)
		reasons = append(reasons, r["weir.compaction.reason"].AsString()+"/"+r["weir.compaction.outcome"].AsString())
	}
	require.Equal(t, []string{"pressure/nothing", "pressure/nothing", "context-overflow/compacted", "manual/compacted"}, reasons)
	overflow := tr.named("weir.compaction")[2]
	step := tr.named("weir.step")[1]
	require.Equal(t, step.SpanContext.SpanID(), overflow.Parent.SpanID(), "overflow recovery belongs to the step")
	manual := tr.named("weir.compaction")[3]
	require.False(t, manual.Parent.IsValid(), "manual compaction runs outside a turn")
	chats := tr.named("chat m1")
	require.Len(t, chats, 3)
	requireAttrs(t, chats[1], map[string]any{"error.type": "CONTEXT_WINDOW_EXCEEDED", "weir.attempt": int64(1)})
	requireAttrs(t, chats[2], map[string]any{"weir.attempt": int64(2)})
}

func TestTelemetryParallelToolsNestUnderTheStep(t *testing.T) {
	rig := newOtelRig(t)
	missing := &FuncTool{ToolName: "boom", Fn: func(context.Context, string) (string, error) { return "", errors.New("no") }}
	h := newHarness(t, "p", func(c *Config) {
		rig.config(c)
		c.Tools = []Tool{echoTool, missing}
		c.ParallelTools = 3
	})
	h.model.then(func(*llm.Request) (*llm.Result, error) {
		return &llm.Result{Content: []surface.Block{surface.ToolCall("a", "echo", `{}`), surface.ToolCall("b", "boom", `{}`),
			surface.ToolCall("c", "nope", `{}`)}, FinishReason: llm.FinishToolCalls}, nil
	}, reply("ok"))
	h.turn("go")
	tr := rig.tree(t)
	step := tr.named("weir.step")[0]
	for _, name := range []string{"execute_tool echo", "execute_tool boom", "execute_tool nope"} {
		require.Equal(t, step.SpanContext.SpanID(), tr.one(name).Parent.SpanID(), name)
	}
	noAttr(t, tr.one("execute_tool echo"), "error.type")
	requireAttrs(t, tr.one("execute_tool boom"), map[string]any{"error.type": CodeToolError, "gen_ai.tool.call.id": "b"})
	requireAttrs(t, tr.one("execute_tool nope"), map[string]any{"error.type": CodeToolNotFound})
	require.Equal(t, codes.Error, tr.one("execute_tool boom").Status.Code)
}

// TestTelemetryOffRecordsNothing: without providers the agent has no
// instrumentation at all, and the global OpenTelemetry providers are never
// used.
func TestTelemetryOffRecordsNothing(t *testing.T) {
	rig := newOtelRig(t)
	prevT, prevM := otel.GetTracerProvider(), otel.GetMeterProvider()
	otel.SetTracerProvider(rig.tp)
	otel.SetMeterProvider(rig.mp)
	t.Cleanup(func() { otel.SetTracerProvider(prevT); otel.SetMeterProvider(prevM) })

	h := newHarness(t, "p", func(c *Config) {
		c.Tools = []Tool{echoTool}
		c.Meter = &stubMeter{}
		c.Compactors = []CompactionProvider{&probeCompactor{}}
		c.Summarizer = stubSummarizer{}
	})
	require.Nil(t, h.a.tel)
	h.model.then(callTool("c", "echo", `{}`), reply("ok"))
	h.turn("hi")
	require.Empty(t, rig.spans.GetSpans())
	var rm metricdata.ResourceMetrics
	require.NoError(t, rig.reader.Collect(context.Background(), &rm))
	require.Empty(t, rm.ScopeMetrics)

	// The instrumentation's entry points cost no allocation when off.
	var tel *telemetry
	asm := &Assembly{}
	p := &textPrompt{text: "x"}
	m := &stubMeter{}
	evs := []surface.Event{{Seq: 1}}
	allocs := testing.AllocsPerRun(100, func() {
		ctx, o := tel.startChat(context.Background(), surface.CallConfig{Provider: "p", Model: "m"}, attemptRef{1, 1, 1})
		tel.endChat(o, surface.CallConfig{}, nil, nil)
		_, _ = tel.render(ctx, p, asm)
		_ = tel.observe(m, evs)
		_, _ = tel.measure(ctx, m, nil)
	})
	require.Zero(t, allocs)
}

// A tracer provider alone (no meter provider) traces; a meter provider
// alone measures.
func TestTelemetryEitherProviderAlone(t *testing.T) {
	rig := newOtelRig(t)
	h := newHarness(t, "p", func(c *Config) { c.TracerProvider = rig.tp })
	h.turn("hi")
	require.NotEmpty(t, rig.spans.GetSpans())

	rig2 := newOtelRig(t)
	h2 := newHarness(t, "p", func(c *Config) { c.MeterProvider = rig2.mp })
	h2.turn("hi")
	require.Empty(t, rig2.spans.GetSpans())
	_, ok := findMetric(collect(t, rig2), "gen_ai.client.token.usage")
	require.True(t, ok)
}

func collect(t *testing.T, r *otelRig) metricdata.ResourceMetrics {
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	return rm
}

func findMetric(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

func histInt(t *testing.T, rm metricdata.ResourceMetrics, name string) metricdata.Histogram[int64] {
	m, ok := findMetric(rm, name)
	require.True(t, ok, name)
	return m.Data.(metricdata.Histogram[int64])
}

func histFloat(t *testing.T, rm metricdata.ResourceMetrics, name string) metricdata.Histogram[float64] {
	m, ok := findMetric(rm, name)
	require.True(t, ok, name)
	return m.Data.(metricdata.Histogram[float64])
}

func sumWhere(h metricdata.Histogram[int64], key, value string) int64 {
	var n int64
	for _, dp := range h.DataPoints {
		if v, ok := dp.Attributes.Value(attribute.Key(key)); ok && v.AsString() == value {
			n += dp.Sum
		}
	}
	return n
}

// countWhere counts the recordings whose attribute key is value ("" key:
// all).
func countWhere(h metricdata.Histogram[float64], key, value string) uint64 {
	var n uint64
	for _, dp := range h.DataPoints {
		if v, ok := dp.Attributes.Value(attribute.Key(key)); key == "" || ok && v.AsString() == value {
			n += dp.Count
		}
	}
	return n
}

// BenchmarkStepTracing is the cost of one step (a turn of one model call
// with the system prompt and a token meter) without telemetry and with the
// SDK recording every span (to an exporter that drops them) and metric.
func BenchmarkStepTracing(b *testing.B) {
	run := func(b *testing.B, mod func(*Config)) {
		// Agents are made in batches with the timer stopped, so that only
		// the turns are timed (and each runs on a fresh session).
		const batch = 256
		agents := make([]*Agent, 0, batch)
		msgs := make([]*surface.Message, 0, batch)
		b.ReportAllocs()
		b.ResetTimer()
		for done := 0; done < b.N; {
			b.StopTimer()
			agents, msgs = agents[:0], msgs[:0]
			for range min(batch, b.N-done) {
				s := NewSession("bench", surface.New(), nil, WithIDs(CounterIDs("m")))
				cfg := Config{Route: Route{Provider: "test", Model: "m1", ContextWindow: 1000}, Model: &funcModel{},
					Prompt: &textPrompt{text: "be brief"}, Meter: &stubMeter{}}
				mod(&cfg)
				a, err := NewAgent(s, cfg)
				if err != nil {
					b.Fatal(err)
				}
				agents, msgs = append(agents, a), append(msgs, a.UserMessage("hi"))
			}
			b.StartTimer()
			for i, a := range agents {
				if _, err := a.Run(context.Background(), msgs[i]); err != nil {
					b.Fatal(err)
				}
			}
			done += len(agents)
		}
	}
	b.Run("off", func(b *testing.B) { run(b, func(*Config) {}) })
	b.Run("on", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer tp.Shutdown(context.Background())
		defer mp.Shutdown(context.Background())
		run(b, func(c *Config) { c.TracerProvider, c.MeterProvider = tp, mp })
	})
}

// A chat span names the server the client sent the request to and, for
// each API, the response id and the model that answered, read from what
// the loopback server streamed.
func TestTelemetryChatNamesServerAndResponse(t *testing.T) {
	cases := []struct {
		api       llm.API
		id, model string
	}{
		{llm.APIOpenAI, "chatcmpl-llmtest", "llmtest"},
		{llm.APIAnthropic, "msg_llmtest", "claude-llmtest"},
		{llm.APIGemini, "resp-1", "gemini-llmtest"},
	}
	for _, c := range cases {
		t.Run(string(c.api), func(t *testing.T) {
			srv := llmtest.NewServerFor(t, string(c.api))
			client, err := llm.NewClient(llm.ClientConfig{API: c.api, BaseURL: srv.URL(), APIKey: "sk-test-secret-key-0123456789"})
			require.NoError(t, err)
			rig := newOtelRig(t)
			h := newHarness(t, "sys", func(cfg *Config) {
				cfg.Model = client
				rig.config(cfg)
			})
			srv.Push(scriptedReply{id: "resp-1", text: []string{"hi"}, input: 3, output: 1}.render(c.api))
			require.Equal(t, surface.EndCompleted, h.turn("one").Reason.Kind)

			u, err := url.Parse(srv.URL())
			require.NoError(t, err)
			port, err := strconv.Atoi(u.Port())
			require.NoError(t, err)
			chat := rig.tree(t).one("chat m1")
			attrs := map[attribute.Key]attribute.Value{}
			for _, kv := range chat.Attributes {
				attrs[kv.Key] = kv.Value
			}
			require.Equal(t, u.Hostname(), attrs[semconv.ServerAddressKey].AsString())
			require.Equal(t, int64(port), attrs[semconv.ServerPortKey].AsInt64())
			require.Equal(t, c.id, attrs[semconv.GenAIResponseIDKey].AsString())
			require.Equal(t, c.model, attrs[semconv.GenAIResponseModelKey].AsString())
		})
	}
}
