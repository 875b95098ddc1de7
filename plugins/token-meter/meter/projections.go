package meter

import (
	"fmt"
	"slices"

	"github.com/weirhost/weir/surface"
)

// TokenUsage is cumulative provider usage in disjoint buckets: Input is
// uncached input, cache reads and writes are separate.
type TokenUsage struct {
	Input      int64 `json:"inputTokens"`
	Output     int64 `json:"outputTokens"`
	CacheRead  int64 `json:"cacheReadTokens"`
	CacheWrite int64 `json:"cacheWriteTokens"`
}

// ContextPressure is how full the context is.
type ContextPressure struct {
	// PressureTokens is the prompt side of the newest usage sample (input
	// + cache read + cache write).
	PressureTokens int64 `json:"pressureTokens"`
	// ContextWindow is the newest request/context's contextWindow, 0 when
	// that event had none.
	ContextWindow int64 `json:"contextWindow"`
	// ProjectedTokens is max(0, PressureTokens + SurfaceTotal - the
	// surface total when the sample was taken).
	ProjectedTokens int64 `json:"projectedTokens"`
	// SurfaceTotal is the running fixed-estimator surface total, folded in
	// O(1) per event with the shadow-price protocol.
	SurfaceTotal int64 `json:"surfaceTotal"`
}

// ContextBreakdown splits the surface under the fixed estimator: the last
// non-empty surviving system/message, the header's tools, and every other
// node.
type ContextBreakdown struct {
	SystemTokens  int64 `json:"systemTokens"`
	ToolsTokens   int64 `json:"toolsTokens"`
	MessageTokens int64 `json:"messageTokens"`
}

// Projections are the pure folds of spec 12.3 that consumers read without
// a measurement: tokenUsage and contextPressure in O(1) state, and
// contextBreakdown with one compact entry per surface node. Events are
// folded plan then commit, as Meter folds them. Not safe for concurrent
// use.
type Projections struct {
	next    int64
	err     error
	st      projState
	entries []entry
	heur    *pricer
}

// projState is the O(1) part of the projections.
type projState struct {
	usage     TokenUsage
	last      surface.Usage // the newest sample
	lastAt    stepRef
	sampled   bool
	pressure  int64
	window    int64
	total     int64 // running surface total
	sampledAt int64 // total when the newest sample was taken
	claim     *claim
	tools     int64
	sum       int64 // sum of entry prices
}

// claim is an armed shadow price: the next replace must name rng and
// replaces nodes priced count.
type claim struct {
	start, end int64
	count      int64
}

// entry is one surface node of the breakdown.
type entry struct {
	seq    int64
	price  int64
	system bool // a non-empty system/message
}

// NewProjections returns the projections of an empty session.
func NewProjections() *Projections { return &Projections{heur: newPricer(nil)} }

