package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/waterfall"
)

// Set is one named set of plugins to replay the recording through.
type Set struct {
	Name string
	// Providers makes the set's compaction providers and token meter for
	// the replay's session (an in-memory session; nothing is written).
	Providers func(s *host.Session) ([]host.CompactionProvider, host.Meter, error)
	// Baseline marks the session's own configuration: each request is
	// compared with the recorded one byte for byte.
	Baseline bool
	// ContextWindow replaces the recorded context window (0: recorded).
	ContextWindow int64
}

// Options configures a replay.
type Options struct {
	// Counter counts the report's tokens; nil picks the route's tokenizer
	// (RouteCounter). It changes the report only: the plugins and the
	// UsageModel count with the route's tokenizer whatever it is.
	Counter tokenizer.Counter
	// Summaries configures the summarize calls new compactions need.
	Summaries SummaryOptions
	// Probes are texts whose visibility the report follows.
	Probes []string
	// Prices is the price table of the cost estimate (zero: DeepSeek's).
	Prices Prices
	// Progress is called after each request with the requests done and
	// the total.
	Progress func(done, total int)
	// KeepEvents keeps the replayed log in the result.
	KeepEvents bool
}

// SummaryOptions configures summarization during a replay.
type SummaryOptions struct {
	// Model, when set, answers summarize calls the recording cannot, up
	// to MaxCalls of them; the rest are extractive. nil: offline only.
	Model llm.Model
	// MaxCalls caps the calls to Model per replay (default 10).
	MaxCalls int
	// MaxChars caps an extractive summary (default 2000).
	MaxChars int
}

// RouteCounter is the tokenizer of a route: DeepSeek V3's for provider
// deepseek, the heuristic estimate for any other.
func RouteCounter(r host.Route) tokenizer.Counter {
	if r.Provider == llm.ProviderDeepSeek {
		return tokenizer.DeepSeekV3()
	}
	return tokenizer.Heuristic
}

// driver plays the recording to one agent.
type driver struct {
	rec  *Recording
	set  Set
	opts Options
	s    *host.Session
	a    *host.Agent
	res  *Result

	reply, tool, step int // next recorded reply, tool result, step prompt
	turnEnd           int // the current turn's EndReply
	turn              int64

	counter  tokenizer.Counter
	bpe      *prefixEncoder // nil when the report's counter is not a BPE tokenizer
	usage    *UsageModel    // nil for the baseline: its usage is the recorded one
	render   renderer
	prev     requestText
	prevIDs  []int
	prevGen  uint64
	cmpSince int // compactions since the previous request
	lastCmp  int // request index of the last counted prune pass
	plugin   pluginClock
	offered  []jsontext.Value // the schemas of the tools the agent offers
	toolsSet bool             // offered is set
	visible  []int
	// units is the UTF-16 length of prev.text when it is valid UTF-8
	// (unitsOK), for the heuristic counter.
	units   int
	unitsOK bool
}

