package inspect

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// TestFailuresRetriesAndRepairedTurns: a failed attempt, its llm/retry, a
// plugin failure and a turn interrupted by a crash and closed by repair
// each get their card.
func TestFailuresRetriesAndRepairedTurns(t *testing.T) {
	l := surface.New(surface.WithClock(func() int64 { return 0 }))
	add := func(typ string, v any, op surface.Op) {
		t.Helper()
		b, err := surface.Data(v)
		require.NoError(t, err)
		_, err = l.Append(surface.Proposal{Type: typ, Data: b, Op: op, Ignorable: typ == surface.TypePluginFailure})
		require.NoError(t, err)
	}
	model := surface.Source{Kind: "model", Provider: "offline", Model: "demo"}
	add(surface.TypeTurnStart, map[string]any{"turn": 1}, surface.Op{})
	add(surface.TypeStepStart, map[string]any{"turn": 1, "step": 1}, surface.Op{})
	add(surface.TypeSystemMessage, surface.StepMessage{Turn: 1, Step: 1, Message: surface.SystemMessage("s", "p", "be brief")}, surface.Append)
	add(surface.TypeUserMessage, surface.Message{ID: "u", Role: "user", Source: surface.Source{Kind: "user"}, Content: []surface.Block{surface.Text("read it")}}, surface.Append)
	add(surface.TypeRequestHeader, map[string]any{"header": map[string]any{"config": map[string]any{"provider": "offline", "model": "demo"}}, "reason": "initial"}, surface.Op{})
	add(surface.TypeAssistantAttempt, map[string]any{"turn": 1, "step": 1, "stream": map[string]any{"v": 1, "chunks": []any{}}}, surface.Op{})
	add(surface.TypeLLMRetry, map[string]any{"turn": 1, "step": 1, "retry": 1, "waitMs": 500, "failure": map[string]any{"message": "503 from the provider", "code": "UPSTREAM"}}, surface.Op{})
	add(surface.TypePluginFailure, map[string]any{"plugin": "meter-x", "kind": "meter", "error": "trap: out of bounds", "turn": 1, "step": 1}, surface.Op{})
	add(surface.TypeAssistantMessage, surface.StepMessage{Turn: 1, Step: 1, Message: surface.Message{ID: "a", Role: "assistant", Source: model,
		Content: []surface.Block{surface.ToolCall("c1", "read_file", `{"path":"a"}`)}}}, surface.Append)
	// The session crashed here; resuming closes the turn.
	n := 0
	_, err := l.Repair(func() string { n++; return "r" + itoa(int64(n)) })
	require.NoError(t, err)

	m := Build(&Session{ID: "x", Log: l})
	byKind := map[string][]Item{}
	for _, it := range m.Fill(m.Items) {
		byKind[it.Kind] = append(byKind[it.Kind], it)
	}
	require.Len(t, byKind[ItemAttempt], 1)
	require.Equal(t, 1, byKind[ItemAttempt][0].Request)
	require.Equal(t, []int64{5, 8}, m.Requests, "the failed attempt and the answer are both requests")
	require.Equal(t, "retry 1 after 500 ms: 503 from the provider (UPSTREAM)", byKind[ItemRetry][0].Note)
	require.Equal(t, "meter-x", byKind[ItemFailure][0].Failure.Plugin)
	require.Len(t, byKind[ItemTool], 1)
	require.True(t, byKind[ItemTool][0].Synthetic, "the result crash repair wrote")
	require.True(t, byKind[ItemTool][0].IsError)
	require.Equal(t, "read_file", byKind[ItemTool][0].ToolName)
	require.Equal(t, "interrupted", byKind[ItemTurnEnd][0].Note)

	var out strings.Builder
	s := newServer(t, Options{})
	require.NoError(t, s.pages.ExecuteTemplate(&out, "items", trajectoryData{Name: "x", Model: m, Items: m.Fill(m.Items), Next: -1}))
	page := out.String()
	for _, want := range []string{`<span class="label">failed attempt</span>`, `<span class="label">llm/retry</span> retry 1 after 500 ms`,
		`<span class="label">plugin failure</span> meter <code>meter-x</code>`, "written by crash repair",
		`<span class="label">turn 1 ended: interrupted</span> (closed by crash repair when the session resumed)`} {
		require.Contains(t, page, want)
	}
}
