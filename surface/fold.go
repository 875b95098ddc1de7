package surface

import "slices"

// node is one surface position.
type node struct {
	seq   int64
	kind  Kind
	calls int32 // tool-call blocks of an assistant node
}

// fold is the surface state machine: the ordered node list and both
// generation counters. It does no I/O and reads earlier events only through
// the lookup its caller passes.
type fold struct {
	base       int64 // absolute seq of the first event folded
	next       int64 // seq the next event must carry
	nodes      []node
	replaceGen uint64
	contentGen uint64
}

// transition is a planned, not yet committed, change of a fold.
type transition struct {
	kind     OpKind // OpNone: the event does not touch the surface
	from, to int    // replaced positions, inclusive
	node     node
	shadowed []int64
}

// lookupFunc returns an earlier event of the same log, or nil when it lies
// before the folded window.
type lookupFunc func(seq int64) *Event

// plan validates e as the next event (section 4.3, steps 1-9) and returns the
// transition that commits it. It changes nothing.
func (f *fold) plan(e *Event, p *payload, lookup lookupFunc) (transition, *Error) {
	if e.Seq != f.next {
		return transition{}, errorf(f.next, e.Type, RuleContiguous, "seq %d is not contiguous: expected seq %d", e.Seq, f.next)
	}
	kind := KindOf(e.Type)
	if e.Type == "request/header-delta" {
		return transition{}, errorf(e.Seq, e.Type, RuleHeader, "legacy request/header-delta events are refused in format v3, ignorable or not")
	}
	if kind == KindUnknown {
		if e.Ignorable {
			return transition{}, nil
		}
		return transition{}, errorf(e.Seq, e.Type, RuleUnknownType, "unknown event type %q without ignorable: true", e.Type)
	}
	if !kind.IsSurface() {
		if e.Op.Kind != OpNone || e.Sources != nil {
			return transition{}, errorf(e.Seq, e.Type, RuleEligibility, "log-only event %s must not carry surfaceOp or sourceEventSeqs", e.Type)
		}
		return transition{}, nil
	}
	if e.Op.Kind == OpNone {
		return transition{}, errorf(e.Seq, e.Type, RuleEligibility, "surface event %s requires surfaceOp", e.Type)
	}
	if e.Op.Kind == OpReplace {
		for _, s := range [2]int64{e.Op.Start, e.Op.End} {
			if s < 0 || s >= e.Seq {
				return transition{}, errorf(e.Seq, e.Type, RuleSurfaceOp, "replace startSeq %d / endSeq %d must reference earlier events", e.Op.Start, e.Op.End)
			}
		}
	}
	if err := checkSources(e, kind); err != nil {
		return transition{}, err
	}
	n := node{seq: e.Seq, kind: kind}
	if kind == KindAssistant {
		n.calls = p.calls
	}
	if e.Op.Kind == OpAppend {
		return transition{kind: OpAppend, node: n}, nil
	}
	from := f.position(e.Op.Start)
	if from < 0 {
		return transition{}, errorf(e.Seq, e.Type, RuleRange, "replace start seq %d not found in surface", e.Op.Start)
	}
	to := f.position(e.Op.End)
	if to < 0 {
		return transition{}, errorf(e.Seq, e.Type, RuleRange, "replace end seq %d not found in surface", e.Op.End)
	}
	if from > to {
		return transition{}, errorf(e.Seq, e.Type, RuleRange, "replace start seq %d (node %d) is after end seq %d (node %d)", e.Op.Start, from, e.Op.End, to)
	}
	shadowed := make([]int64, 0, to-from+1)
	var missing []int64
	for _, nd := range f.nodes[from : to+1] {
		shadowed = append(shadowed, nd.seq)
		if !slices.Contains(e.Sources, nd.seq) {
			missing = append(missing, nd.seq)
		}
	}
	if missing != nil {
		return transition{}, errorf(e.Seq, e.Type, RuleCoverage, "replace must cite every shadowed node in sourceEventSeqs; missing %v", missing)
	}
	if kind == KindToolResult {
		if err := checkToolRewrite(e, f.nodes[from:to+1], lookup); err != nil {
			return transition{}, err
		}
	}
	if err := assertSystemHeadRewrite(f.nodes, e, kind, from, to); err != nil {
		return transition{}, err
	}
	return transition{kind: OpReplace, from: from, to: to, node: n, shadowed: shadowed}, nil
}

