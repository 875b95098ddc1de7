package native

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/plugins"
	"github.com/weirhost/weir/plugins/compaction-basic/compact"
	"github.com/weirhost/weir/plugins/token-meter/meter"
	meternative "github.com/weirhost/weir/plugins/token-meter/native"
	"github.com/weirhost/weir/sdk/plugintest"
	"github.com/weirhost/weir/surface"
)

// toolLoopModel answers every user turn with a tool call, then a text
// reply once the result is in; a summarization request gets a short
// checkpoint. Requests of the conversation are recorded with their bytes.
type toolLoopModel struct {
	calls  int
	bodies [][]byte
}

func (m *toolLoopModel) Stream(_ context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Result, error) {
	last := req.Messages[len(req.Messages)-1]
	if strings.Contains(surface.TextOf(last.Content), "compaction engine") {
		return &llm.Result{Content: []surface.Block{surface.Text("## Primary Request and Intent\n- keep going\n## Current Work\n- tool loop")},
			FinishReason: llm.FinishStop}, nil
	}
	body, err := llm.EncodeRequest(req)
	if err != nil {
		return nil, err
	}
	m.bodies = append(m.bodies, body)
	m.calls++
	if last.Role == surface.RoleUser && len(last.Content) == 1 && last.Content[0].Type == surface.BlockToolResult {
		return &llm.Result{Content: []surface.Block{surface.Text(fmt.Sprintf("Result %d noted: %s", m.calls, strings.Repeat("fine ", 40)))},
			FinishReason: llm.FinishStop}, nil
	}
	id := fmt.Sprintf("call-%d", m.calls)
	return &llm.Result{Content: []surface.Block{surface.ToolCall(id, "echo", fmt.Sprintf(`{"say":"%s"}`, strings.Repeat("y", 120)))},
		FinishReason: llm.FinishToolCalls}, nil
}

// TestLongSessionUnderPressure runs 300 turns with a tool call each through
// the real loop with compaction-basic and the token meter: pressure triggers
// many compactions and three prompt changes replace node 0. After every step
// node 0 is the current prompt and no tool call is separated from its
// result; at every step start the measured total is under the threshold;
// and every request rebuilt from the log equals what was sent.
func TestLongSessionUnderPressure(t *testing.T) {
	const config = `{"headroomTokens": 500, "maxCompactionsPerWindow": 0}`
	route := host.Route{Provider: "test", Model: "m", ContextWindow: 6000, MaxTokens: 500}
	comp, err := New([]byte(config))
	require.NoError(t, err)
	spec, err := compactSpec(comp, route)
	require.NoError(t, err)

	t.Run("native", func(t *testing.T) {
		tokens, err := meternative.New(meter.Config{Fallback: meter.Heuristic})
		require.NoError(t, err)
		s := host.NewSession("long", surface.New(), nil, host.WithIDs(host.CounterIDs("m")))
		longSession(t, s, route, spec, comp, tokens)
	})
	t.Run("wasm", func(t *testing.T) {
		// The same session with compaction-basic and the token meter as the
		// first-party WebAssembly plugins under the real sandbox.
		ctx := context.Background()
		rt, err := plugin.NewRuntime(ctx, plugin.WithCacheDir(plugintest.CacheDir()))
		require.NoError(t, err)
		t.Cleanup(func() { rt.Close(ctx) })
		s := host.NewSession("long", surface.New(), nil, host.WithIDs(host.CounterIDs("m")))
		// Deadlines a loaded machine meets: the library's defaults (2 s to
		// start an instance) are for interactive use, not for a test
		// sharing its cores with a whole go test run.
		generous := provider.Limits{Start: time.Minute, Call: time.Minute}
		cp, err := provider.Load(ctx, rt, provider.Spec{Name: plugins.CompactionBasic, Role: provider.RoleCompaction,
			Wasm: plugins.FirstParty[plugins.CompactionBasic], Config: []byte(config), Limits: generous})
		require.NoError(t, err)
		wc, err := cp.Compaction()
		require.NoError(t, err)
		mp, err := provider.Load(ctx, rt, provider.Spec{Name: plugins.TokenMeter, Role: provider.RoleTokenMeter,
			Wasm: plugins.FirstParty[plugins.TokenMeter], Limits: generous})
		require.NoError(t, err)
		wm, err := mp.Meter(s)
		require.NoError(t, err)
		longSession(t, s, route, spec, wc, wm)
	})
}

