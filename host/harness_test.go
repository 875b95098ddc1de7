package host

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// funcModel is an in-process model for loop tests: each call plays the next
// reply function, and every request is recorded with its wire bytes.
type funcModel struct {
	replies []func(req *llm.Request) (*llm.Result, error)
	reqs    []*llm.Request
	bodies  [][]byte
}

func (m *funcModel) Stream(ctx context.Context, req *llm.Request, on func(llm.Delta)) (*llm.Result, error) {
	body, err := llm.EncodeRequest(req)
	if err != nil {
		return nil, err
	}
	m.reqs = append(m.reqs, req)
	m.bodies = append(m.bodies, body)
	if len(m.replies) == 0 {
		return text("ok"), nil
	}
	next := m.replies[0]
	m.replies = m.replies[1:]
	return next(req)
}

func (m *funcModel) then(fns ...func(req *llm.Request) (*llm.Result, error)) *funcModel {
	m.replies = append(m.replies, fns...)
	return m
}

func text(s string) *llm.Result {
	return &llm.Result{Content: []surface.Block{surface.Text(s)}, FinishReason: llm.FinishStop,
		Usage: &surface.Usage{Input: 100, Output: 5}}
}

func reply(s string) func(*llm.Request) (*llm.Result, error) {
	return func(*llm.Request) (*llm.Result, error) { return text(s), nil }
}

func callTool(id, name, args string) func(*llm.Request) (*llm.Result, error) {
	return func(*llm.Request) (*llm.Result, error) {
		return &llm.Result{Content: []surface.Block{surface.ToolCall(id, name, args)}, FinishReason: llm.FinishToolCalls}, nil
	}
}

func fail(code string) func(*llm.Request) (*llm.Result, error) {
	return func(*llm.Request) (*llm.Result, error) {
		return &llm.Result{}, &llm.Error{Code: code, What: "scripted failure " + code}
	}
}

// textPrompt renders a settable text.
type textPrompt struct{ text string }

func (p *textPrompt) ID() string { return "system-prompt" }
func (p *textPrompt) Render(context.Context, *Assembly) (string, error) {
	return p.text, nil
}

type harness struct {
	t      *testing.T
	s      *Session
	a      *Agent
	model  *funcModel
	prompt *textPrompt
	cfg    Config
}

func newHarness(t *testing.T, prompt string, mod func(*Config)) *harness {
	h := &harness{t: t, model: &funcModel{}, prompt: &textPrompt{text: prompt}}
	l := surface.New(surface.WithClock(func() int64 { return 1000 }))
	h.s = NewSession("test-session", l, nil, WithIDs(CounterIDs("m")))
	h.cfg = Config{Route: Route{Provider: "test", Model: "m1", ContextWindow: 1000}, Model: h.model, Prompt: h.prompt}
	if mod != nil {
		mod(&h.cfg)
	}
	a, err := NewAgent(h.s, h.cfg)
	require.NoError(t, err)
	h.a = a
	return h
}

// reattach starts a new loop instance over the same session.
func (h *harness) reattach() {
	a, err := NewAgent(h.s, h.cfg)
	require.NoError(h.t, err)
	h.a = a
}

func (h *harness) turn(text string) *TurnResult {
	res, err := h.a.Run(context.Background(), h.a.UserMessage(text))
	require.NoError(h.t, err)
	return res
}

func (h *harness) events(typ string) []surface.Event {
	var out []surface.Event
	for _, e := range h.s.Log().Events() {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func (h *harness) headers() []string {
	var out []string
	for _, e := range h.events(surface.TypeRequestHeader) {
		var he surface.HeaderEvent
		require.NoError(h.t, json.Unmarshal(e.Data, &he))
		r := he.Reason
		if he.StartsSeries {
			r += "+startsSeries"
		}
		out = append(out, r)
	}
	return out
}

func msgRoles(ms []*surface.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Role)
	}
	return out
}

func systemCount(ms []*surface.Message) int {
	return len(slices.DeleteFunc(slices.Clone(ms), func(m *surface.Message) bool { return m.Role != "system" }))
}

// checkReconstruction rebuilds every dispatched request from the log and
// compares its wire bytes with what the model received.
func (h *harness) checkReconstruction() {
	reqs, order, err := Requests(h.s.Log().Events(), h.s.ID())
	require.NoError(h.t, err)
	require.Len(h.t, order, len(h.model.bodies), "one settlement per dispatched request")
	for i, seq := range order {
		body, err := llm.EncodeRequest(reqs[seq])
		require.NoError(h.t, err)
		require.Equal(h.t, string(h.model.bodies[i]), string(body), "request %d (settled at seq %d)", i, seq)
	}
}

// checkpointCompactor is a test compaction provider: when asked, it replaces
// every node after the system head except the last one with a checkpoint.
type checkpointCompactor struct {
	when func(v *View, req CompactionRequest) bool
	// keepNone compacts every node after the head, even on pressure.
	keepNone bool
	calls    int
}

func (c *checkpointCompactor) ID() string { return "test-compactor" }

func (c *checkpointCompactor) Compact(ctx context.Context, v *View, req CompactionRequest) ([]surface.Proposal, error) {
	c.calls++
	if c.when != nil && !c.when(v, req) {
		return nil, nil
	}
	nodes := v.Nodes()
	first := 0
	if len(nodes) > 0 && nodes[0].Type == surface.TypeSystemMessage {
		first = 1
	}
	last := len(nodes) - 2
	if c.keepNone || req.Reason == CompactManual || req.Reason == CompactOverflow {
		last = len(nodes) - 1
	}
	for last >= first && !balancedAfter(nodes, last) {
		last--
	}
	if last < first {
		return nil, nil
	}
	next := v.NextSeq()
	id := fmt.Sprintf("cmp-%d", next)
	var shadowed []int64
	for _, n := range nodes[first : last+1] {
		shadowed = append(shadowed, n.Seq)
	}
	start, _ := surface.Data(map[string]any{"compactionId": id, "turn": req.Turn})
	summary, _ := surface.Data(map[string]any{"compactionId": id, "summary": "summary", "shadowedSeqs": shadowed})
	cp, _ := surface.Data(surface.Message{ID: v.NewID(), Role: "user", Source: surface.Source{Kind: "plugin", Plugin: "test-compactor"},
		Content: []surface.Block{surface.Text("<compacted-summary>summary</compacted-summary>")}})
	end, _ := surface.Data(map[string]any{"compactionId": id, "turn": req.Turn})
	return []surface.Proposal{
		{Type: surface.TypeCompactionStart, Data: start},
		{Type: surface.TypeCompactionSummary, Data: summary},
		{Type: surface.TypeUserMessage, Data: cp, Op: surface.Replace(shadowed[0], shadowed[len(shadowed)-1]),
			Sources: append([]int64{next, next + 1}, shadowed...)},
		{Type: surface.TypeCompactionEnd, Data: end},
	}, nil
}

// balancedAfter reports whether the cut after node i leaves no tool call
// without its result.
func balancedAfter(nodes []surface.NodeInfo, i int) bool {
	bal := 0
	for _, n := range nodes[:i+1] {
		bal += n.ToolCalls
		if n.Type == surface.TypeToolResult {
			bal--
		}
	}
	return bal == 0
}

// echoTool returns its arguments.
var echoTool = &FuncTool{ToolName: "echo", Description: "echo the arguments",
	Fn: func(_ context.Context, args string) (string, error) { return "echo " + args, nil }}
