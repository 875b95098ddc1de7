package surface_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
)

func TestCheckPairing(t *testing.T) {
	sys := func(seq int64) surface.WireNode { return surface.WireNode{Seq: seq, Kind: surface.KindSystem} }
	user := func(seq int64) surface.WireNode { return surface.WireNode{Seq: seq, Kind: surface.KindUser} }
	empty := func(seq int64) surface.WireNode {
		return surface.WireNode{Seq: seq, Kind: surface.KindSystem, Empty: true}
	}
	asst := func(seq int64, calls ...string) surface.WireNode {
		return surface.WireNode{Seq: seq, Kind: surface.KindAssistant, Calls: calls}
	}
	res := func(seq int64, answers ...string) surface.WireNode {
		return surface.WireNode{Seq: seq, Kind: surface.KindToolResult, Answers: answers}
	}
	cases := []struct {
		name  string
		nodes []surface.WireNode
		rule  surface.Rule // "": valid
		seqs  []int64
	}{
		{"empty surface", nil, "", nil},
		{"a complete exchange", []surface.WireNode{sys(0), user(1), asst(2, "a", "b"), res(3, "a"), res(4, "b"), asst(5), user(6)}, "", nil},
		{"results in any order", []surface.WireNode{asst(2, "a", "b"), res(3, "b"), res(4, "a"), user(5)}, "", nil},
		{"a step in progress: calls without results at the end", []surface.WireNode{user(1), asst(2, "a", "b"), res(3, "a")}, "", nil},
		{"an empty node neither separates nor pairs", []surface.WireNode{asst(2, "a"), empty(3), res(4, "a"), user(5)}, "", nil},
		{"a result with no assistant before it", []surface.WireNode{sys(0), res(1, "a")}, surface.RuleToolResultOrphaned, []int64{1}},
		{"a result after a user message", []surface.WireNode{user(1), res(2, "a")}, surface.RuleToolResultOrphaned, []int64{2}},
		{"a result for another assistant's call", []surface.WireNode{asst(1, "a"), res(2, "a"), asst(3, "b"), res(4, "a")}, surface.RuleToolResultOrphaned, []int64{3, 4}},
		{"a result after an assistant without calls", []surface.WireNode{asst(1), res(2, "a")}, surface.RuleToolResultOrphaned, []int64{1, 2}},
		{"a result that answers nothing", []surface.WireNode{asst(1, "a"), res(2)}, surface.RuleToolResultOrphaned, []int64{2}},
		{"a call answered twice", []surface.WireNode{asst(1, "a"), res(2, "a"), res(3, "a")}, surface.RuleToolResultDuplicate, []int64{1, 2, 3}},
		{"a user message between a call and its result", []surface.WireNode{asst(1, "a", "b"), res(2, "a"), user(3), res(4, "b")}, surface.RuleToolResultsSeparated, []int64{1, 3, 4}},
		{"a system message between a call and its result", []surface.WireNode{asst(1, "a"), sys(2), res(3, "a")}, surface.RuleToolResultsSeparated, []int64{1, 2, 3}},
		{"a call left without a result before a user message", []surface.WireNode{asst(1, "a", "b"), res(2, "a"), user(3)}, surface.RuleToolCallUnanswered, []int64{1, 3}},
		{"a call left without a result before the next assistant", []surface.WireNode{asst(1, "a"), asst(2)}, surface.RuleToolCallUnanswered, []int64{1, 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := surface.CheckPairing(c.nodes)
			if c.rule == "" {
				require.Nil(t, err)
				return
			}
			require.NotNil(t, err)
			require.Equal(t, c.rule, err.Rule, err.Error())
			require.Equal(t, c.seqs, err.Seqs)
			require.Contains(t, err.Error(), string(c.rule)+": ")
			require.Equal(t, c.rule, surface.RuleOf(err))
		})
	}
}

// TestCheckWireSinceSeesOnlyTheChangedRegion: a violation far from the
// nodes an event changed is not that event's; one next to them is.
func TestCheckWireSinceSeesOnlyTheChangedRegion(t *testing.T) {
	l := newTLog(t)
	l.system("be brief")
	turn, step := l.OpenTurn()
	l.user("hi")
	a := l.add(pAssistant(turn, step, "a1", "", "c1"))
	l.add(pLogOnly(surface.TypeToolCall, fmt.Sprintf(`{"turn":%d,"step":%d,"callId":"c1","name":"read","arguments":"{}"}`, turn, step)))
	r := l.add(surface.Proposal{Type: surface.TypeToolResult, Op: surface.Append,
		Data: toolResult{turn: turn, step: step, id: "r1", callID: "c1", text: "out"}.data()})
	l.add(pAssistant(turn, step, "a2", "done"))
	l.user("more")
	require.Nil(t, l.CheckWire())
	next := l.NextSeq()

	// A checkpoint replacing only the assistant message orphans its result.
	bad := replacing(pUser("cp", "summary"), a, a, a)
	evs, err := l.AppendBatchChecked([]surface.Proposal{bad}, func(pl *surface.Log, first int64) error {
		if e := pl.CheckWireSince(first); e != nil {
			return e
		}
		return nil
	})
	require.Nil(t, evs)
	require.Equal(t, surface.RuleToolResultOrphaned, surface.RuleOf(err))
	require.ErrorContains(t, err, "wire/tool-result-orphaned")
	require.Equal(t, next, l.NextSeq(), "the log is unchanged")

	// A checkpoint replacing the call and its result is valid.
	good := replacing(pUser("cp", "summary"), a, r, a, r)
	_, err = l.AppendBatchChecked([]surface.Proposal{good}, func(pl *surface.Log, first int64) error {
		if e := pl.CheckWireSince(first); e != nil {
			return e
		}
		return nil
	})
	require.NoError(t, err)
	require.Nil(t, l.CheckWire())
}
