package host

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// InstrumentationName is the name of the OpenTelemetry tracer and meter
// the host records with.
const InstrumentationName = "github.com/weirhost/weir/host"

// The weir.* attributes of the host's spans and metrics (docs/embedding.md
// lists them with the gen_ai.* ones).
const (
	AttrTurn             = attribute.Key("weir.turn")
	AttrStep             = attribute.Key("weir.step")
	AttrAttempt          = attribute.Key("weir.attempt")
	AttrChatPurpose      = attribute.Key("weir.chat.purpose")
	AttrTurnSteps        = attribute.Key("weir.turn.steps")
	AttrTurnEnd          = attribute.Key("weir.turn.end")
	AttrStepEnd          = attribute.Key("weir.step.end")
	AttrPluginName       = attribute.Key("weir.plugin.name")
	AttrPluginKind       = attribute.Key("weir.plugin.kind")
	AttrPluginOperation  = attribute.Key("weir.plugin.operation")
	AttrPluginOutcome    = attribute.Key("weir.plugin.outcome")
	AttrCompactionReason = attribute.Key("weir.compaction.reason")
	AttrCompactionResult = attribute.Key("weir.compaction.outcome")
	AttrMeterEvents      = attribute.Key("weir.meter.events")
)

// The host's own metrics besides the GenAI client ones.
const (
	MetricPluginDuration = "weir.plugin.call.duration"
	MetricPluginFailures = "weir.plugin.call.failures"
)

// Plugin kinds and operations as the telemetry names them.
const (
	pluginKindPrompt     = "prompt"
	pluginKindCompaction = "compaction"
	pluginKindMeter      = "meter"
)

// Bucket boundaries the GenAI conventions advise for their histograms.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	pluginBuckets   = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
)

// telemetry is an agent's OpenTelemetry instrumentation. An agent
// configured with neither a TracerProvider nor a MeterProvider has none
// (nil): every method below is then a plain call or nothing at all, and
// allocates nothing.
type telemetry struct {
	tracer   trace.Tracer
	conv     attribute.KeyValue // gen_ai.conversation.id
	agent    string             // gen_ai.agent.name, "" when unnamed
	turnName string             // the invoke_agent span's name
	// server is server.address and server.port of the agent's model, for
	// a model that says where it sends its requests (llm.Client does).
	server []attribute.KeyValue

	tokens         metric.Int64Histogram
	opDuration     metric.Float64Histogram
	pluginDuration metric.Float64Histogram
	pluginFailures metric.Int64Counter

	// parent is a context holding the span events committed now belong
	// to (the open step's, else the turn's): the token meter's observe
	// spans hang under it, since the log's observers get no context.
	parent atomic.Pointer[context.Context]

	mu      sync.Mutex
	plugins map[pluginKey]*pluginCall

	// The turn goroutine's own: usage of the current turn's model calls.
	turnIn        int64
	turnOut       int64
	turnUsageSeen bool
}

// newTelemetry returns the instrumentation cfg asks for, or nil.
func newTelemetry(cfg Config, session string) *telemetry {
	if cfg.TracerProvider == nil && cfg.MeterProvider == nil {
		return nil
	}
	tp, mp := cfg.TracerProvider, cfg.MeterProvider
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	t := &telemetry{
		tracer:   tp.Tracer(InstrumentationName, trace.WithSchemaURL(semconv.SchemaURL)),
		conv:     semconv.GenAIConversationID(session),
		agent:    cfg.AgentName,
		turnName: "invoke_agent",
	}
	if cfg.AgentName != "" {
		t.turnName += " " + cfg.AgentName
	}
	if sv, ok := cfg.Model.(interface{ Server() (string, int) }); ok {
		if addr, port := sv.Server(); addr != "" {
			t.server = append(t.server, semconv.ServerAddress(addr))
			if port > 0 {
				t.server = append(t.server, semconv.ServerPort(port))
			}
		}
	}
	m := mp.Meter(InstrumentationName, metric.WithSchemaURL(semconv.SchemaURL))
	var errs [4]error
	t.tokens, errs[0] = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."), metric.WithExplicitBucketBoundaries(tokenBuckets...))
	t.opDuration, errs[1] = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."), metric.WithExplicitBucketBoundaries(durationBuckets...))
	t.pluginDuration, errs[2] = m.Float64Histogram(MetricPluginDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of a call of a provider (system prompt, compaction, token meter)."),
		metric.WithExplicitBucketBoundaries(pluginBuckets...))
	t.pluginFailures, errs[3] = m.Int64Counter(MetricPluginFailures, metric.WithUnit("{call}"),
		metric.WithDescription("Provider calls that failed."))
	if errors.Join(errs[:]...) != nil {
		// A meter provider refusing an instrument returns a no-op one along
		// with the error; a nil one is replaced the same way.
		nm := metricnoop.Meter{}
		if t.tokens == nil {
			t.tokens, _ = nm.Int64Histogram("")
		}
		if t.opDuration == nil {
			t.opDuration, _ = nm.Float64Histogram("")
		}
		if t.pluginDuration == nil {
			t.pluginDuration, _ = nm.Float64Histogram("")
		}
		if t.pluginFailures == nil {
			t.pluginFailures, _ = nm.Int64Counter("")
		}
	}
	return t
}

