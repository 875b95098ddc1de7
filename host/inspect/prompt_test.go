package inspect

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// promptLog builds a log whose system messages go through every kind: set,
// in-history update, node 0 change (with the later node emptied first).
func promptLog(t *testing.T) *surface.Log {
	l := surface.New(surface.WithClock(func() int64 { return 0 }))
	n := 0
	add := func(typ string, v any, op surface.Op, src []int64) surface.Event {
		t.Helper()
		b, err := surface.Data(v)
		require.NoError(t, err)
		e, err := l.Append(surface.Proposal{Type: typ, Data: b, Op: op, Sources: src})
		require.NoError(t, err)
		return e
	}
	sys := func(step int64, text string, op surface.Op, src []int64) surface.Event {
		n++
		return add(surface.TypeSystemMessage, surface.StepMessage{Turn: 1, Step: step, Message: surface.SystemMessage("s"+itoa(int64(n)), "p", text)}, op, src)
	}
	user := func(text string) {
		n++
		add(surface.TypeUserMessage, surface.Message{ID: "u" + itoa(int64(n)), Role: "user", Source: surface.Source{Kind: "user"}, Content: []surface.Block{surface.Text(text)}}, surface.Append, nil)
	}
	add(surface.TypeTurnStart, map[string]any{"turn": 1}, surface.Op{}, nil)
	add(surface.TypeStepStart, map[string]any{"turn": 1, "step": 1}, surface.Op{}, nil)
	a := sys(1, "one\ntwo", surface.Append, nil) // seq 2
	user("hi")
	add(surface.TypeStepEnd, map[string]any{"turn": 1, "step": 1}, surface.Op{}, nil)
	add(surface.TypeStepStart, map[string]any{"turn": 1, "step": 2}, surface.Op{}, nil)
	b := sys(2, "one\nthree", surface.Append, nil) // in-history update
	user("again")
	add(surface.TypeStepEnd, map[string]any{"turn": 1, "step": 2}, surface.Op{}, nil)
	add(surface.TypeStepStart, map[string]any{"turn": 1, "step": 3}, surface.Op{}, nil)
	sys(3, "", surface.Replace(b.Seq, b.Seq), []int64{b.Seq})          // the later node emptied
	sys(3, "one\nfour", surface.Replace(a.Seq, a.Seq), []int64{a.Seq}) // node 0 changed
	return l
}

func TestPromptTrackerClassifiesAndDiffsAgainstThePromptInEffect(t *testing.T) {
	l := promptLog(t)
	pt := NewPromptTracker()
	var got []PromptEvent
	for _, e := range l.Events() {
		m, _ := l.Message(e.Seq)
		if p, ok := pt.Observe(e, m); ok {
			got = append(got, p)
		}
	}
	require.Len(t, got, 4)
	require.Equal(t, PromptSet, got[0].Kind)
	require.Equal(t, "system prompt set", got[0].Label())
	require.Empty(t, got[0].Diff)

	require.Equal(t, PromptUpdated, got[1].Kind)
	require.Equal(t, "prompt updated (appended in history)", got[1].Label())
	require.Equal(t, "one\ntwo", got[1].InEffect)
	require.Equal(t, "- two\n+ three", got[1].Diff)

	require.Equal(t, PromptEmptied, got[2].Kind, "emptying a later system node is not a node 0 change")
	require.NotContains(t, got[2].Label(), "node 0")

	require.Equal(t, PromptChanged, got[3].Kind)
	require.Equal(t, "prompt changed (node 0 replaced)", got[3].Label())
	require.Equal(t, "one\nthree", got[3].InEffect, "the prompt in effect was the in-history update, not node 0's text")
	require.Equal(t, "- three\n+ four", got[3].Diff)
}

func TestBuildShowsPromptCardsNotBubbles(t *testing.T) {
	m := Build(&Session{ID: "x", Log: promptLog(t)})
	var kinds []string
	for _, it := range m.Fill(m.Items) {
		if it.Kind == ItemPrompt {
			kinds = append(kinds, it.Prompt.Kind)
		}
		if it.Kind == ItemMessage {
			require.NotEqual(t, "system", it.Role, "a system message is never a bubble")
		}
	}
	require.Equal(t, []string{PromptSet, PromptUpdated, PromptEmptied, PromptChanged}, kinds)
}