// longSession runs the 300-turn session with the given providers.
func longSession(t *testing.T, s *host.Session, route host.Route, spec int64, comp host.CompactionProvider, tokens host.Meter) {
	const turns = 300
	m := &toolLoopModel{}
	echo := &host.FuncTool{ToolName: "echo", Fn: func(_ context.Context, args string) (string, error) {
		return "echoed " + args + strings.Repeat(" pad", 30), nil
	}}
	prompt := "You are a careful assistant."
	a, err := host.NewAgent(s, host.Config{Route: route, Model: m, Prompt: &host.SectionPrompt{},
		Sections: []host.Section{{Key: "base", Text: prompt}}, Tools: []host.Tool{echo},
		Compactors: []host.CompactionProvider{comp}, Meter: tokens})
	require.NoError(t, err)

	var violations []string
	s.Log().Observe(func(e surface.Event) {
		switch e.Type {
		case surface.TypeStepStart:
			meas, err := tokens.Measure(context.Background(), nil)
			if err == nil && meas.TotalTokens >= spec {
				violations = append(violations, fmt.Sprintf("seq %d: %d tokens at step start, threshold %d", e.Seq, meas.TotalTokens, spec))
			}
		case surface.TypeStepEnd:
			if msg := checkSurface(s.Log(), prompt); msg != "" {
				violations = append(violations, fmt.Sprintf("seq %d: %s", e.Seq, msg))
			}
		}
	})
	changes := map[int]string{100: "You are a careful assistant. Be brief.", 200: "You are a pirate.", 250: ""}
	for turn := 1; turn <= turns; turn++ {
		if p, ok := changes[turn]; ok {
			prompt = p
			a.SetSections([]host.Section{{Key: "base", Text: p}})
		}
		res, err := a.Run(context.Background(), a.UserMessage(fmt.Sprintf("turn %d: please echo something", turn)))
		require.NoError(t, err)
		require.Equal(t, surface.EndCompleted, res.Reason.Kind, "turn %d: %+v", turn, res.Reason)
		require.Empty(t, violations)
	}

	compactions := 0
	prompts := 0
	for _, e := range s.Log().Events() {
		switch e.Type {
		case surface.TypeCompactionEnd:
			compactions++
		case surface.TypeSystemMessage:
			prompts++
		}
	}
	t.Logf("%d turns: %d events, %d compactions, %d requests, %d surface nodes at the end",
		turns, s.Log().Len(), compactions, len(m.bodies), s.Log().NodeCount())
	require.GreaterOrEqual(t, compactions, 5, "pressure triggered several compactions")
	require.Equal(t, 4, prompts, "the first prompt and three changes")

	reqs, order, err := host.Requests(s.Log().Events(), s.ID())
	require.NoError(t, err)
	require.Len(t, order, len(m.bodies))
	for i, seq := range order {
		body, err := llm.EncodeRequest(reqs[seq])
		require.NoError(t, err)
		require.Equal(t, string(m.bodies[i]), string(body), "request %d", i)
	}
}

// compactSpec resolves the pressure threshold compaction-basic uses.
func compactSpec(p *Provider, r host.Route) (int64, error) {
	sp, err := compact.ResolveSpec(p.Config().For(r.Provider, r.Model), r.Provider, r.Model, r.ContextWindow, r.MaxTokens)
	return sp.ThresholdTokens, err
}

// checkSurface returns what is wrong with the surface, or "".
func checkSurface(l *surface.Log, prompt string) string {
	nodes := l.Surface()
	if len(nodes) == 0 || nodes[0].Type != surface.TypeSystemMessage {
		return "node 0 is not a system message"
	}
	head, _ := l.Message(nodes[0].Seq)
	if surface.TextOf(head.Content) != prompt {
		return fmt.Sprintf("node 0 holds %q, want %q", surface.TextOf(head.Content), prompt)
	}
	open := map[string]bool{}
	for _, n := range nodes {
		m, _ := l.Message(n.Seq)
		switch n.Type {
		case surface.TypeAssistantMessage:
			if len(open) > 0 {
				return fmt.Sprintf("seq %d: an assistant message before the results of %v", n.Seq, open)
			}
			for _, c := range m.ToolCalls() {
				open[c.ID] = true
			}
		case surface.TypeToolResult:
			id := m.Content[0].ToolCallID
			if !open[id] {
				return fmt.Sprintf("seq %d: a tool result without its call %s on the surface", n.Seq, id)
			}
			delete(open, id)
		default:
			if len(open) > 0 {
				return fmt.Sprintf("seq %d: a %s between a tool call and its result", n.Seq, n.Type)
			}
		}
	}
	return ""
}