// setParent makes span the parent of the spans of events committed from
// now on (the meter's observe calls).
func (t *telemetry) setParent(span trace.Span) {
	ctx := trace.ContextWithSpanContext(context.Background(), span.SpanContext())
	t.parent.Store(&ctx)
}

// tracedTurn runs one turn under its invoke_agent span.
func (a *Agent) tracedTurn(ctx context.Context) (*TurnResult, error) {
	t := a.tel
	if t == nil {
		return a.turn(ctx)
	}
	route := a.Route()
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent, t.conv,
		semconv.GenAIProviderNameKey.String(route.Provider),
		semconv.GenAIRequestModel(route.Model),
		AttrTurn.Int64(a.s.log.LastTurn() + 1),
	}
	if t.agent != "" {
		attrs = append(attrs, semconv.GenAIAgentName(t.agent))
	}
	ctx, span := t.tracer.Start(ctx, t.turnName, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	t.setParent(span)
	t.turnIn, t.turnOut, t.turnUsageSeen = 0, 0, false
	res, err := a.turn(ctx)
	t.parent.Store(nil)
	if t.turnUsageSeen {
		span.SetAttributes(semconv.GenAIUsageInputTokens(int(t.turnIn)), semconv.GenAIUsageOutputTokens(int(t.turnOut)))
	}
	switch {
	case err != nil:
		span.SetAttributes(semconv.ErrorTypeOther)
		span.SetStatus(codes.Error, err.Error())
	case res != nil:
		span.SetAttributes(AttrTurn.Int64(res.Turn), AttrTurnSteps.Int(res.Steps), AttrTurnEnd.String(res.Reason.Kind))
		if res.Reason.Kind == surface.EndError {
			code := "_OTHER"
			if res.Reason.Error != nil && res.Reason.Error.Code != "" {
				code = res.Reason.Error.Code
			}
			span.SetAttributes(semconv.ErrorTypeKey.String(code))
			span.SetStatus(codes.Error, code)
		}
	}
	span.End()
	return res, err
}

// tracedStep runs one step under its weir.step span.
func (a *Agent) tracedStep(ctx context.Context, turn, step int64, claimed []*surface.Message) (stepOutcome, error) {
	t := a.tel
	if t == nil {
		return a.step(ctx, turn, step, claimed)
	}
	turnSpan := trace.SpanFromContext(ctx)
	ctx, span := t.tracer.Start(ctx, "weir.step", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(t.conv, AttrTurn.Int64(turn), AttrStep.Int64(step)))
	t.setParent(span)
	out, err := a.step(ctx, turn, step, claimed)
	switch {
	case err != nil:
		span.SetAttributes(semconv.ErrorTypeOther)
		span.SetStatus(codes.Error, err.Error())
	case out.end != nil:
		span.SetAttributes(AttrStepEnd.String(out.end.Kind))
	case out.continues:
		span.SetAttributes(AttrStepEnd.String("tools"))
	default:
		span.SetAttributes(AttrStepEnd.String("answer"))
	}
	span.End()
	t.setParent(turnSpan)
	return out, err
}

// chatObs is an open chat span and its start.
type chatObs struct {
	span  trace.Span
	start time.Time
}

