package compact

import (
	"fmt"

	"github.com/weirhost/weir/surface"
)

// Span is an inclusive positional range of the surface, named by the seqs
// of its first and last nodes.
type Span struct{ Start, End int64 }

// Balances returns the tool-pairing balance at every cut of the surface
// (spec 11.5): b[k] is the number of open tool calls before node k, and
// b[len(nodes)] after the last node. An assistant node opens its tool calls,
// a tool/result node closes one. A cut is balanced when its balance is 0.
// A negative balance is surface corruption and an error.
func Balances(nodes []Node) ([]int, error) {
	b := make([]int, len(nodes)+1)
	bal := 0
	for i, n := range nodes {
		switch n.Type {
		case surface.TypeAssistantMessage:
			bal += n.ToolCalls
		case surface.TypeToolResult:
			bal--
			if bal < 0 {
				return nil, fmt.Errorf("surface corruption: tool/result at seq %d (node %d) answers no open tool call", n.Seq, i)
			}
		}
		b[i+1] = bal
	}
	return b, nil
}

// firstIndex is the first position an automatic range may start at: 1
// when node 0 is a system/message (empty or not), else 0.
func firstIndex(nodes []Node) int {
	if len(nodes) > 0 && nodes[0].Type == surface.TypeSystemMessage {
		return 1
	}
	return 0
}

// SelectRange picks the range automatic compaction replaces
// (selectCompactableRange, spec 11.4): from the first node after a system
// head up to the last node before the verbatim tail, where the tail is the
// shortest suffix whose prices reach retain (with retain 0 only the last
// node), moved head-ward until the cut before it is tool-pairing balanced.
// It reports false when there is nothing to compact. The measurement must
// price exactly the given nodes, in order.
func SelectRange(nodes []Node, m *Measurement, retain int64) (Span, bool, error) {
	if m == nil || len(m.Nodes) == 0 {
		return Span{}, false, nil
	}
	if err := matches(nodes, m); err != nil {
		return Span{}, false, err
	}
	from, to, ok, err := selectIndices(nodes, m.Nodes, retain)
	if err != nil || !ok {
		return Span{}, false, err
	}
	return Span{Start: nodes[from].Seq, End: nodes[to].Seq}, true, nil
}

func selectIndices(nodes []Node, prices []NodeTokens, retain int64) (from, to int, ok bool, err error) {
	first := firstIndex(nodes)
	keep := 0
	var sum int64
	for i := len(nodes) - 1; i >= 0; i-- {
		sum += prices[i].Tokens
		if sum >= retain {
			keep = i
			break
		}
	}
	if keep <= first {
		return 0, 0, false, nil
	}
	bal, err := Balances(nodes)
	if err != nil {
		return 0, 0, false, err
	}
	for keep > first && bal[keep] != 0 {
		keep--
	}
	if keep <= first {
		return 0, 0, false, nil
	}
	return first, keep - 1, true, nil
}

// matches checks that a measurement prices exactly the surface nodes.
func matches(nodes []Node, m *Measurement) error {
	if len(m.Nodes) != len(nodes) {
		return fmt.Errorf("the measurement does not match the surface: it prices %d nodes, the surface has %d", len(m.Nodes), len(nodes))
	}
	for i := range nodes {
		if m.Nodes[i].Seq != nodes[i].Seq {
			return fmt.Errorf("the measurement does not match the surface: node %d is seq %d on the surface but seq %d in the measurement", i, nodes[i].Seq, m.Nodes[i].Seq)
		}
	}
	return nil
}

// locate resolves an explicit span to positions (spec 11.6 step 1): both
// seqs on the surface, start not after end, balanced before the start and
// after the end.
func locate(nodes []Node, s Span) (from, to int, err error) {
	from, to = -1, -1
	for i, n := range nodes {
		if n.Seq == s.Start {
			from = i
		}
		if n.Seq == s.End {
			to = i
		}
	}
	switch {
	case from < 0:
		return 0, 0, fmt.Errorf("compaction span: start seq %d not found in surface", s.Start)
	case to < 0:
		return 0, 0, fmt.Errorf("compaction span: end seq %d not found in surface", s.End)
	case from > to:
		return 0, 0, fmt.Errorf("compaction span: start seq %d (node %d) is after end seq %d (node %d)", s.Start, from, s.End, to)
	}
	bal, err := Balances(nodes)
	if err != nil {
		return 0, 0, err
	}
	if bal[from] != 0 {
		return 0, 0, fmt.Errorf("compaction span: the cut before start seq %d is not a balanced boundary (%d tool calls open)", s.Start, bal[from])
	}
	if bal[to+1] != 0 {
		return 0, 0, fmt.Errorf("compaction span: the cut after end seq %d is not a balanced boundary (%d tool calls open)", s.End, bal[to+1])
	}
	return from, to, nil
}
