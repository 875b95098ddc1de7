package host

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

func TestF55_CanonicalHeader(t *testing.T) {
	h := surface.Header{Config: surface.CallConfig{Provider: "p", Model: "m"}, Tools: []jsontext.Value{}, AdapterDefaults: &surface.AdapterDefaults{}}
	c := h.Canonical()
	require.Nil(t, c.Tools)
	require.Nil(t, c.AdapterDefaults)
	mt := int64(5)
	full := surface.Header{Config: surface.CallConfig{Provider: "p", Model: "m", MaxTokens: &mt},
		Tools: []jsontext.Value{jsontext.Value(`{"name":"a"}`)}, AdapterDefaults: &surface.AdapterDefaults{MaxTokens: true}}.Canonical()
	require.Len(t, full.Tools, 1)
	require.NotNil(t, full.AdapterDefaults)
}

func TestF56_HeaderEquality(t *testing.T) {
	cfg := surface.CallConfig{Provider: "p", Model: "m"}
	a, b := jsontext.Value(`{"name":"a"}`), jsontext.Value(`{"name":"b"}`)
	require.False(t, surface.Header{Config: cfg, Tools: []jsontext.Value{a, b}}.Equal(surface.Header{Config: cfg, Tools: []jsontext.Value{b, a}}))
	require.True(t, surface.Header{Config: cfg}.Equal(surface.Header{Config: cfg, Tools: []jsontext.Value{}}))
	// A header has no prompt: two sessions with different prompts log equal headers.
	h1 := newHarness(t, "prompt one", nil)
	h1.turn("hi")
	h2 := newHarness(t, "prompt two", nil)
	h2.turn("hi")
	require.True(t, h1.s.Log().Header().Equal(*h2.s.Log().Header()))
}

func TestF57_FoldHeader(t *testing.T) {
	h := newHarness(t, "p", nil)
	h.turn("one")
	h.a.SetRoute(Route{Provider: "test", Model: "m2"})
	h.turn("two")
	got, err := surface.FoldHeader(h.s.Log().Events(), nil)
	require.NoError(t, err)
	require.Equal(t, "m2", got.Config.Model)
	base := &surface.Header{Config: surface.CallConfig{Provider: "x", Model: "y"}}
	got, err = surface.FoldHeader(h.s.Log().Events()[:2], base)
	require.NoError(t, err)
	require.Same(t, base, got)
}

func TestF58_UnchangedAssemblyLogsOneInitialHeader(t *testing.T) {
	h := newHarness(t, "p", nil)
	h.turn("one")
	h.turn("two")
	require.Equal(t, []string{"initial"}, h.headers())
	h.checkReconstruction()
}

func TestF59_PromptChangeReplacesHeadAndStartsSeries(t *testing.T) {
	h := newHarness(t, "v1", nil)
	h.turn("one")
	h.turn("two")
	h.prompt.text = "v2"
	h.turn("three")
	sys := h.events(surface.TypeSystemMessage)
	require.Len(t, sys, 2)
	require.Equal(t, surface.OpReplace, sys[1].Op.Kind)
	require.Equal(t, []int64{sys[0].Seq}, sys[1].Sources)
	require.Equal(t, []string{"initial", "series"}, h.headers())
	r2, r3 := h.model.reqs[1], h.model.reqs[2]
	require.Equal(t, "system", r3.Messages[0].Role)
	require.Equal(t, "v2", surface.TextOf(r3.Messages[0].Content))
	require.Greater(t, len(r3.Messages), len(r2.Messages))
	h.checkReconstruction()
}

func inHistory(c *Config) { c.Route.InHistory = true }