// startChat opens the chat span of one model attempt of a step.
func (t *telemetry) startChat(ctx context.Context, cfg surface.CallConfig, at attemptRef) (context.Context, chatObs) {
	if t == nil {
		return ctx, chatObs{}
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat, t.conv,
		semconv.GenAIProviderNameKey.String(cfg.Provider),
		semconv.GenAIRequestModel(cfg.Model),
		AttrChatPurpose.String("step"),
		AttrTurn.Int64(at.turn), AttrStep.Int64(at.step), AttrAttempt.Int(at.attempt),
	}
	attrs = append(attrs, t.server...)
	if cfg.MaxTokens != nil {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(int(*cfg.MaxTokens)))
	}
	if cfg.Temperature != nil {
		attrs = append(attrs, semconv.GenAIRequestTemperature(*cfg.Temperature))
	}
	if len(cfg.Stop) > 0 {
		attrs = append(attrs, semconv.GenAIRequestStopSequences(cfg.Stop...))
	}
	start := time.Now()
	ctx, span := t.tracer.Start(ctx, "chat "+cfg.Model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	return ctx, chatObs{span: span, start: start}
}

// endChat closes an attempt's chat span with what the model returned.
func (t *telemetry) endChat(o chatObs, cfg surface.CallConfig, r *llm.Result, err error) {
	if t == nil {
		return
	}
	in, out, ok := t.finishChat(o, cfg.Provider, cfg.Model, r, err)
	if ok {
		t.turnIn += in
		t.turnOut += out
		t.turnUsageSeen = true
	}
}

// finishChat ends a chat span (a step's attempt or a summarize call) and
// records its metrics; it returns the usage when the model reported one.
func (t *telemetry) finishChat(o chatObs, provider, model string, r *llm.Result, err error) (in, out int64, ok bool) {
	end := time.Now()
	span := o.span
	common := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(provider), semconv.GenAIRequestModel(model)}
	if r != nil && r.FinishReason != "" {
		span.SetAttributes(semconv.GenAIResponseFinishReasons(finishReason(r.FinishReason)))
	}
	if r != nil && len(r.Stream) > 0 {
		id, m := llm.ResponseOf(r.Stream)
		if id != "" {
			span.SetAttributes(semconv.GenAIResponseID(id))
		}
		if m != "" {
			span.SetAttributes(semconv.GenAIResponseModel(m))
		}
	}
	if r != nil && r.Usage != nil {
		u := r.Usage
		in, out, ok = u.Input+u.CacheRead+u.CacheWrite, u.Output, true
		span.SetAttributes(semconv.GenAIUsageInputTokens(int(in)), semconv.GenAIUsageOutputTokens(int(out)))
		if u.CacheRead > 0 {
			span.SetAttributes(semconv.GenAIUsageCacheReadInputTokens(int(u.CacheRead)))
		}
		if u.CacheWrite > 0 {
			span.SetAttributes(semconv.GenAIUsageCacheCreationInputTokens(int(u.CacheWrite)))
		}
		if u.Reasoning > 0 {
			span.SetAttributes(semconv.GenAIUsageReasoningOutputTokens(int(u.Reasoning)))
		}
		ctx := context.Background()
		t.tokens.Record(ctx, in, metric.WithAttributes(append(common, semconv.GenAITokenTypeInput)...))
		t.tokens.Record(ctx, out, metric.WithAttributes(append(common, semconv.GenAITokenTypeOutput)...))
	}
	if err != nil {
		code := errorCode(err)
		if code == "" {
			code = "_OTHER"
		}
		et := semconv.ErrorTypeKey.String(code)
		span.SetAttributes(et)
		// The code only: a provider's message may quote the conversation.
		span.SetStatus(codes.Error, code)
		common = append(common, et)
	}
	t.opDuration.Record(context.Background(), end.Sub(o.start).Seconds(), metric.WithAttributes(common...))
	span.End(trace.WithTimestamp(end))
	return in, out, ok
}

// finishReason names a finish reason the way the GenAI conventions'
// examples (and most providers) do.
func finishReason(f llm.FinishReason) string {
	switch f {
	case llm.FinishMaxTokens:
		return "length"
	case llm.FinishToolCalls:
		return "tool_calls"
	case llm.FinishContentFilter:
		return "content_filter"
	}
	return string(f)
}

