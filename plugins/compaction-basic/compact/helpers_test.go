package compact

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// fakeSession is a compact.Session over a surface.Log, measured with the
// fixed heuristic unless measure is set, with a scripted summarizer.
type fakeSession struct {
	t       testing.TB
	l       *surface.Log
	measure func(s *fakeSession) (*Measurement, error)
	reply   func(req *SummaryRequest) (*SummaryResult, error)
	calls   []*SummaryRequest
}

func (s *fakeSession) Nodes() ([]Node, error) {
	infos := s.l.Surface()
	out := make([]Node, len(infos))
	for i, n := range infos {
		out[i] = Node{Seq: n.Seq, Type: n.Type, ToolCalls: n.ToolCalls}
	}
	return out, nil
}

func (s *fakeSession) Message(seq int64) (*surface.Message, error) {
	m, ok := s.l.Message(seq)
	if !ok {
		return nil, fmt.Errorf("seq %d holds no surface message", seq)
	}
	return m, nil
}

func (s *fakeSession) Header() (*surface.Header, error) { return s.l.Header(), nil }
func (s *fakeSession) NextSeq() (int64, error)          { return s.l.NextSeq(), nil }

func (s *fakeSession) Measure() (*Measurement, error) {
	if s.measure != nil {
		return s.measure(s)
	}
	return Estimate(s)
}

func (s *fakeSession) Summarize(req *SummaryRequest) (*SummaryResult, error) {
	s.calls = append(s.calls, req)
	if s.reply == nil {
		return textResult("## Primary Request and Intent\n- short"), nil
	}
	return s.reply(req)
}

func textResult(s string) *SummaryResult {
	return &SummaryResult{Content: []surface.Block{surface.Text(s)}, FinishReason: "stop"}
}

// admit appends the proposals as the host would: in one batch.
func (s *fakeSession) admit(ps []surface.Proposal) ([]surface.Event, error) {
	return s.l.AppendBatch(ps)
}

// builder writes a well-formed log: an open turn and step, messages and
// tool pairs.
type builder struct {
	t    testing.TB
	l    *surface.Log
	turn int64
	step int64
	ids  int
}

func newBuilder(t testing.TB) *builder {
	return &builder{t: t, l: surface.New(surface.WithClock(func() int64 { return 1 }))}
}

func (b *builder) add(typ string, v any, op surface.Op) int64 {
	data, err := surface.Data(v)
	require.NoError(b.t, err)
	e, err := b.l.Append(surface.Proposal{Type: typ, Data: data, Op: op})
	require.NoError(b.t, err)
	return e.Seq
}

func (b *builder) id() string { b.ids++; return fmt.Sprintf("id-%d", b.ids) }

type ref struct {
	Turn int64 `json:"turn"`
	Step int64 `json:"step,omitzero"`
}

// open starts a turn and its first step.
func (b *builder) open() *builder {
	b.turn++
	b.step = 1
	b.add(surface.TypeTurnStart, ref{Turn: b.turn}, surface.Op{})
	b.add(surface.TypeStepStart, ref{Turn: b.turn, Step: 1}, surface.Op{})
	return b
}

func (b *builder) header(provider, model string, maxTokens int64, tools ...string) {
	h := surface.Header{Config: surface.CallConfig{Provider: provider, Model: model}}
	if maxTokens > 0 {
		h.Config.MaxTokens = &maxTokens
	}
	for _, t := range tools {
		h.Tools = append(h.Tools, []byte(t))
	}
	b.add(surface.TypeRequestHeader, surface.HeaderEvent{Header: h, Reason: "initial"}, surface.Op{})
}

func (b *builder) sys(text string) int64 {
	return b.add(surface.TypeSystemMessage, surface.StepMessage{Turn: b.turn, Step: b.step,
		Message: surface.SystemMessage(b.id(), "system-prompt", text)}, surface.Append)
}

func (b *builder) user(text string) int64 {
	return b.add(surface.TypeUserMessage, surface.Message{ID: b.id(), Role: surface.RoleUser,
		Source: surface.Source{Kind: "user"}, Content: []surface.Block{surface.Text(text)}}, surface.Append)
}

func (b *builder) asst(text string, calls ...string) int64 {
	content := []surface.Block{}
	if text != "" {
		content = append(content, surface.Text(text))
	}
	for _, c := range calls {
		content = append(content, surface.ToolCall(c, "echo", `{"x":1}`))
	}
	seq := b.add(surface.TypeAssistantMessage, surface.StepMessage{Turn: b.turn, Step: b.step,
		Message: surface.Message{ID: b.id(), Role: surface.RoleAssistant, Source: surface.Source{Kind: "model", Provider: "p", Model: "m"}, Content: content},
		Stream:  []byte(`{}`)}, surface.Append)
	for _, c := range calls {
		b.add(surface.TypeToolCall, map[string]any{"turn": b.turn, "step": b.step, "callId": c, "name": "echo", "arguments": `{"x":1}`}, surface.Op{})
	}
	return seq
}

func (b *builder) result(callID, text string) int64 {
	return b.add(surface.TypeToolResult, surface.StepMessage{Turn: b.turn, Step: b.step,
		Message: surface.Message{ID: b.id(), Role: surface.RoleUser, Source: surface.Source{Kind: "tool", CallID: callID},
			Content: []surface.Block{surface.ToolResult(callID, false, surface.Text(text))}}}, surface.Append)
}

func (b *builder) session() *fakeSession { return &fakeSession{t: b.t, l: b.l} }

// words returns a text of n words.
func words(n int) string { return strings.Repeat("word ", n) }

func decode(t testing.TB, data []byte) map[string]any {
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

func types(ps []surface.Proposal) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Type)
	}
	return out
}