func TestF60_InHistoryPromptChangeAppends(t *testing.T) {
	h := newHarness(t, "v1", inHistory)
	h.turn("one")
	h.turn("two")
	head := h.s.Log().Nodes()[0]
	h.prompt.text = "v2"
	h.turn("three")
	sys := h.events(surface.TypeSystemMessage)
	require.Len(t, sys, 2)
	require.Equal(t, surface.OpAppend, sys[1].Op.Kind)
	require.Equal(t, []string{"initial"}, h.headers())
	require.Equal(t, head, h.s.Log().Nodes()[0])
	r2, r3 := h.model.reqs[1], h.model.reqs[2]
	require.Equal(t, string(mustJSON(t, r2.Messages)), string(mustJSON(t, r3.Messages[:len(r2.Messages)])), "request 3 extends request 2")
	require.Equal(t, []string{"assistant", "system", "user"}, msgRoles(r3.Messages[len(r2.Messages):]))
	h.turn("four")
	require.Len(t, h.events(surface.TypeSystemMessage), 2)
	h.checkReconstruction()
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestF61_InHistoryWithSeriesStartReplacesHead(t *testing.T) {
	h := newHarness(t, "v1", inHistory)
	h.turn("one")
	series := false
	_, err := h.a.PreStepChain.Add("series", func(_ context.Context, in PreStep) (PreStep, error) {
		in.Decision.StartsSeries = series
		return in, nil
	})
	require.NoError(t, err)
	series = true
	h.prompt.text = "v2"
	h.turn("two")
	sys := h.events(surface.TypeSystemMessage)
	require.Len(t, sys, 2)
	require.Equal(t, surface.Replace(sys[0].Seq, sys[0].Seq), sys[1].Op, "the replacement covers exactly node 0")
	require.Equal(t, []int64{sys[0].Seq}, sys[1].Sources)
	require.Equal(t, sys[1].Seq, h.s.Log().Surface()[0].Seq, "node 0 is the new prompt")
	require.Equal(t, []string{"initial", "series"}, h.headers())
}

func TestF62_SeriesStartCollapsesInHistoryNodes(t *testing.T) {
	h := newHarness(t, "v1", inHistory)
	h.turn("one")
	h.prompt.text = "v2"
	h.turn("two") // appended later node
	require.Len(t, h.events(surface.TypeSystemMessage), 2)
	series := true
	_, err := h.a.PreStepChain.Add("series", func(_ context.Context, in PreStep) (PreStep, error) {
		in.Decision.StartsSeries = series
		return in, nil
	})
	require.NoError(t, err)
	h.prompt.text = "v3"
	h.turn("three")
	last := h.model.reqs[len(h.model.reqs)-1]
	require.Equal(t, 1, systemCount(last.Messages))
	require.Equal(t, "v3", surface.TextOf(last.Messages[0].Content))
	h.checkReconstruction()
}

func TestF63_CompactionThenPromptChangeOnInHistoryRoute(t *testing.T) {
	armed := false
	comp := &checkpointCompactor{when: func(*View, CompactionRequest) bool { return armed }, keepNone: true}
	h := newHarness(t, "v1", func(c *Config) { c.Route.InHistory = true; c.Compactors = []CompactionProvider{comp} })
	h.turn("one")
	armed = true
	h.prompt.text = "v2"
	h.turn("two")
	last := h.model.reqs[len(h.model.reqs)-1]
	require.Equal(t, []string{"system", "user", "user"}, msgRoles(last.Messages))
	require.Equal(t, "v2", surface.TextOf(last.Messages[0].Content))
	require.Equal(t, []string{"initial", "series"}, h.headers())
	h.checkReconstruction()
}

func TestF64_ToolsAndPromptChangeTogether(t *testing.T) {
	h := newHarness(t, "v1", inHistory)
	h.turn("one")
	require.NoError(t, h.a.SetTools(echoTool))
	h.prompt.text = "v2"
	h.turn("two")
	require.Equal(t, []string{"initial", "change+startsSeries"}, h.headers())
	require.Equal(t, 1, systemCount(h.model.reqs[1].Messages))
	h.checkReconstruction()
}

func TestF65_CompactionAndConfigChangeBetweenTurns(t *testing.T) {
	armed := false
	comp := &checkpointCompactor{when: func(*View, CompactionRequest) bool { return armed }, keepNone: true}
	h := newHarness(t, "sys", func(c *Config) { c.Compactors = []CompactionProvider{comp} })
	h.turn("one")
	_, err := h.a.RequestChain.Add("max-tokens", func(_ context.Context, c surface.CallConfig) (surface.CallConfig, error) {
		mt := int64(77)
		c.MaxTokens = &mt
		return c, nil
	})
	require.NoError(t, err)
	armed = true
	h.turn("two")
	require.Equal(t, []string{"initial", "change+startsSeries"}, h.headers())
	r2 := h.model.reqs[1]
	require.Equal(t, "system", r2.Messages[0].Role)
	require.Contains(t, surface.TextOf(r2.Messages[1].Content), "compacted-summary")
	h.checkReconstruction()
}

func TestF66_RequestErrorHandlerReplacesAndRetries(t *testing.T) {
	h := newHarness(t, "sys", nil)
	h.model.then(fail(llm.CodeServer))
	_, err := h.a.RequestErrorChain.Add("rewrite", func(_ context.Context, in RequestError) (RequestError, error) {
		nodes := h.s.Log().Nodes()
		data, _ := surface.Data(surface.Message{ID: "rewritten", Role: "user", Source: surface.Source{Kind: "user"},
			Content: []surface.Block{surface.Text("rewritten")}})
		_, err := h.s.Propose(Proposer{Kind: ByLoop}, surface.Proposal{Type: surface.TypeUserMessage, Data: data,
			Op: surface.Replace(nodes[1], nodes[1]), Sources: []int64{nodes[1]}})
		in.Retry = err == nil
		return in, err
	})
	require.NoError(t, err)
	res := h.turn("original")
	require.Equal(t, surface.EndCompleted, res.Reason.Kind)
	require.Len(t, h.model.reqs, 2)
	require.Equal(t, "rewritten", surface.TextOf(h.model.reqs[1].Messages[1].Content))
	require.Equal(t, []string{"initial", "series"}, h.headers())
	h.checkReconstruction()
}

func TestF67_ResumeLogsResumeHeader(t *testing.T) {
	h := newHarness(t, "sys", nil)
	h.turn("one")
	seeded, err := surface.Seed(h.s.Log().Events())
	require.NoError(t, err)
	h.s = NewSession("test-session", seeded, nil, WithIDs(CounterIDs("r")))
	h.reattach()
	h.turn("two")
	require.Equal(t, []string{"initial", "resume"}, h.headers())
	r1, r2 := h.model.reqs[0], h.model.reqs[1]
	require.Equal(t, string(mustJSON(t, r1.Messages[0])), string(mustJSON(t, r2.Messages[0])))
	require.Len(t, h.events(surface.TypeSystemMessage), 1)
	require.Equal(t, string(mustJSON(t, r1.Messages)), string(mustJSON(t, r2.Messages[:len(r1.Messages)])))
}

func TestF68_RequestContextLoggedOnChange(t *testing.T) {
	h := newHarness(t, "sys", nil)
	h.turn("one")
	h.turn("two")
	require.Len(t, h.events(surface.TypeRequestContext), 1)
	h.a.SetRoute(Route{Provider: "test", Model: "m2", ContextWindow: 500})
	h.turn("three")
	require.Len(t, h.events(surface.TypeRequestContext), 2)
	h.a.SetRoute(Route{Provider: "test", Model: "m2"})
	h.turn("four")
	ctxs := h.events(surface.TypeRequestContext)
	require.Len(t, ctxs, 3)
	require.NotContains(t, string(ctxs[2].Data), "contextWindow")
	require.Contains(t, string(ctxs[1].Data), `"contextWindow":500`)
}

func TestF69_EveryRequestRebuildsFromTheLog(t *testing.T) {
	h := newHarness(t, "sys", func(c *Config) { c.Tools = []Tool{echoTool} })
	h.model.then(callTool("c1", "echo", `{"x":1}`), reply("done"), callTool("c2", "echo", `{}`), reply("done again"))
	_, err := h.a.RequestChain.Add("temp", func(_ context.Context, c surface.CallConfig) (surface.CallConfig, error) {
		t := 0.5
		c.Temperature = &t
		return c, nil
	})
	require.NoError(t, err)
	h.turn("one")
	h.prompt.text = "sys v2"
	h.turn("two")
	require.Len(t, h.model.reqs, 4)
	h.checkReconstruction()
	for _, b := range h.model.bodies {
		require.NotContains(t, string(b), `"system":`)
	}
}

// mutatingModel changes the request it was given.
type mutatingModel struct{ inner llm.Model }

func (m *mutatingModel) Stream(ctx context.Context, req *llm.Request, on func(llm.Delta)) (*llm.Result, error) {
	req.Messages[len(req.Messages)-1].Content[0].Text = "tampered"
	return m.inner.Stream(ctx, req, on)
}

func TestF70_MutatedRequestFailsTheTurn(t *testing.T) {
	h := newHarness(t, "sys", func(c *Config) { c.Model = &mutatingModel{inner: &funcModel{}} })
	res := h.turn("hello")
	require.Equal(t, surface.EndError, res.Reason.Kind)
	require.Contains(t, res.Reason.Error.Message, "modified")
	// The log's own copy of the message is untouched.
	msgs := h.s.Log().Messages()
	require.Equal(t, "hello", surface.TextOf(msgs[len(msgs)-1].Content))
}

func TestF71_RequestHandlerCannotMutateLoggedHeader(t *testing.T) {
	h := newHarness(t, "sys", nil)
	var kept *int64
	_, err := h.a.RequestChain.Add("first", func(_ context.Context, c surface.CallConfig) (surface.CallConfig, error) {
		mt := int64(10)
		c.MaxTokens = &mt
		kept = c.MaxTokens
		return c, nil
	})
	require.NoError(t, err)
	_, err = h.a.RequestChain.Add("second", func(_ context.Context, c surface.CallConfig) (surface.CallConfig, error) {
		*kept = 999 // mutate what the previous handler returned
		return c, nil
	})
	require.NoError(t, err)
	h.turn("hi")
	*kept = 12345 // and again after the header was logged
	mt := h.s.Log().Header().Config.MaxTokens
	require.NotNil(t, mt)
	require.Equal(t, int64(10), *mt, "handlers get copies; the logged header is a snapshot")
}

// TestRouteReasoningEffortReachesTheRequest: the route's reasoningEffort is
// the default config of every request, so each adapter maps it (thinking
// budget, reasoning_effort), and a route switch changes it.
func TestRouteReasoningEffortReachesTheRequest(t *testing.T) {
	h := newHarness(t, "sys", nil)
	r := h.a.Route()
	r.ReasoningEffort = "high"
	h.a.SetRoute(r)
	h.turn("one")
	require.Equal(t, "high", h.model.reqs[0].Config.ReasoningEffort)
	r.ReasoningEffort = ""
	h.a.SetRoute(r)
	h.turn("two")
	require.Empty(t, h.model.reqs[1].Config.ReasoningEffort)
	h.checkReconstruction()
}

// TestRequestClampedToTheRouteOutputCap: a request whose max tokens is
// above the route's output cap (set, or the model's known limit) is sent
// with the cap, and the header records what was sent.
func TestRequestClampedToTheRouteOutputCap(t *testing.T) {
	h := newHarness(t, "sys", nil)
	r := h.a.Route()
	r.MaxTokens, r.OutputCap = 5000, 3000
	h.a.SetRoute(r)
	h.turn("one")
	require.Equal(t, int64(3000), *h.model.reqs[0].Config.MaxTokens)
	r.Model, r.OutputCap, r.MaxTokens = "claude-sonnet-4-5-20250929", 0, 65536
	h.a.SetRoute(r)
	h.turn("two")
	require.Equal(t, int64(64000), *h.model.reqs[1].Config.MaxTokens)
	r.MaxTokens = 1000
	h.a.SetRoute(r)
	h.turn("three")
	require.Equal(t, int64(1000), *h.model.reqs[2].Config.MaxTokens)
	h.checkReconstruction()
}