// summarize runs a compaction's summarize call under a chat span.
func (t *telemetry) summarize(ctx context.Context, s Summarizer, req SummaryRequest) (*SummaryResult, error) {
	if t == nil {
		return s.Summarize(ctx, req)
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat, t.conv,
		semconv.GenAIProviderNameKey.String(req.Provider),
		semconv.GenAIRequestModel(req.Model),
		AttrChatPurpose.String("summarize"),
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(int(req.MaxTokens)))
	}
	start := time.Now()
	ctx, span := t.tracer.Start(ctx, "chat "+req.Model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	res, err := s.Summarize(ctx, req)
	var r *llm.Result
	if res != nil {
		r = &llm.Result{Usage: res.Usage, FinishReason: llm.FinishReason(res.FinishReason)}
		if res.Model != "" && res.Model != req.Model {
			span.SetAttributes(semconv.GenAIResponseModel(res.Model))
		}
	}
	t.finishChat(chatObs{span: span, start: start}, req.Provider, req.Model, r, err)
	return res, err
}

// callTool runs one call of the step's tools (or answers TOOL_NOT_FOUND)
// under its execute_tool span.
func (a *Agent) callTool(ctx context.Context, c surface.Block) ([]surface.Block, *surface.ToolError) {
	t := a.tel
	if t == nil {
		return a.dispatchTool(ctx, c)
	}
	ctx, span := t.tracer.Start(ctx, "execute_tool "+c.Name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(semconv.GenAIOperationNameExecuteTool, t.conv,
			semconv.GenAIToolName(c.Name), semconv.GenAIToolCallID(c.ID), semconv.GenAIToolTypeKey.String("function")))
	out, terr := a.dispatchTool(ctx, c)
	if terr != nil {
		span.SetAttributes(semconv.ErrorTypeKey.String(terr.Code))
		// The code only: the reason may quote the call's arguments.
		span.SetStatus(codes.Error, terr.Code)
	}
	span.End()
	return out, terr
}

// pluginKey names one provider operation: what the telemetry of its
// calls has in common.
type pluginKey struct{ kind, op, plugin string }

// pluginCall is what the calls of one provider operation share, made once:
// the span's name and start options, the metric attributes.
type pluginCall struct {
	pluginKey
	name  string
	start []trace.SpanStartOption
	ok    metric.RecordOption // duration of a call that succeeded
	attrs []attribute.KeyValue
}

// pluginCall returns the shared telemetry of a provider operation.
func (t *telemetry) pluginCall(kind, op, plugin string) *pluginCall {
	k := pluginKey{kind, op, plugin}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.plugins[k]; ok {
		return c
	}
	attrs := []attribute.KeyValue{AttrPluginName.String(plugin), AttrPluginKind.String(kind), AttrPluginOperation.String(op)}
	c := &pluginCall{pluginKey: k, name: op + " " + plugin, attrs: attrs,
		start: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(append([]attribute.KeyValue{t.conv}, attrs...)...)},
		ok: metric.WithAttributeSet(attribute.NewSet(append(slices.Clip(attrs), outcomeOK...)...)),
	}
	if t.plugins == nil {
		t.plugins = map[pluginKey]*pluginCall{}
	}
	t.plugins[k] = c
	return c
}

// pluginObs is an open provider-call span.
type pluginObs struct {
	call  *pluginCall
	span  trace.Span
	start time.Time
}

// startPlugin opens the span of one call of a provider: kind is prompt,
// compaction or meter; op the call (render, compact, measure, observe).
func (t *telemetry) startPlugin(ctx context.Context, kind, op, plugin string) (context.Context, pluginObs) {
	c := t.pluginCall(kind, op, plugin)
	start := time.Now()
	ctx, span := t.tracer.Start(ctx, c.name, c.start...)
	return ctx, pluginObs{call: c, span: span, start: start}
}

// endPlugin closes a provider-call span and records its duration (and
// failure).
func (t *telemetry) endPlugin(o pluginObs, err error) {
	d := time.Since(o.start).Seconds()
	if err == nil {
		o.span.SetAttributes(outcomeOK...)
		t.pluginDuration.Record(context.Background(), d, o.call.ok)
		o.span.End()
		return
	}
	et := semconv.ErrorTypeKey.String(pluginErrorType(err))
	o.span.SetAttributes(outcomeError[0], et)
	o.span.SetStatus(codes.Error, err.Error())
	attrs := append(slices.Clip(o.call.attrs), et)
	t.pluginFailures.Add(context.Background(), 1, metric.WithAttributes(attrs...))
	t.pluginDuration.Record(context.Background(), d, metric.WithAttributes(append(attrs, outcomeError[0])...))
	o.span.End()
}

