package provider_test

import (
	"context"
	"crypto/sha256"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

// probe is a native compaction provider that runs checks with the view it
// is handed.
type probe struct {
	check func(ctx context.Context, v *host.View, req host.CompactionRequest)
	calls int
}

func (p *probe) ID() string { return "probe" }

func (p *probe) Compact(ctx context.Context, v *host.View, req host.CompactionRequest) ([]surface.Proposal, error) {
	p.calls++
	if p.check != nil {
		p.check(ctx, v, req)
	}
	return nil, nil
}

// fixedMeter prices every surface node at its seq + 1 tokens.
type fixedMeter struct{ s *host.Session }

func (m *fixedMeter) ID() string                           { return "fixed" }
func (m *fixedMeter) Observe(events []surface.Event) error { return nil }
func (m *fixedMeter) Measure(context.Context, *surface.Header) (*host.Measurement, error) {
	e := int64(-3)
	out := &host.Measurement{Baseline: "estimated", LogRevision: m.s.Log().NextSeq(),
		Breakdown:     host.Breakdown{System: 1, User: 2, Assistant: 3, ToolResults: 4, Tools: 5},
		EstimateError: &e, Tokenizer: "fixed"}
	for _, seq := range m.s.Log().Nodes() {
		out.Nodes = append(out.Nodes, host.NodeTokens{Seq: seq, Tokens: seq + 1, HeuristicTokens: seq + 2})
		out.TotalTokens += seq + 1
	}
	return out, nil
}

// rawMessage is the message of a surface event, read independently of the
// package: user/message data is the message, other types carry it in
// data.message.
func rawMessage(t *testing.T, e surface.Event) []byte {
	if e.Type == surface.TypeUserMessage {
		return e.Data
	}
	var d struct {
		Message jsontext.Value `json:"message"`
	}
	require.NoError(t, json.Unmarshal(e.Data, &d))
	return d.Message
}

func TestHostAnswersFromTheView(t *testing.T) {
	sum := &recordingSummarizer{}
	pr := &probe{}
	var meter *fixedMeter
	l := newLoop(t, func(s *host.Session, c *host.Config) {
		meter = &fixedMeter{s: s}
		c.Compactors, c.Meter, c.Summarizer = []host.CompactionProvider{pr}, meter, sum
		c.Tools = []host.Tool{echoTool}
		c.Sections = []host.Section{{Key: "role", Text: "Be exact."}}
	})
	l.model.replies = append(l.model.replies, func(*llm.Request) (*llm.Result, error) {
		return &llm.Result{Content: []surface.Block{surface.ToolCall("c1", "echo", `{}`)}, FinishReason: llm.FinishToolCalls}, nil
	})
	l.turn("one")
	l.turn("two")

	checked := false
	pr.check = func(ctx context.Context, v *host.View, req host.CompactionRequest) {
		checked = true
		h := provider.NewHost(v, abi.KindCompaction, "probe", req.Route)
		nodes, err := h.SurfaceNodes(ctx)
		require.NoError(t, err)
		infos := v.Nodes()
		require.Len(t, nodes, len(infos))
		types := map[string]bool{}
		for i, n := range nodes {
			e, ok := v.Event(n.Seq)
			require.True(t, ok)
			raw := rawMessage(t, e)
			sum := sha256.Sum256(raw)
			require.Equal(t, abi.Node{Seq: infos[i].Seq, Type: infos[i].Type, Role: infos[i].Role,
				Size: int64(len(raw)), ContentHash: sum[:]}, n, "node %d", i)
			msg, err := h.Message(ctx, n.Seq)
			require.NoError(t, err)
			require.Equal(t, string(raw), string(msg))
			var got surface.Message
			require.NoError(t, json.Unmarshal(msg, &got))
			want, _ := v.Message(n.Seq)
			require.Equal(t, want.ID, got.ID)
			require.Equal(t, surface.TextOf(want.Content), surface.TextOf(got.Content))
			types[n.Type] = true
		}
		require.Equal(t, map[string]bool{surface.TypeSystemMessage: true, surface.TypeUserMessage: true,
			surface.TypeAssistantMessage: true, surface.TypeToolResult: true}, types)

		// A log-only event and a seq past the log are not surface nodes.
		_, err = h.Message(ctx, 0)
		require.ErrorIs(t, err, plugin.ErrNotFound)
		_, err = h.Message(ctx, v.NextSeq()+5)
		require.ErrorIs(t, err, plugin.ErrNotFound)

		g, err := h.Generations(ctx)
		require.NoError(t, err)
		rg, cg := v.Generations()
		require.Equal(t, abi.Generations{Replace: int64(rg), Content: int64(cg), LogLength: v.NextSeq()}, g)

		hb, err := h.Header(ctx)
		require.NoError(t, err)
		var hd surface.Header
		require.NoError(t, json.Unmarshal(hb, &hd))
		require.True(t, hd.Equal(*v.Header()))

		// The meter's measurement, and then its node counts in the surface.
		m, err := h.Measure(ctx)
		require.NoError(t, err)
		require.Equal(t, abi.Breakdown{SystemTokens: 1, ToolsTokens: 5, MessageTokens: 9,
			UserTokens: 2, AssistantTokens: 3, ToolResultTokens: 4}, m.Breakdown)
		require.True(t, m.HasEstimateError)
		require.Equal(t, int64(-3), m.EstimateError)
		require.Equal(t, "fixed", m.Tokenizer)
		require.Equal(t, abi.BaselineEstimated, m.Baseline.Kind)
		require.Len(t, m.Nodes, len(infos))
		h2 := provider.NewHost(v, abi.KindCompaction, "probe", req.Route)
		nodes, err = h2.SurfaceNodes(ctx)
		require.NoError(t, err)
		require.False(t, nodes[0].HasTokens, "a fresh host has no measurement yet")
		_, err = h2.Measure(ctx)
		require.NoError(t, err)
		nodes, err = h2.SurfaceNodes(ctx)
		require.NoError(t, err)
		for _, n := range nodes {
			require.True(t, n.HasTokens)
			require.Equal(t, n.Seq+1, n.Tokens)
		}

		// Summarize goes through the session's summarizer, instruction last.
		res, err := h.Summarize(ctx, &abi.SummarizeRequest{Messages: [][]byte{rawMessage(t, mustEvent(t, v, nodes[1].Seq))},
			Instruction: "Summarize.", MaxTokens: 64, Tools: []byte(`[{"name":"echo"}]`)})
		require.NoError(t, err)
		require.Equal(t, []string{"summary"}, res.Text)
		require.Equal(t, abi.Route{Provider: "test", Model: "m1"}, res.Route, "the conversation's route by default")
		require.JSONEq(t, `[{"type":"text","text":"summary"}]`, string(res.RawOutput))
		require.JSONEq(t, `{"inputTokens":10,"outputTokens":2}`, string(res.Usage))
		require.Equal(t, "stop", res.FinishReason)
		require.Len(t, sum.req.Messages, 2)
		require.Equal(t, "Summarize.", surface.TextOf(sum.req.Messages[1].Content))
		require.Equal(t, surface.Source{Kind: "plugin", Plugin: "probe"}, sum.req.Messages[1].Source)
		require.Equal(t, int64(64), sum.req.MaxTokens)
		require.Nil(t, sum.req.Asked, "sent as asked")
		require.Len(t, sum.req.Tools, 1)
		_, err = h.Summarize(ctx, &abi.SummarizeRequest{Messages: [][]byte{[]byte(`not json`)}})
		require.ErrorContains(t, err, "summarize: message 0 is not a message")

		// The same view under another kind grants neither capability.
		mh := provider.NewHost(v, abi.KindTokenMeter, "probe", req.Route)
		_, err = mh.Measure(ctx)
		require.ErrorIs(t, err, plugin.ErrNotGranted)
		_, err = mh.Summarize(ctx, &abi.SummarizeRequest{})
		require.ErrorIs(t, err, plugin.ErrNotGranted)
		ph := provider.NewHost(nil, abi.KindSystemPrompt, "probe", req.Route)
		_, err = ph.SurfaceNodes(ctx)
		require.ErrorIs(t, err, plugin.ErrNotGranted)

		// Native tokenizers.
		n, err := h.CountTokens(ctx, "deepseek-v3", []byte("Hello, tokenizer world!"))
		require.NoError(t, err)
		require.Equal(t, tokenizer.DeepSeekV3().Count("Hello, tokenizer world!"), n)
		n, err = h.CountTokens(ctx, "heuristic", []byte("12345678"))
		require.NoError(t, err)
		require.Equal(t, 2, n)
		_, err = h.CountTokens(ctx, "gpt-9", []byte("x"))
		require.ErrorIs(t, err, plugin.ErrNotFound)
		require.ErrorContains(t, err, `no tokenizer named "gpt-9" (the host has deepseek-v3, heuristic)`)
	}
	l.turn("three")
	require.True(t, checked)
}

func mustEvent(t *testing.T, v *host.View, seq int64) surface.Event {
	e, ok := v.Event(seq)
	require.True(t, ok)
	return e
}

type recordingSummarizer struct{ req host.SummaryRequest }

func (s *recordingSummarizer) Summarize(_ context.Context, req host.SummaryRequest) (*host.SummaryResult, error) {
	s.req = req
	return &host.SummaryResult{Content: []surface.Block{surface.Text("summary")}, FinishReason: "stop",
		Usage: &surface.Usage{Input: 10, Output: 2}}, nil
}

func TestConvertProposalsIsExact(t *testing.T) {
	in := []abi.Proposal{
		{Type: "compaction/start", Data: []byte(`{"a":1}`)},
		{Type: "user/message", Data: []byte(`{"b":2}`), Intent: abi.Intent{Kind: abi.IntentAppend}, Ignorable: true},
		{Type: "user/message", Data: []byte(`{}`), Intent: abi.Intent{Kind: abi.IntentReplace, StartSeq: 4, EndSeq: 9},
			SourceEventSeqs: []int64{2, 3, 4, 9}, HasSourceEventSeqs: true},
		{Type: "tool/result", Data: []byte(`{}`), Intent: abi.Intent{Kind: abi.IntentReplace, StartSeq: 7, EndSeq: 7},
			HasSourceEventSeqs: true},
	}
	got, err := provider.ConvertProposals(in)
	require.NoError(t, err)
	require.Equal(t, []surface.Proposal{
		{Type: "compaction/start", Data: []byte(`{"a":1}`)},
		{Type: "user/message", Data: []byte(`{"b":2}`), Op: surface.Append, Ignorable: true},
		{Type: "user/message", Data: []byte(`{}`), Op: surface.Replace(4, 9), Sources: []int64{2, 3, 4, 9}},
		{Type: "tool/result", Data: []byte(`{}`), Op: surface.Replace(7, 7), Sources: []int64{}},
	}, got)
	require.Nil(t, got[0].Sources, "absent stays absent")
	require.NotNil(t, got[3].Sources, "present but empty stays present")
	in[0].Data[2] = 'X'
	require.Equal(t, `{"a":1}`, string(got[0].Data), "data is copied")

	_, err = provider.ConvertProposals([]abi.Proposal{{Data: []byte(`{}`)}})
	require.EqualError(t, err, "malformed output: proposal 0 has no type")
	_, err = provider.ConvertProposals([]abi.Proposal{{Type: "x/y", Intent: abi.Intent{Kind: 7}}})
	require.ErrorContains(t, err, "proposal 0 (x/y) has intent 7")
	_, err = provider.ConvertProposals(make([]abi.Proposal, abi.MaxProposals+1))
	require.ErrorContains(t, err, "more than 1024")
}

func TestRenderRequest(t *testing.T) {
	a := &host.Assembly{
		Sections: []host.Section{{Key: "a", Text: "first"}, {Key: "b", Text: ""}},
		Runtime:  []host.Section{{Key: "clock", Text: "12:00"}},
		Tools:    []jsontext.Value{echoTool.Schema(), jsontext.Value(`{"name":"bare"}`)},
		Data:     map[string]string{"z": "last", "cwd": "/w"},
		Route:    host.Route{Provider: "p", Model: "m", ContextWindow: 5},
	}
	require.Equal(t, &abi.RenderRequest{
		Sections: []abi.Section{{Key: "a", Text: "first"}, {Key: "b", Text: ""}},
		Route:    abi.Route{Provider: "p", Model: "m"},
		HostData: []abi.KeyValue{{Key: "cwd", Value: "/w"}, {Key: "z", Value: "last"},
			{Key: provider.ToolsKey, Value: "echo: Echo the arguments.\nbare"}},
	}, provider.RenderRequest(a), "sorted data, the tools summary, no runtime sections")
	a.Data[provider.ToolsKey] = "mine"
	require.Equal(t, []abi.KeyValue{{Key: "cwd", Value: "/w"}, {Key: "tools", Value: "mine"}, {Key: "z", Value: "last"}},
		provider.RenderRequest(a).HostData)
}