// Observe folds the committed event e, which must carry the next seq. A
// rejected event leaves the projections unchanged and is rejected
// identically when observed again.
func (p *Projections) Observe(e surface.Event) error {
	if e.Seq != p.next {
		if p.err != nil {
			return &Error{Seq: e.Seq, Type: e.Type, Msg: fmt.Sprintf("the projections are stopped at seq %d: %v", p.next, p.err)}
		}
		return &Error{Seq: e.Seq, Type: e.Type, Msg: fmt.Sprintf("seq %d is not contiguous: the projections expect seq %d", e.Seq, p.next)}
	}
	st := p.st
	held := st.claim
	st.claim = nil // any event but the replace it is for expires a claim
	var op surface.OpKind
	var from, to int
	var ent entry
	fail := func(err *Error) error { p.err = err; return err }
	switch k := kindOf(e.Type); {
	case e.Type == surface.TypeCompactionSummary || e.Type == surface.TypeCompactionPrune:
		w, err := decodeShadowPrice(e.Data)
		if err != nil {
			return fail(errorf(&e, "unreadable shadow price: %v", err))
		}
		if w.hasRange {
			if w.start == nil || w.end == nil || w.count == nil {
				return fail(errorf(&e, "shadowedRange needs start and end, and shadowedTokenCount must be given"))
			}
			st.claim = &claim{start: *w.start, end: *w.end, count: *w.count}
		}
	case e.Type == surface.TypeRequestHeader:
		h, err := readHeader(&e)
		if err != nil {
			return fail(err)
		}
		st.tools = EstimateTools(h.Tools)
	case e.Type == surface.TypeRequestContext:
		w, err := decodeContextWindow(e.Data)
		if err != nil {
			return fail(errorf(&e, "unreadable request context: %v", err))
		}
		st.window = 0
		if w != nil {
			st.window = *w
		}
	case k != 0:
		d, err := readSurface(&e, k)
		if err != nil {
			return fail(err)
		}
		price, perr := p.heur.node(keyOf(k, d.content), k, d.lazy())
		if perr != nil {
			return fail(errorf(&e, "%v", perr))
		}
		ent = entry{seq: e.Seq, price: price, system: k == kindSystem && !emptyArray(d.content)}
		if d.usage != nil && k == kindAssistant {
			u := *d.usage
			if st.sampled && d.hasStep && st.lastAt == d.at {
				st.usage.sub(st.last)
			}
			st.usage.add(u)
			st.last, st.lastAt, st.sampled = u, d.at, true
			st.pressure = u.Input + u.CacheRead + u.CacheWrite
			st.sampledAt = st.total
		}
		switch e.Op.Kind {
		case surface.OpAppend:
			op, from, to = surface.OpAppend, len(p.entries), len(p.entries)-1
			st.total += price
		case surface.OpReplace:
			op = surface.OpReplace
			if from, to = p.position(e.Op.Start), p.position(e.Op.End); from < 0 || to < 0 || from > to {
				return fail(errorf(&e, "replace range seq %d..%d is not on the surface", e.Op.Start, e.Op.End))
			}
			if held != nil {
				if held.start != e.Op.Start || held.end != e.Op.End {
					return fail(errorf(&e, "the armed shadow price claims range %d..%d, but the replace names %d..%d", held.start, held.end, e.Op.Start, e.Op.End))
				}
				st.total += price - held.count
			}
			for i := from; i <= to; i++ {
				st.sum -= p.entries[i].price
			}
		default:
			return fail(errorf(&e, "surface event without surfaceOp"))
		}
		st.sum += price
	}
	// Commit.
	p.next++
	p.err = nil
	p.st = st
	switch op {
	case surface.OpAppend:
		p.entries = append(p.entries, ent)
	case surface.OpReplace:
		p.entries = slices.Replace(p.entries, from, to+1, ent)
	}
	if op != 0 {
		p.heur.trim(nil)
	}
	return nil
}

func (u *TokenUsage) add(s surface.Usage) {
	u.Input += s.Input
	u.Output += s.Output
	u.CacheRead += s.CacheRead
	u.CacheWrite += s.CacheWrite
}

func (u *TokenUsage) sub(s surface.Usage) {
	u.Input -= s.Input
	u.Output -= s.Output
	u.CacheRead -= s.CacheRead
	u.CacheWrite -= s.CacheWrite
}

func (p *Projections) position(seq int64) int {
	for i := len(p.entries) - 1; i >= 0; i-- {
		if p.entries[i].seq == seq {
			return i
		}
	}
	return -1
}

// Revision is the seq of the next event the projections fold.
func (p *Projections) Revision() int64 { return p.next }

// Err is why the event at Revision could not be folded, or nil.
func (p *Projections) Err() error { return p.err }

// TokenUsage returns the cumulative usage.
func (p *Projections) TokenUsage() TokenUsage { return p.st.usage }

// ContextPressure returns the context pressure.
func (p *Projections) ContextPressure() ContextPressure {
	s := &p.st
	return ContextPressure{PressureTokens: s.pressure, ContextWindow: s.window,
		ProjectedTokens: max(0, s.pressure+s.total-s.sampledAt), SurfaceTotal: s.total}
}

// ContextBreakdown returns the breakdown of the surface.
func (p *Projections) ContextBreakdown() ContextBreakdown {
	var sys int64
	for i := len(p.entries) - 1; i >= 0; i-- {
		if p.entries[i].system {
			sys = p.entries[i].price
			break
		}
	}
	return ContextBreakdown{SystemTokens: sys, ToolsTokens: p.st.tools, MessageTokens: p.st.sum - sys}
}