// Attributes set as they are (a slice made once costs no allocation).
var (
	outcomeOK    = []attribute.KeyValue{AttrPluginOutcome.String("ok")}
	outcomeError = []attribute.KeyValue{AttrPluginOutcome.String("error")}
	oneEvent     = []attribute.KeyValue{AttrMeterEvents.Int(1)}
)

// pluginErrorType is the low-cardinality error.type of a provider failure.
func pluginErrorType(err error) string {
	switch {
	case errors.Is(err, ErrBudget):
		return "budget"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, ErrBadMeasurement):
		return "bad_measurement"
	}
	return "_OTHER"
}

// render renders the system prompt under a provider-call span.
func (t *telemetry) render(ctx context.Context, p SystemPromptProvider, asm *Assembly) (string, error) {
	if t == nil {
		return p.Render(ctx, asm)
	}
	ctx, o := t.startPlugin(ctx, pluginKindPrompt, "render", p.ID())
	s, err := p.Render(ctx, asm)
	t.endPlugin(o, err)
	return s, err
}

// compact asks a compaction provider for its proposals under a
// provider-call span.
func (t *telemetry) compact(ctx context.Context, c CompactionProvider, v *View, req CompactionRequest) ([]surface.Proposal, error) {
	if t == nil {
		return c.Compact(ctx, v, req)
	}
	ctx, o := t.startPlugin(ctx, pluginKindCompaction, "compact", c.ID())
	o.span.SetAttributes(AttrCompactionReason.String(string(req.Reason)))
	ps, err := c.Compact(ctx, v, req)
	t.endPlugin(o, err)
	return ps, err
}

// measure asks the meter for a measurement under a provider-call span.
func (t *telemetry) measure(ctx context.Context, m Meter, header *surface.Header) (*Measurement, error) {
	if t == nil {
		return m.Measure(ctx, header)
	}
	ctx, o := t.startPlugin(ctx, pluginKindMeter, "measure", m.ID())
	r, err := m.Measure(ctx, header)
	t.endPlugin(o, err)
	return r, err
}

// measureTotal is measure for a TotalMeter's total.
func (t *telemetry) measureTotal(ctx context.Context, m Meter, tm TotalMeter) (int64, error) {
	if t == nil {
		return tm.MeasureTotal(ctx)
	}
	ctx, o := t.startPlugin(ctx, pluginKindMeter, "measure_total", m.ID())
	n, err := tm.MeasureTotal(ctx)
	t.endPlugin(o, err)
	return n, err
}

// observe folds committed events into the meter under a provider-call
// span, a child of the open step's (or turn's) span.
func (t *telemetry) observe(m Meter, events []surface.Event) error {
	if t == nil {
		return m.Observe(events)
	}
	ctx := context.Background()
	if p := t.parent.Load(); p != nil {
		ctx = *p
	}
	_, o := t.startPlugin(ctx, pluginKindMeter, "observe", m.ID())
	if len(events) == 1 {
		o.span.SetAttributes(oneEvent...)
	} else {
		o.span.SetAttributes(AttrMeterEvents.Int(len(events)))
	}
	err := m.Observe(events)
	t.endPlugin(o, err)
	return err
}

// compactWith runs one compaction under its weir.compaction span.
func (a *Agent) compactWith(ctx context.Context, c CompactionProvider, req CompactionRequest) error {
	t := a.tel
	if t == nil {
		return a.runCompaction(ctx, c, req)
	}
	ctx, span := t.tracer.Start(ctx, "weir.compaction", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(t.conv, AttrPluginName.String(c.ID()), AttrCompactionReason.String(string(req.Reason))))
	before := a.s.log.ReplaceGeneration()
	err := a.runCompaction(ctx, c, req)
	outcome := "nothing"
	switch {
	case err != nil:
		outcome = "failed"
		span.SetAttributes(semconv.ErrorTypeKey.String(pluginErrorType(err)))
		span.SetStatus(codes.Error, err.Error())
	case a.s.log.ReplaceGeneration() != before:
		outcome = "compacted"
	}
	span.SetAttributes(AttrCompactionResult.String(outcome))
	span.End()
	return err
}
