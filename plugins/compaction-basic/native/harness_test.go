package native

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/plugins/compaction-basic/compact"
	"github.com/weirhost/weir/surface"
)

// model is an in-process llm.Model: each call plays the next scripted
// reply (default: "ok"), and every request is recorded.
type model struct {
	replies []func(ctx context.Context, req *llm.Request) (*llm.Result, error)
	reqs    []*llm.Request
}

func (m *model) Stream(ctx context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Result, error) {
	m.reqs = append(m.reqs, req)
	if len(m.replies) == 0 {
		return result("ok"), nil
	}
	next := m.replies[0]
	m.replies = m.replies[1:]
	return next(ctx, req)
}

func (m *model) then(fns ...func(ctx context.Context, req *llm.Request) (*llm.Result, error)) {
	m.replies = append(m.replies, fns...)
}

func result(text string) *llm.Result {
	return &llm.Result{Content: []surface.Block{surface.Text(text)}, FinishReason: llm.FinishStop}
}

func say(text string) func(context.Context, *llm.Request) (*llm.Result, error) {
	return func(context.Context, *llm.Request) (*llm.Result, error) { return result(text), nil }
}

func failWith(code string) func(context.Context, *llm.Request) (*llm.Result, error) {
	return func(context.Context, *llm.Request) (*llm.Result, error) {
		return &llm.Result{}, &llm.Error{Code: code, What: "scripted " + code}
	}
}

func callTool(id string) func(context.Context, *llm.Request) (*llm.Result, error) {
	return func(context.Context, *llm.Request) (*llm.Result, error) {
		return &llm.Result{Content: []surface.Block{surface.ToolCall(id, "echo", `{"say":"`+strings.Repeat("x", 400)+`"}`)},
			FinishReason: llm.FinishToolCalls}, nil
	}
}

// summarizer is a scripted host.Summarizer (default: a short checkpoint).
type summarizer struct {
	reqs  []host.SummaryRequest
	reply func(req host.SummaryRequest) (*host.SummaryResult, error)
}

const shortSummary = "## Primary Request and Intent\n- keep going"

func (s *summarizer) Summarize(_ context.Context, req host.SummaryRequest) (*host.SummaryResult, error) {
	s.reqs = append(s.reqs, req)
	if s.reply != nil {
		return s.reply(req)
	}
	return &host.SummaryResult{Content: []surface.Block{surface.Text(shortSummary)}, FinishReason: "stop"}, nil
}

// store records what the session made durable.
type store struct {
	mu     sync.Mutex
	events []surface.Event
}

func (s *store) Append(evs []surface.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, evs...)
	return nil
}

type prompt string

func (p prompt) ID() string { return "system-prompt" }
func (p prompt) Render(context.Context, *host.Assembly) (string, error) {
	return string(p), nil
}

var echo = &host.FuncTool{ToolName: "echo", Description: "echo the arguments",
	Fn: func(_ context.Context, args string) (string, error) { return "echo " + args, nil }}

type harness struct {
	t     *testing.T
	s     *host.Session
	a     *host.Agent
	model *model
	sum   *summarizer
	store *store
	prov  *Provider
	logs  *bytes.Buffer
	cfg   host.Config
}

// newHarness runs compaction-basic (config as JSON) in a real agent loop
// over an in-memory log with a recording store. The route has a context
// window of 1000 tokens and no completion cap; there is no token meter, so
// the heuristic measures.
func newHarness(t *testing.T, sys, config string, mod func(h *harness)) *harness {
	h := &harness{t: t, model: &model{}, sum: &summarizer{}, store: &store{}, logs: &bytes.Buffer{}}
	logger := hclog.New(&hclog.LoggerOptions{Output: h.logs, Level: hclog.Warn})
	var err error
	h.prov, err = New([]byte(config), WithLogger(logger))
	require.NoError(t, err)
	h.s = host.NewSession("sess", surface.New(surface.WithClock(func() int64 { return 1000 })), h.store, host.WithIDs(host.CounterIDs("m")))
	h.cfg = host.Config{Route: host.Route{Provider: "test", Model: "m1", ContextWindow: 1000}, Model: h.model, Prompt: prompt(sys),
		Compactors: []host.CompactionProvider{h.prov}, Summarizer: h.sum, Logger: logger}
	if mod != nil {
		mod(h)
	}
	h.a, err = host.NewAgent(h.s, h.cfg)
	require.NoError(t, err)
	return h
}

func (h *harness) turn(text string) *host.TurnResult {
	res, err := h.a.Run(context.Background(), h.a.UserMessage(text))
	require.NoError(h.t, err)
	return res
}

func (h *harness) log() *surface.Log { return h.s.Log() }

func (h *harness) events(typ string) []surface.Event {
	var out []surface.Event
	for _, e := range h.log().Events() {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func (h *harness) compactionEvents() []surface.Event {
	var out []surface.Event
	for _, e := range h.log().Events() {
		if strings.HasPrefix(e.Type, "compaction/") || (e.Type == surface.TypeUserMessage && e.Op.Kind == surface.OpReplace) {
			out = append(out, e)
		}
	}
	return out
}

func typesOf(evs []surface.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

func data(t *testing.T, e surface.Event) map[string]any {
	var m map[string]any
	require.NoError(t, json.Unmarshal(e.Data, &m))
	return m
}

func words(n int) string { return strings.Repeat("word ", n) }

// regionCompactor compacts an explicit span through Provider.CompactRegion
// the next time the host asks (any reason), once.
type regionCompactor struct {
	p     *Provider
	route host.Route
	span  func(v *host.View) compact.Span
	edit  func(ps []surface.Proposal) []surface.Proposal
	err   error
	calls int
}

// ID is the wrapped provider's: the checkpoints it passes on name it.
func (r *regionCompactor) ID() string { return r.p.ID() }

func (r *regionCompactor) Compact(ctx context.Context, v *host.View, req host.CompactionRequest) ([]surface.Proposal, error) {
	if r.span == nil {
		return nil, nil
	}
	span := r.span(v)
	r.span = nil
	r.calls++
	ps, err := r.p.CompactRegion(ctx, v, r.route, span)
	if err == nil && r.edit != nil {
		ps = r.edit(ps)
	}
	r.err = err
	return ps, err
}

// messagesJSON is the wire form of derived messages, for comparisons.
func messagesJSON(t *testing.T, ms []*surface.Message) string {
	b, err := json.Marshal(ms)
	require.NoError(t, err)
	return string(b)
}