// assertSystemHeadRewrite is the system-head protection of spec 4.5: once
// surface node 0 holds a system message, the only replacement that may
// cover it is a single-node system/message replacement. It runs for every
// replacement the fold plans, so it binds every proposer alike: the loop,
// first-party plugins and third-party compaction providers.
func assertSystemHeadRewrite(nodes []node, e *Event, kind Kind, from, to int) *Error {
	if from == 0 && nodes[0].kind == KindSystem && (kind != KindSystem || to != 0) {
		return errorf(e.Seq, e.Type, RuleSystemHead,
			"%s: only a single-node system/message replacement may rewrite it (proposed %s over nodes %d..%d)", headMsg, e.Type, from, to)
	}
	return nil
}

// commit applies a planned transition. t must come from plan on the same state.
func (f *fold) commit(t transition) {
	f.next++
	switch t.kind {
	case OpAppend:
		f.nodes = append(f.nodes, t.node)
	case OpReplace:
		f.nodes[t.from] = t.node
		f.nodes = slices.Delete(f.nodes, t.from+1, t.to+1)
		f.replaceGen++
		f.contentGen++
	}
}

func (f *fold) position(seq int64) int {
	for i := range f.nodes {
		if f.nodes[i].seq == seq {
			return i
		}
	}
	return -1
}

// maxSources bounds sourceEventSeqs (16M seqs, far beyond any real
// replacement) so that a compressed run on disk cannot expand without limit.
const maxSources = 1 << 24

func checkSources(e *Event, kind Kind) *Error {
	if e.Sources == nil {
		return nil
	}
	if kind == KindAssistant {
		return errorf(e.Seq, e.Type, RuleSources, "assistant/message must not carry sourceEventSeqs (its stream is embedded)")
	}
	if len(e.Sources) == 0 {
		return errorf(e.Seq, e.Type, RuleSources, "sourceEventSeqs must be non-empty when present")
	}
	if len(e.Sources) > maxSources {
		return errorf(e.Seq, e.Type, RuleSources, "sourceEventSeqs has %d seqs, more than %d", len(e.Sources), maxSources)
	}
	for i, s := range e.Sources {
		if s < 0 || s > MaxSeq {
			return errorf(e.Seq, e.Type, RuleSources, "sourceEventSeqs[%d] = %d is not a non-negative safe integer", i, s)
		}
		if s >= e.Seq {
			return errorf(e.Seq, e.Type, RuleSources, "sourceEventSeqs[%d] = %d must be less than the event's own seq %d", i, s, e.Seq)
		}
	}
	if len(e.Sources) <= 32 {
		for i, s := range e.Sources {
			if slices.Contains(e.Sources[:i], s) {
				return errorf(e.Seq, e.Type, RuleSources, "sourceEventSeqs has duplicate %d", s)
			}
		}
		return nil
	}
	seen := make(map[int64]struct{}, len(e.Sources))
	for _, s := range e.Sources {
		if _, dup := seen[s]; dup {
			return errorf(e.Seq, e.Type, RuleSources, "sourceEventSeqs has duplicate %d", s)
		}
		seen[s] = struct{}{}
	}
	return nil
}

// checkToolRewrite enforces 4.6: a tool/result replacement rewrites exactly
// one current tool/result and may change only the inner result content.
func checkToolRewrite(e *Event, shadowed []node, lookup lookupFunc) *Error {
	if len(shadowed) != 1 {
		return errorf(e.Seq, e.Type, RuleToolRewrite, "a tool/result replacement must rewrite exactly one current node, not %d", len(shadowed))
	}
	if shadowed[0].kind != KindToolResult {
		return errorf(e.Seq, e.Type, RuleToolRewrite, "a tool/result replacement must target a current tool/result")
	}
	orig := lookup(shadowed[0].seq)
	if orig == nil {
		return errorf(e.Seq, e.Type, RuleToolRewrite, "a tool/result replacement must target a current tool/result")
	}
	if !sameExceptResultContent(orig.Data, e.Data) {
		return errorf(e.Seq, e.Type, RuleToolRewrite, "a tool/result replacement may change only content (the tool-result block's inner content)")
	}
	return nil
}

// validData checks that data is one lossless JSON object (2.1): valid
// syntax and UTF-8, no duplicate keys, no -0.
func validData(e *Event) *Error {
	if len(e.Data) == 0 {
		return errorf(e.Seq, e.Type, RuleEnvelope, "missing data")
	}
	p := &parser{b: e.Data}
	if p.peek() != '{' {
		p.fail(RuleEnvelope, errNotObject)
	} else {
		p.value(0)
		if p.err == "" && p.peek() != 0 {
			p.fail(RuleEnvelope, "data after the JSON object")
		}
	}
	if p.err != "" {
		return dataError(e, p)
	}
	return nil
}