// Replay replays rec through set and reports what it would have sent. A
// step the set's loop cannot follow (it makes a request the recording has
// no reply for, or a turn ends otherwise than recorded) is reported in
// Result.Notes and on the request, and the replay goes on with the next
// turn. The error is non-nil only when the replay could not start.
// Replay only reads rec: replays of one Recording may run at once, each
// with its own set (whose plugins are its own).
func Replay(ctx context.Context, rec *Recording, set Set, opts Options) (*Result, error) {
	d := &driver{rec: rec, set: set, opts: opts, lastCmp: -1}
	d.counter = opts.Counter
	if d.counter == nil {
		d.counter = RouteCounter(rec.Route)
	}
	if bpe, ok := d.counter.(*tokenizer.Tokenizer); ok {
		d.bpe = newPrefixEncoder(bpe)
	}
	if !set.Baseline {
		d.usage = &UsageModel{Counter: RouteCounter(rec.Route)}
	}
	route := rec.Route
	if set.ContextWindow > 0 {
		route.ContextWindow = set.ContextWindow
	}
	d.res = &Result{Set: set.Name, Baseline: set.Baseline, Tokenizer: d.counter.Name(), Window: route.ContextWindow,
		Requests: []RequestStat{}, Notes: []string{}}
	d.visible = make([]int, len(opts.Probes))
	start := time.UnixMilli(0).UTC()
	l := surface.New(surface.WithClock(func() int64 { return start.UnixMilli() }))
	d.s = host.NewSession(rec.SessionID, l, nil, host.WithIDs(host.CounterIDs("replay")))
	var compactors []host.CompactionProvider
	var meter host.Meter
	if set.Providers != nil {
		var err error
		if compactors, meter, err = set.Providers(d.s); err != nil {
			return nil, fmt.Errorf("eval: set %q: %w", set.Name, err)
		}
	}
	for i, c := range compactors {
		compactors[i] = &timedCompactor{c: c, d: &d.plugin}
	}
	if meter != nil {
		meter = &timedMeter{m: meter, d: &d.plugin}
	}
	sum := &summarizer{rec: rec, opts: opts.Summaries, counts: &d.res.Totals.Summaries}
	if sum.opts.MaxCalls <= 0 {
		sum.opts.MaxCalls = 10
	}
	if sum.opts.MaxChars <= 0 {
		sum.opts.MaxChars = 2000
	}
	a, err := host.NewAgent(d.s, host.Config{
		Route:              route,
		Model:              (*replayModel)(d),
		Prompt:             &replayPrompt{d: d, id: rec.PromptPlugin},
		Compactors:         compactors,
		Meter:              meter,
		Summarizer:         sum,
		MaxSteps:           1 << 20,
		MaxRetryWait:       time.Nanosecond,
		ToolTimeout:        -1,
		MaxOverflowRetries: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("eval: set %q: %w", set.Name, err)
	}
	d.a = a
	_, err = a.RequestChain.Add("eval:recorded-config", func(_ context.Context, c surface.CallConfig) (surface.CallConfig, error) {
		if d.reply < len(rec.Replies) {
			return rec.Replies[d.reply].Config, nil
		}
		return c, nil
	}, waterfall.Priority(1<<20))
	if err != nil {
		return nil, err
	}
	l.Observe(d.observe)
	for i := range rec.Turns {
		t := &rec.Turns[i]
		if t.CompactBefore {
			d.compactNow(ctx, fmt.Sprintf("the manual compaction before turn %d", t.N))
		}
		if len(t.Messages) == 0 {
			continue
		}
		d.reply, d.tool, d.step, d.turnEnd, d.turn = t.FirstReply, t.FirstTool, t.FirstStep, t.EndReply, t.N
		if d.reply < len(rec.Replies) {
			if err := d.setTools(rec.Replies[d.reply].Tools); err != nil {
				d.note("turn %d: the recorded tools do not load: %v", t.N, err)
			}
		}
		msgs := make([]*surface.Message, len(t.Messages))
		for j, m := range t.Messages {
			c := *m
			msgs[j] = &c
		}
		tr, err := a.Run(ctx, msgs...)
		if err != nil {
			d.note("turn %d: the replay stopped: the session failed: %v", t.N, err)
			break
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		switch {
		case t.Truncated:
			d.note("turn %d ended %s (recorded: no ending, the log ends within the turn)", t.N, describe(tr.Reason))
		case tr.Reason.Kind != t.Reason.Kind:
			d.note("turn %d ended %s (recorded: %s)", t.N, describe(tr.Reason), describe(t.Reason))
		}
		if d.reply < t.EndReply {
			d.note("turn %d made %d of its %d recorded requests", t.N, d.reply-t.FirstReply, t.EndReply-t.FirstReply)
		}
	}
	if rec.CompactAfter {
		d.compactNow(ctx, "the manual compaction after the last turn")
	}
	d.finish()
	if opts.KeepEvents {
		d.res.Events = l.Events()
	}
	return d.res, nil
}

func (d *driver) compactNow(ctx context.Context, what string) {
	failures := d.res.Totals.PluginFailures
	if _, err := d.a.CompactNow(ctx); err != nil && d.res.Totals.PluginFailures == failures {
		// A provider's failure is noted with its plugin/failure record.
		d.note("%s failed: %v", what, err)
	}
}

func (d *driver) note(format string, args ...any) {
	d.res.Notes = append(d.res.Notes, fmt.Sprintf(format, args...))
}

func describe(r surface.EndReason) string {
	if r.Error != nil {
		return fmt.Sprintf("%s (%s: %s)", r.Kind, r.Error.Code, r.Error.Message)
	}
	return string(r.Kind)
}

// observe counts compactions and plugin failures as the replay commits
// them.
func (d *driver) observe(ev surface.Event) {
	switch ev.Type {
	case surface.TypeCompactionEnd:
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(ev.Data, &e) == nil && e.Error == "" {
			d.res.Totals.Compactions++
			d.cmpSince++
		}
	case surface.TypeCompactionPrune:
		if d.lastCmp != len(d.res.Requests) {
			d.lastCmp = len(d.res.Requests)
			d.res.Totals.Compactions++
			d.cmpSince++
		}
	case surface.TypePluginFailure:
		d.res.Totals.PluginFailures++
		var f host.PluginFailure
		if json.Unmarshal(ev.Data, &f) == nil {
			d.note("before request %d: plugin %q failed: %s", len(d.res.Requests)+1, f.Plugin, f.Error)
		}
	}
}

// setTools offers replay tools for recorded schemas, unless the agent
// offers those already (a turn's tools are mostly the previous turn's).
func (d *driver) setTools(schemas []jsontext.Value) error {
	if d.toolsSet && sameTools(d.offered, schemas) {
		return nil
	}
	if err := d.a.SetTools(d.tools(schemas)...); err != nil {
		return err
	}
	d.offered, d.toolsSet = schemas, true
	return nil
}

// tools makes replay tools for recorded schemas.
func (d *driver) tools(schemas []jsontext.Value) []host.Tool {
	out := make([]host.Tool, 0, len(schemas))
	for _, s := range schemas {
		var n struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(s, &n)
		out = append(out, &replayTool{d: d, name: n.Name, schema: s})
	}
	return out
}

// replayModel plays the recorded replies in request order and measures
// each request it is sent.
type replayModel driver

func (m *replayModel) Stream(ctx context.Context, req *llm.Request, on func(llm.Delta)) (*llm.Result, error) {
	d := (*driver)(m)
	n := len(d.res.Requests) + 1
	if d.reply >= d.turnEnd {
		d.measure(ctx, req, -1)
		d.res.Requests[n-1].Note = "the recording has no reply for this request (the set's loop made more requests than the recording)"
		d.note("request %d (turn %d): %s", n, d.turn, d.res.Requests[n-1].Note)
		return &llm.Result{}, &llm.Error{Code: llm.CodeBadRequest, What: "eval: the recording has no more replies in this turn"}
	}
	i := d.reply
	d.reply++
	d.measure(ctx, req, i)
	r := d.rec.Replies[i]
	for _, msg := range r.Inject {
		c := *msg
		d.a.Inject(&c)
	}
	if d.reply < d.turnEnd {
		if err := d.setTools(d.rec.Replies[d.reply].Tools); err != nil {
			d.note("request %d: the recorded tools do not load: %v", n+1, err)
		}
	}
	res := *r.Result
	res.Content = surface.CloneBlocks(r.Result.Content)
	d.modelUsage(&res)
	if r.Err != nil {
		return &res, r.Err
	}
	return &res, nil
}

// modelUsage gives a set other than the baseline the UsageModel's usage
// for its own request (the one measure just rendered), in place of the
// recorded one, when the recording has a usage for the reply (a provider
// that reports none reports none to every set).
func (d *driver) modelUsage(res *llm.Result) {
	if d.usage == nil || res.Usage == nil {
		return
	}
	var u surface.Usage
	if d.usage.Counter == d.counter {
		// The report counts as the provider does: the same figures.
		st := d.res.Requests[len(d.res.Requests)-1]
		u = surface.Usage{Input: st.InputTokens - st.CachedTokens, CacheRead: st.CachedTokens}
	} else {
		u = d.usage.price(d.prev.text, 0)
	}
	u.Output, u.Reasoning = res.Usage.Output, res.Usage.Reasoning
	res.Usage = &u
}

// replayTool answers each call with the next recorded tool result.
type replayTool struct {
	d      *driver
	name   string
	schema jsontext.Value
}

func (t *replayTool) Name() string           { return t.name }
func (t *replayTool) Schema() jsontext.Value { return t.schema }

func (t *replayTool) Run(_ context.Context, _ string) ([]surface.Block, error) {
	d := t.d
	if d.tool >= len(d.rec.ToolResults) {
		return nil, errors.New("eval: the recording has no result for this call")
	}
	r := d.rec.ToolResults[d.tool]
	d.tool++
	if r.Name != "" && r.Name != t.name {
		d.note("request %d: the recorded tool result in this position is %s's, the call is %s's", len(d.res.Requests), r.Name, t.name)
	}
	if r.IsError {
		return nil, errors.New(surface.TextOf(r.Content))
	}
	return surface.CloneBlocks(r.Content), nil
}

// replayPrompt renders the recorded system prompt of each step.
type replayPrompt struct {
	d  *driver
	id string
}

func (p *replayPrompt) ID() string { return p.id }

func (p *replayPrompt) Render(context.Context, *host.Assembly) (string, error) {
	d := p.d
	if d.step >= len(d.rec.StepPrompts) {
		if n := len(d.rec.StepPrompts); n > 0 {
			return d.rec.StepPrompts[n-1], nil
		}
		return "", nil
	}
	d.step++
	return d.rec.StepPrompts[d.step-1], nil
}

// pluginClock sums the wall time spent in a set's plugins. Calls nest (a
// compaction provider measures through the meter): only the outermost
// counts, so no time is counted twice.
type pluginClock struct {
	total time.Duration
	depth int
}

// span starts a plugin call; the returned function ends it.
func (c *pluginClock) span() func() {
	c.depth++
	if c.depth > 1 {
		return func() { c.depth-- }
	}
	start := time.Now()
	return func() {
		c.depth--
		c.total += time.Since(start)
	}
}

// timedCompactor adds a compaction provider's time to the plugin time.
type timedCompactor struct {
	c host.CompactionProvider
	d *pluginClock
}

func (t *timedCompactor) ID() string { return t.c.ID() }

func (t *timedCompactor) Compact(ctx context.Context, v *host.View, req host.CompactionRequest) ([]surface.Proposal, error) {
	defer t.d.span()()
	return t.c.Compact(ctx, v, req)
}

// timedMeter adds a meter's time to the plugin time.
type timedMeter struct {
	m host.Meter
	d *pluginClock
}

func (t *timedMeter) ID() string { return t.m.ID() }

func (t *timedMeter) Observe(events []surface.Event) error {
	defer t.d.span()()
	return t.m.Observe(events)
}

func (t *timedMeter) Measure(ctx context.Context, h *surface.Header) (*host.Measurement, error) {
	defer t.d.span()()
	return t.m.Measure(ctx, h)
}

// measure records request n (reply index i, -1 when it has none); ctx is
// the model call's, which carries the body the loop encoded.
func (d *driver) measure(ctx context.Context, req *llm.Request, i int) {
	n := len(d.res.Requests) + 1
	st := RequestStat{N: n, Turn: d.turn}
	if i >= 0 {
		st.Step = d.rec.Replies[i].Step
		st.OutputTokens = d.outputTokens(d.rec.Replies[i])
	}
	rt, err := d.render.render(req)
	// The baseline compares the body the loop encoded with the recorded
	// one in place; it copies the body only to report where they differ.
	var want, body []byte
	if i >= 0 {
		want = d.rec.Requests[i]
	}
	same := false
	if err == nil && d.set.Baseline {
		var known bool
		if same, known = host.RequestBodyEqual(ctx, want); !known {
			if body, err = llm.EncodeRequest(req); err == nil {
				same = bytes.Equal(body, want)
			}
		} else if !same {
			body = host.RequestBody(ctx)
		}
	}
	if err != nil {
		st.Note = fmt.Sprintf("the request does not encode: %v", err)
		d.note("request %d (turn %d): %s", n, d.turn, st.Note)
	}
	if d.bpe != nil {
		ids := d.bpe.encode(rt.text)
		st.InputTokens = int64(len(ids))
		st.CachedTokens = int64(commonPrefix(d.prevIDs, ids))
		d.prevIDs = ids
	} else if d.counter == tokenizer.Heuristic {
		st.InputTokens, st.CachedTokens = d.heuristic(rt.text)
	} else {
		st.InputTokens = int64(d.counter.Count(rt.text))
		if d.prev.ok {
			st.CachedTokens = int64(d.counter.Count(rt.text[:commonStringPrefix(d.prev.text, rt.text)]))
		}
	}
	gen := d.s.Log().ReplaceGeneration()
	if d.prev.ok && !strings.HasPrefix(rt.text, d.prev.base) {
		switch {
		case rt.system != d.prev.system:
			st.Break = BreakPrompt
		case rt.tools != d.prev.tools:
			st.Break = BreakTools
		case d.cmpSince > 0 || gen != d.prevGen:
			st.Break = BreakCompaction
		default:
			st.Break = BreakOther
		}
	}
	st.PromptChange = d.prev.ok && rt.system != d.prev.system
	st.Compactions = d.cmpSince
	d.cmpSince, d.prevGen, d.prev = 0, gen, rt
	if d.res.Window > 0 && st.InputTokens > d.res.Window {
		st.OverWindow = true
	}
	for p, probe := range d.opts.Probes {
		if strings.Contains(rt.text, probe) {
			d.visible[p] = n
		}
	}
	if d.set.Baseline && i >= 0 {
		st.Reproduced = &same
		if !same {
			at := commonPrefix(want, body)
			st.Note = fmt.Sprintf("differs from the recorded request from byte %d", at)
			d.note("request %d (turn %d): %s", n, d.turn, st.Note)
		}
	}
	d.res.Requests = append(d.res.Requests, st)
	if d.opts.Progress != nil {
		d.opts.Progress(n, len(d.rec.Replies))
	}
}

func (d *driver) outputTokens(r Reply) int64 {
	if r.Result != nil && r.Result.Usage != nil {
		return r.Result.Usage.Output
	}
	if r.Result == nil {
		return 0
	}
	var b strings.Builder
	for _, bl := range r.Result.Content {
		b.WriteString(bl.Text)
		b.WriteString(bl.Name)
		b.WriteString(bl.Arguments)
	}
	return int64(d.counter.Count(b.String()))
}

// heuristic counts text with tokenizer.Heuristic, ceil(UTF-16 length / 4),
// and its prefix shared with the previous request's text, as
// Heuristic.Count of each would. Of valid UTF-8 split where a character
// starts, the UTF-16 length is the sum of the parts', so the shared prefix's
// is the previous text's less that of its own rest, and only the two rests
// are read; otherwise both are counted whole.
func (d *driver) heuristic(text string) (input, cached int64) {
	quarter := func(units int) int64 { return int64((units + 3) / 4) }
	if !d.prev.ok {
		d.units, d.unitsOK = tokenizer.UTF16Len(text), utf8.ValidString(text)
		return quarter(d.units), 0
	}
	p := commonStringPrefix(d.prev.text, text)
	// A valid rest starts a character, and so does the prefix's end.
	if d.unitsOK && utf8.ValidString(d.prev.text[p:]) && utf8.ValidString(text[p:]) {
		shared := d.units - tokenizer.UTF16Len(d.prev.text[p:])
		d.units = shared + tokenizer.UTF16Len(text[p:])
		return quarter(d.units), quarter(shared)
	}
	d.units, d.unitsOK = tokenizer.UTF16Len(text), utf8.ValidString(text)
	return quarter(d.units), int64(tokenizer.HeuristicCount(text[:p]))
}

func commonPrefix[T comparable](a, b []T) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func commonStringPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i+256 <= n && a[i:i+256] == b[i:i+256] {
		i += 256
	}
	for i < n && a[i] == b[i] {
		i++
	}
	// Do not cut a UTF-8 sequence.
	for i > 0 && i < len(b) && b[i]&0xC0 == 0x80 {
		i--
	}
	return i
}
