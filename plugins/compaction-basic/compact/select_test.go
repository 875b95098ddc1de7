package compact

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

const (
	S = surface.TypeSystemMessage
	U = surface.TypeUserMessage
	A = surface.TypeAssistantMessage
	T = surface.TypeToolResult
)

// nodes builds a surface of the given types with seqs 10, 11, ...; an
// assistant node's tool calls are given as A+n entries in calls.
func nodes(typs ...string) []Node {
	out := make([]Node, len(typs))
	for i, t := range typs {
		out[i] = Node{Seq: int64(10 + i), Type: t}
	}
	return out
}

func withCalls(ns []Node, at, calls int) []Node { ns[at].ToolCalls = calls; return ns }

func priced(ns []Node, tokens ...int64) *Measurement {
	m := &Measurement{}
	for i, n := range ns {
		m.Nodes = append(m.Nodes, NodeTokens{Seq: n.Seq, Tokens: tokens[i], HeuristicTokens: tokens[i]})
		m.TotalTokens += tokens[i]
	}
	return m
}

func TestI88_SelectRangeKeepsTail(t *testing.T) {
	ns := nodes(S, U, A, U, A, U)
	m := priced(ns, 10, 100, 100, 100, 100, 100)
	for _, tc := range []struct {
		retain   int64
		from, to int64
		ok       bool
	}{
		{0, 11, 14, true},   // retain 0: only the last node is kept
		{100, 11, 14, true}, // the last node reaches 100
		{101, 11, 13, true}, // two nodes kept
		{300, 11, 12, true},
		{400, 11, 11, true},
		{401, 0, 0, false}, // the tail reaches the first compactable node
		{10000, 0, 0, false},
	} {
		s, ok, err := SelectRange(ns, m, tc.retain)
		require.NoError(t, err)
		require.Equal(t, tc.ok, ok, "retain %d", tc.retain)
		if ok {
			require.Equal(t, Span{tc.from, tc.to}, s, "retain %d", tc.retain)
		}
	}
	// A user head is compactable: the range starts at node 0.
	ns = nodes(U, A, U)
	s, ok, err := SelectRange(ns, priced(ns, 5, 5, 5), 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, Span{10, 11}, s)
}

func TestI90_OnlySystemHeadBeforeTail(t *testing.T) {
	ns := nodes(S, U)
	_, ok, err := SelectRange(ns, priced(ns, 50, 500), 100)
	require.NoError(t, err)
	require.False(t, ok, "the tail starts right after the head")
	ns = nodes(S, U, A)
	_, ok, err = SelectRange(ns, priced(ns, 50, 60, 60), 100)
	require.NoError(t, err)
	require.False(t, ok)
	// Empty head: still protected, still not compactable.
	ns = nodes(S, U)
	_, ok, err = SelectRange(ns, priced(ns, 0, 5), 0)
	require.NoError(t, err)
	require.False(t, ok)
	// No priced nodes: none, whatever the surface.
	_, ok, err = SelectRange(nodes(S, U, U), &Measurement{}, 0)
	require.NoError(t, err)
	require.False(t, ok)
}

func TestI91_CutMovesOutOfToolPairs(t *testing.T) {
	// [S, U, A(call), T, U]: keeping the last two nodes would cut the pair.
	ns := withCalls(nodes(S, U, A, T, U), 2, 1)
	s, ok, err := SelectRange(ns, priced(ns, 1, 50, 50, 50, 50), 100)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, Span{11, 11}, s, "the cut moved head-ward before the assistant node")
	// Two calls answered by two results: cuts inside are unbalanced.
	ns = withCalls(nodes(S, U, A, T, T, A), 2, 2)
	s, ok, err = SelectRange(ns, priced(ns, 1, 5, 5, 5, 5, 5), 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, Span{11, 14}, s, "the cut before the last assistant is balanced")
	s, ok, err = SelectRange(ns, priced(ns, 1, 5, 5, 5, 5, 5), 6)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, Span{11, 11}, s)
	// One indivisible pair: nothing.
	ns = withCalls(nodes(A, T), 0, 1)
	_, ok, err = SelectRange(ns, priced(ns, 5, 5), 0)
	require.NoError(t, err)
	require.False(t, ok)
	// A head and one pair: nothing either.
	ns = withCalls(nodes(S, A, T), 1, 1)
	_, ok, err = SelectRange(ns, priced(ns, 5, 5, 5), 0)
	require.NoError(t, err)
	require.False(t, ok)
}

func TestI91_IndivisiblePairWritesNothingEvenOnOverflow(t *testing.T) {
	b := newBuilder(t).open()
	b.header("p", "m", 0)
	b.asst("", "c1")
	b.result("c1", words(400))
	s := b.session()
	cfg := DefaultConfig()
	cfg.Policy.HeadroomTokens = 0
	for _, reason := range []Reason{Overflow, Pressure} {
		out, err := Compact(s, cfg, Request{Reason: reason, Turn: 1,
			Route: Route{Provider: "p", Model: "m", ContextWindow: 200}}, &State{})
		require.NoError(t, err)
		require.NoError(t, out.Warning)
		require.Empty(t, out.Proposals, "%s", reason)
	}
	out, err := Compact(s, DefaultConfig(), Request{Reason: Region, Turn: 1, Span: Span{3, 3}}, &State{})
	require.ErrorContains(t, err, "not a balanced boundary")
	require.Empty(t, out.Proposals)
	require.Empty(t, s.calls, "no summarization")
}

func TestI91_BalanceCorruption(t *testing.T) {
	_, err := Balances(nodes(U, T))
	require.ErrorContains(t, err, "surface corruption: tool/result at seq 11 (node 1)")
	bal, err := Balances(withCalls(nodes(U, A, T, T), 1, 2))
	require.NoError(t, err)
	require.Equal(t, []int{0, 0, 2, 1, 0}, bal)
}

func TestI92_MeasurementMustMatchSurface(t *testing.T) {
	ns := nodes(S, U, U)
	other := nodes(S, U, U)
	other[2].Seq = 99
	_, _, err := SelectRange(ns, priced(other, 1, 1, 1), 0)
	require.ErrorContains(t, err, "does not match")
	_, _, err = SelectRange(ns, priced(nodes(S, U), 1, 1), 0)
	require.ErrorContains(t, err, "does not match")

	// Through Compact: the error comes before any event.
	b := newBuilder(t).open()
	b.header("p", "m", 0)
	b.sys("prompt")
	b.user(words(50))
	b.user(words(50))
	s := b.session()
	s.measure = func(s *fakeSession) (*Measurement, error) {
		m, err := Estimate(s)
		m.Nodes = m.Nodes[1:]
		return m, err
	}
	out, err := Compact(s, DefaultConfig(), Request{Reason: Overflow, Turn: 1}, &State{})
	require.ErrorContains(t, err, "does not match")
	require.Empty(t, out.Proposals)
	require.Empty(t, s.calls)
}
