package surface_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
)

// Conformance checklist, group C: message projection.

func TestC31_SystemHeadIsWireMessageZero(t *testing.T) {
	l := newTLog(t)
	s := l.system("be brief")
	u := l.user("hello")
	require.Equal(t, []int64{s, u}, l.Nodes())
	msgs := l.Messages()
	require.Equal(t, []string{surface.RoleSystem, surface.RoleUser}, roles(msgs))
	require.Equal(t, []surface.Block{surface.Text("be brief")}, msgs[0].Content)
	require.Equal(t, surface.Source{Kind: "plugin", Plugin: "system-prompt"}, msgs[0].Source)
	require.Equal(t, "hello", surface.TextOf(msgs[1].Content))
}

func TestC32_EmptySystemHeadProjectsNothing(t *testing.T) {
	l := newTLog(t)
	s := l.system("be brief")
	u := l.user("hello")
	r := l.add(replacing(l.sys(""), s, s, s))
	require.Equal(t, []int64{r, u}, l.Nodes())
	require.Equal(t, 2, l.NodeCount())
	require.Equal(t, []string{surface.RoleUser}, roles(l.Messages()))
	info := l.Surface()
	require.True(t, info[0].Empty)
	require.Equal(t, surface.TypeSystemMessage, info[0].Type)
	require.Equal(t, surface.RoleSystem, info[0].Role)
	require.False(t, info[1].Empty)

	// The empty head still holds node 0: a later prompt replaces it.
	r2 := l.add(replacing(l.sys("be terse"), r, r, r))
	require.Equal(t, []int64{r2, u}, l.Nodes())
	require.Equal(t, []string{surface.RoleSystem, surface.RoleUser}, roles(l.Messages()))
}

func TestC33_EmptyAssistantProjectsNothing(t *testing.T) {
	l := newTLog(t)
	turn, step := l.step()
	u := l.user("hello")
	a := l.add(pAssistant(turn, step, "a1", ""))
	require.Equal(t, []int64{u, a}, l.Nodes())
	require.Equal(t, []string{"u2"}, ids(l.Messages()))
	require.True(t, l.Surface()[1].Empty)
	m, ok := l.Message(a)
	require.True(t, ok)
	_, vis := surface.Project(surface.TypeAssistantMessage, m)
	require.False(t, vis)
	// An empty user message still projects (verbatim).
	e := l.user("")
	require.Equal(t, []string{"u2", "u4"}, ids(l.Messages()))
	require.Equal(t, []int64{u, a, e}, l.Nodes())
}

func TestC34_LogOnlyEventsNeverProject(t *testing.T) {
	l := newTLog(t)
	l.add(pLogOnly(surface.TypeTurnStart, `{"turn":1}`))
	l.add(pLogOnly(surface.TypeRequestHeader, headerData("")))
	l.add(pLogOnly(surface.TypeRequestContext, `{"provider":"deepseek","model":"deepseek-chat"}`))
	l.add(pLogOnly(surface.TypeStepStart, `{"turn":1,"step":1}`))
	u := l.user("hello")
	l.add(pLogOnly(surface.TypeAssistantAttempt, `{"turn":1,"step":1,"stream":[]}`))
	l.add(pLogOnly(surface.TypeLLMRetry, `{"turn":1,"step":1,"retry":1,"failure":{}}`))
	a := l.add(pAssistant(1, 1, "a1", "", "c1"))
	l.add(pLogOnly(surface.TypeToolCall, `{"turn":1,"step":1,"callId":"c1","name":"read","arguments":"{}"}`))
	r := l.add(surface.Proposal{Type: surface.TypeToolResult, Data: toolResult{turn: 1, step: 1, id: "r1", callID: "c1", text: "ok"}.data(), Op: surface.Append})
	l.add(pLogOnly(surface.TypeStepEnd, `{"turn":1,"step":1}`))
	l.add(pLogOnly(surface.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`))
	l.add(pLogOnly(surface.TypeCompactionStart, `{}`))
	l.add(surface.Proposal{Type: "hook/invoked", Data: []byte(`{}`), Ignorable: true})

	require.Equal(t, []int64{u, a, r}, l.Nodes())
	require.Equal(t, []string{"u4", "a1", "r1"}, ids(l.Messages()))
	require.Len(t, l.Transcript(), 3)
	for _, e := range l.Events() {
		if e.Seq == u || e.Seq == a || e.Seq == r {
			continue
		}
		_, ok := l.Message(e.Seq)
		require.False(t, ok, "log-only %s yields a message", e.Type)
	}
}

func TestC35_CompactionReplacementProjectsInPlace(t *testing.T) {
	l := newTLog(t)
	turn, step := l.step()
	l.system("be brief")                                                // 2
	l.user("one")                                                       // 3
	l.add(pAssistant(turn, step, "a4", "two"))                          // 4
	l.user("three")                                                     // 5
	l.add(pAssistant(turn, step, "a6", "four"))                         // 6
	l.add(pLogOnly(surface.TypeCompactionStart, `{}`))                  // 7
	l.add(pLogOnly(surface.TypeCompactionSummary, `{"summary":"sum"}`)) // 8
	sum := l.add(replacing(pUser("summary", "[summary of one, two, three]"), 3, 5, 3, 4, 5, 7, 8))
	require.Equal(t, []int64{2, sum, 6}, l.Nodes())
	msgs := l.Messages()
	require.Equal(t, []string{"s2", "summary", "a6"}, ids(msgs))
	require.Equal(t, []string{surface.RoleSystem, surface.RoleUser, surface.RoleAssistant}, roles(msgs))
	require.Equal(t, "[summary of one, two, three]", surface.TextOf(msgs[1].Content))
}

func TestC36_TranscriptListsAppendOriginOnly(t *testing.T) {
	l := newTLog(t)
	turn, step := l.step()
	s := l.system("be brief")
	u := l.user("one")
	a := l.add(pAssistant(turn, step, "a", "two"))
	u2 := l.user("three")
	sum := l.add(replacing(pUser("summary", "sum"), u, a, u, a))
	s2 := l.add(replacing(l.sys("be terse"), s, s, s))
	u3 := l.user("four")
	require.Equal(t, []int64{s2, sum, u2, u3}, l.Nodes())

	var seqs []int64
	for _, e := range l.Transcript() {
		seqs = append(seqs, e.Seq)
		require.NotEqual(t, surface.TypeSystemMessage, e.Type)
	}
	require.Equal(t, []int64{u, a, u2, u3}, seqs)
	tr := l.Transcript()
	require.Equal(t, "one", surface.TextOf(tr[0].Message.Content))
	require.Equal(t, surface.TypeAssistantMessage, tr[1].Type)
}
