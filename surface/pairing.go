package surface

import (
	"fmt"
	"slices"
	"strings"
)

// Wire rules: the conversation rules the derived messages must satisfy
// after any proposal of a provider. They are checked by the host for every
// proposer but the loop (whose own order produces them); they are not part
// of the fold, so a log that breaks them still loads.
const (
	// A tool result answers no tool call of the nearest preceding
	// assistant message (none precedes it, or none of its calls has that id).
	RuleToolResultOrphaned Rule = "wire/tool-result-orphaned"
	// A tool result answers a call that an earlier result already answered.
	RuleToolResultDuplicate Rule = "wire/tool-result-duplicate"
	// A message other than a tool result stands between an assistant
	// message with tool calls and a result of one of those calls.
	RuleToolResultsSeparated Rule = "wire/tool-results-separated"
	// An assistant message's tool call has no result, and a message other
	// than a tool result follows it. A call may be left without a result
	// only while nothing else follows (a step in progress).
	RuleToolCallUnanswered Rule = "wire/tool-call-unanswered"
)

// WireNode is one surface node as the pairing rule sees it.
type WireNode struct {
	Seq  int64
	Kind Kind
	// Empty reports a node that projects to no message; it is invisible on
	// the wire and neither separates nor pairs anything.
	Empty bool
	// Calls are the ids of an assistant node's tool-call blocks.
	Calls []string
	// Answers are the call ids of a tool/result node's tool-result blocks.
	Answers []string
}

// PairingError is a violation of a wire rule: the rule and the seqs of the
// nodes involved, in surface order.
type PairingError struct {
	Rule Rule
	Seqs []int64
	Msg  string
}

func (e *PairingError) Error() string {
	return fmt.Sprintf("%s: %s (seqs %v)", e.Rule, e.Msg, e.Seqs)
}

// CheckPairing checks the wire rules over nodes, a contiguous part of a
// surface in order that starts at the surface's head or at a node that is
// not a tool result. Reading the visible nodes in order:
//
//   - every tool result answers a tool call of the nearest preceding
//     assistant message (wire/tool-result-orphaned), one that no earlier
//     result answered (wire/tool-result-duplicate);
//   - no message other than a tool result stands between that assistant
//     message and the result (wire/tool-results-separated);
//   - a tool call without a result is followed by nothing but tool results
//     (wire/tool-call-unanswered): it is a step still in progress.
//
// Calls left without results at the end of nodes are not reported: their
// results may lie beyond the part checked. It is pure and deterministic and
// reports the first violation in surface order.
func CheckPairing(nodes []WireNode) *PairingError {
	var last *WireNode // nearest preceding visible assistant message
	answered := map[string]int64{}
	between := int64(-1) // first visible non-result node after last
	unanswered := func() *PairingError {
		if last == nil || between < 0 {
			return nil
		}
		var open []string
		for _, id := range last.Calls {
			if _, ok := answered[id]; !ok {
				open = append(open, id)
			}
		}
		if len(open) == 0 {
			return nil
		}
		return &PairingError{Rule: RuleToolCallUnanswered, Seqs: []int64{last.Seq, between},
			Msg: fmt.Sprintf("the assistant message at seq %d has tool call(s) %s without a result, and seq %d follows it",
				last.Seq, quoteAll(open), between)}
	}
	for i := range nodes {
		n := &nodes[i]
		if n.Empty {
			continue
		}
		switch n.Kind {
		case KindToolResult:
			if len(n.Answers) == 0 {
				return &PairingError{Rule: RuleToolResultOrphaned, Seqs: []int64{n.Seq},
					Msg: fmt.Sprintf("the tool result at seq %d answers no tool call", n.Seq)}
			}
			for _, id := range n.Answers {
				switch {
				case last == nil:
					return &PairingError{Rule: RuleToolResultOrphaned, Seqs: []int64{n.Seq},
						Msg: fmt.Sprintf("the tool result at seq %d answers call %q, but no assistant message precedes it", n.Seq, id)}
				case !slices.Contains(last.Calls, id):
					return &PairingError{Rule: RuleToolResultOrphaned, Seqs: []int64{last.Seq, n.Seq},
						Msg: fmt.Sprintf("the tool result at seq %d answers call %q, which is not a call of the nearest preceding assistant message (seq %d)", n.Seq, id, last.Seq)}
				case hasKey(answered, id):
					return &PairingError{Rule: RuleToolResultDuplicate, Seqs: []int64{last.Seq, answered[id], n.Seq},
						Msg: fmt.Sprintf("the tool result at seq %d answers call %q of seq %d, already answered at seq %d", n.Seq, id, last.Seq, answered[id])}
				case between >= 0:
					return &PairingError{Rule: RuleToolResultsSeparated, Seqs: []int64{last.Seq, between, n.Seq},
						Msg: fmt.Sprintf("seq %d stands between the assistant message at seq %d and the result of its call %q at seq %d", between, last.Seq, id, n.Seq)}
				}
				answered[id] = n.Seq
			}
		case KindAssistant:
			if last != nil && between < 0 {
				between = n.Seq // it follows the previous assistant message
			}
			if err := unanswered(); err != nil {
				return err
			}
			last, between = n, -1
			clear(answered)
		default:
			if last != nil && between < 0 {
				between = n.Seq
			}
		}
	}
	return unanswered()
}

