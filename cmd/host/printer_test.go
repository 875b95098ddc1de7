package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// TestPrinterLabelsPromptEvents: node 0 replacements, in-history appends
// and emptied later nodes each say what they are, also on a resumed
// session whose first prompt the printer never printed.
func TestPrinterLabelsPromptEvents(t *testing.T) {
	t.Parallel()
	l := surface.New(surface.WithClock(func() int64 { return 0 }))
	add := func(typ string, v any, op surface.Op, src ...int64) surface.Event {
		t.Helper()
		b, err := surface.Data(v)
		require.NoError(t, err)
		var sources []int64
		if len(src) > 0 {
			sources = src
		}
		e, err := l.Append(surface.Proposal{Type: typ, Data: b, Op: op, Sources: sources})
		require.NoError(t, err)
		return e
	}
	n := 0
	sys := func(step int64, text string, op surface.Op, src ...int64) surface.Event {
		n++
		return add(surface.TypeSystemMessage, surface.StepMessage{Turn: 1, Step: step,
			Message: surface.SystemMessage("s"+string(rune('a'+n)), "system-prompt", text)}, op, src...)
	}
	step := func(k int64, f func()) {
		add(surface.TypeStepStart, map[string]any{"turn": 1, "step": k}, surface.Op{})
		f()
		add(surface.TypeStepEnd, map[string]any{"turn": 1, "step": k}, surface.Op{})
	}
	add(surface.TypeTurnStart, map[string]any{"turn": 1}, surface.Op{})
	var head, later surface.Event
	step(1, func() { head = sys(1, "one", surface.Append) })

	var out strings.Builder
	p := newPrinter(&out)
	p.watch(l, nil) // a resumed session: the head was logged before
	step(2, func() { later = sys(2, "one\ntwo", surface.Append) })
	step(3, func() {
		sys(3, "", surface.Replace(later.Seq, later.Seq), later.Seq)
		sys(3, "three", surface.Replace(head.Seq, head.Seq), head.Seq)
	})
	require.Equal(t, "· prompt updated (appended in history: seq 5, 7 chars)\n"+
		"· earlier prompt update emptied (seq 5 → 8)\n"+
		"· prompt changed (node 0 replaced: seq 2 → 9, 5 chars)\n", out.String())
}