func hasKey(m map[string]int64, k string) bool { _, ok := m[k]; return ok }

func quoteAll(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return strings.Join(q, ", ")
}

// wireNode describes surface position k for the pairing rule.
func (l *Log) wireNode(k int) WireNode {
	n := l.fold.nodes[k]
	i := n.seq - l.fold.base
	w := WireNode{Seq: n.seq, Kind: n.kind}
	m := l.message(i)
	if _, vis := Project(l.events[i].Type, m); !vis {
		w.Empty = true
		return w
	}
	for _, b := range m.Content {
		switch {
		case n.kind == KindAssistant && b.Type == BlockToolCall:
			w.Calls = append(w.Calls, b.ID)
		case n.kind == KindToolResult && b.Type == BlockToolResult:
			w.Answers = append(w.Answers, b.ToolCallID)
		}
	}
	return w
}

// transparent reports whether position k is a tool result or projects to
// nothing: a window boundary never stops there.
func (l *Log) transparent(k int) bool {
	if l.fold.nodes[k].kind == KindToolResult {
		return true
	}
	w := l.wireNode(k)
	return w.Empty
}

// CheckWire checks the wire rules (CheckPairing) over the whole surface.
func (l *Log) CheckWire() *PairingError {
	nodes := make([]WireNode, len(l.fold.nodes))
	for k := range l.fold.nodes {
		nodes[k] = l.wireNode(k)
	}
	return CheckPairing(nodes)
}

// CheckWireSince checks the wire rules over the part of the surface that the
// events from seq first on changed: from the nearest message before the
// first changed node that is not a tool result, to the first such message
// after the last changed node's tool results. The rest of the surface is
// untouched by those events, so a violation there is not theirs and is not
// reported. With no changed node it reports nothing.
func (l *Log) CheckWireSince(first int64) *PairingError {
	lo, hi := -1, -1
	for k, n := range l.fold.nodes {
		if n.seq >= first {
			if lo < 0 {
				lo = k
			}
			hi = k
		}
	}
	if lo < 0 {
		return nil
	}
	for lo > 0 {
		lo--
		if !l.transparent(lo) {
			break
		}
	}
	last := len(l.fold.nodes) - 1
	for hi < last && l.transparent(hi+1) {
		hi++
	}
	if hi < last {
		hi++
	}
	nodes := make([]WireNode, 0, hi-lo+1)
	for k := lo; k <= hi; k++ {
		nodes = append(nodes, l.wireNode(k))
	}
	return CheckPairing(nodes)
}
