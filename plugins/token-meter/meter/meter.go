package meter

import (
	"errors"
	"fmt"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/surface"
)

// Baselines of a measurement.
const (
	BaselineNone      = "none"
	BaselineUsage     = "usage"
	BaselineEstimated = "estimated"
)

// Measurement is a token snapshot of the surface (spec 12.2). It shares
// nothing with the meter.
type Measurement struct {
	// LogRevision is the seq of the next event to fold: the number of
	// events consumed.
	LogRevision int64 `json:"logRevision"`
	// Baseline is "none", "usage" or "estimated"; BaselineTokens its value.
	Baseline       string `json:"baseline"`
	BaselineTokens int64  `json:"baselineTokens"`
	// SurfaceDeltaTokens is the surface change since the anchor.
	SurfaceDeltaTokens int64 `json:"surfaceDeltaTokens"`
	// TotalTokens is max(0, BaselineTokens + SurfaceDeltaTokens).
	TotalTokens int64 `json:"totalTokens"`
	// SurfaceTokens is the sum of the node prices.
	SurfaceTokens int64  `json:"surfaceTokens"`
	Nodes         []Node `json:"nodes"`
	// Breakdown splits SurfaceTokens and the tool schemas by category.
	Breakdown Breakdown `json:"breakdown"`
	// EstimateError is the meter's estimate of the last call with usage
	// minus that usage's total (positive: the meter over-estimated); nil
	// when no call reported usage.
	EstimateError *int64 `json:"estimateError,omitzero"`
	// Tokenizer names the tokenizer that priced Nodes[i].Tokens.
	Tokenizer string `json:"tokenizer,omitzero"`
}

// Node is the price of one surface node: Tokens under the route's
// tokenizer, HeuristicTokens under the fixed estimator (spec 12.1).
type Node struct {
	Seq             int64 `json:"seq"`
	Tokens          int64 `json:"tokens"`
	HeuristicTokens int64 `json:"heuristicTokens"`
}

// Breakdown splits a measurement by category, in route-priced tokens.
// System is the last non-empty surviving system/message; earlier in-history
// system nodes are history and count under User with the user messages.
// User + Assistant + ToolResults + System == SurfaceTokens; Tools is the
// price of the header's tool schemas.
type Breakdown struct {
	System      int64 `json:"system"`
	User        int64 `json:"user"`
	Assistant   int64 `json:"assistant"`
	ToolResults int64 `json:"toolResults"`
	Tools       int64 `json:"tools"`
}

// node is what the meter knows of one surface position besides its
// prices and content. It holds no pointers, so replacing a range of a
// long surface moves memory without the collector's write barriers.
type node struct {
	kind nodeKind
	vis  bool // projects to a model message
	key  contentKey
}

// anchor is the state captured at the latest assistant/message.
type anchor struct {
	header    *surface.Header
	surface   int64 // price of the nodes before the assistant node
	assistant int64 // assistantTokens
	tools     int64 // price of the header's tools
	usage     *surface.Usage
}

// Meter is the token meter's replay state, folded event by event. It is
// not safe for concurrent use.
type Meter struct {
	res        *resolver
	heur       *pricer // the fixed estimator
	route      *pricer // the tokenizer of the current header's route
	reassemble func([]byte) ([]surface.Block, error)
	content    func(seq int64) ([]byte, error)

	next   int64 // seq of the next event to fold
	err    error // why the event at next could not be folded
	header *surface.Header
	tools  int64 // price of header's tools under route
	open   bool
	step   stepRef
	nodes  []node
	prices []Node // parallel to nodes; Tokens under route
	// raw holds the content arrays of surface nodes by seq, to price them
	// under another tokenizer; a node missing here (a meter restored from
	// a blob) is loaded through content on first need.
	raw    map[int64][]byte
	sumTok int64
	sums   [kindTool + 1]int64 // Tokens by node kind
	// lastSys is the position of the last non-empty system node, -1 when
	// there is none.
	lastSys int
	anchor  *anchor
}

// New returns an empty meter. It fails when the configuration names a
// tokenizer it does not know.
func New(cfg Config) (*Meter, error) {
	res, err := newResolver(cfg)
	if err != nil {
		return nil, err
	}
	m := &Meter{res: res, reassemble: cfg.Reassemble, content: cfg.Content, heur: newPricer(nil), lastSys: -1,
		raw: map[int64][]byte{}}
	res.pricers[Heuristic] = m.heur
	m.route = res.pricer(nil)
	return m, nil
}

// load returns node i's content: a meter restored from a state blob loads
// it through Config.Content on first need.
func (m *Meter) load(i int) ([]byte, error) {
	seq := m.prices[i].Seq
	if raw := m.raw[seq]; raw != nil {
		return raw, nil
	}
	if m.content == nil {
		return nil, errors.New("the meter was restored without contents and has no content source")
	}
	raw, err := m.content(seq)
	if errors.Is(err, ErrNoContent) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("loading its content: %w", err)
	}
	if k := jsontext.Value(raw).Kind(); k != '[' {
		return nil, errors.New("loading its content: the content source did not return a JSON array")
	}
	m.raw[seq], m.nodes[i].key = raw, keyOf(m.nodes[i].kind, raw)
	return raw, nil
}

// Revision is the seq of the next event the meter folds.
func (m *Meter) Revision() int64 { return m.next }

// Err is the error of the event the meter is stopped at, nil while it
// folds on.
func (m *Meter) Err() error { return m.err }

// change is a planned, not yet committed, fold of one event.
type change struct {
	header *surface.Header
	route  *pricer
	retok  []int64 // node prices under route when it changes
	tools  int64

	stepOp int // 0 none, 1 open, 2 close
	step   stepRef

	op       surface.OpKind
	from, to int
	node     node
	raw      []byte // the node's content
	price    Node
	anchor   *anchor
}

// Observe folds the committed event e, which must carry the next seq. The
// fold is planned, then committed: when e cannot be folded, the meter is
// unchanged, stays at e's seq, Measure fails with the same error, and
// observing e again fails identically.
func (m *Meter) Observe(e surface.Event) error {
	if e.Seq != m.next {
		if m.err != nil {
			return &Error{Seq: e.Seq, Type: e.Type, Msg: fmt.Sprintf("the meter is stopped at seq %d: %v", m.next, m.err)}
		}
		return &Error{Seq: e.Seq, Type: e.Type, Msg: fmt.Sprintf("seq %d is not contiguous: the meter expects seq %d", e.Seq, m.next)}
	}
	c, err := m.plan(&e)
	if err != nil {
		if !err.load {
			m.err = err // the event cannot be folded: stop here
		}
		return err
	}
	m.commit(c)
	m.err = nil
	return nil
}

// Inert reports whether events of type typ leave the meter as it is
// except for its revision: every type but the surface messages,
// request/header, step/start and step/end. Skip folds such an event
// without its data.
func Inert(typ string) bool {
	switch typ {
	case surface.TypeRequestHeader, surface.TypeStepStart, surface.TypeStepEnd:
		return false
	}
	return kindOf(typ) == 0
}

// Skip folds an inert event (Inert) of seq and typ without decoding it:
// the same as Observe of the event.
func (m *Meter) Skip(seq int64, typ string) error {
	if !Inert(typ) {
		return &Error{Seq: seq, Type: typ, Msg: "a " + typ + " event is not inert: it must be observed"}
	}
	if seq != m.next {
		return m.Observe(surface.Event{Seq: seq, Type: typ})
	}
	m.next++
	m.err = nil
	return nil
}

func (m *Meter) plan(e *surface.Event) (*change, *Error) {
	c := &change{}
	switch e.Type {
	case surface.TypeRequestHeader:
		h, err := readHeader(e)
		if err != nil {
			return nil, err
		}
		c.header, c.route = h, m.res.pricer(h)
		c.tools = c.route.tools(h.Tools)
		if c.route != m.route {
			c.retok = make([]int64, len(m.nodes))
			for i := range m.nodes {
				raw, err := m.load(i)
				if errors.Is(err, ErrNoContent) {
					c.retok[i] = m.prices[i].Tokens // shadowed by an event still to come
					continue
				} else if err != nil {
					err := errorf(e, "surface node %d (seq %d): %v", i, m.prices[i].Seq, err)
					err.load = true
					return nil, err
				}
				n := &m.nodes[i]
				var perr error
				if c.retok[i], perr = c.route.node(n.key, n.kind, &lazyBlocks{raw: raw}); perr != nil {
					return nil, errorf(e, "surface node %d (seq %d): %v", i, m.prices[i].Seq, perr)
				}
			}
		}
		return c, nil
	case surface.TypeStepStart, surface.TypeStepEnd:
		s, err := readStep(e)
		if err != nil {
			return nil, err
		}
		if e.Type == surface.TypeStepStart {
			if m.open {
				return nil, errorf(e, "step/start turn %d step %d while turn %d step %d is open", s.turn, s.step, m.step.turn, m.step.step)
			}
			c.stepOp, c.step = 1, s
			return c, nil
		}
		if !m.open {
			return nil, errorf(e, "step/end turn %d step %d closes no open step", s.turn, s.step)
		}
		if s != m.step {
			return nil, errorf(e, "step/end turn %d step %d does not match the open step, turn %d step %d", s.turn, s.step, m.step.turn, m.step.step)
		}
		c.stepOp = 2
		return c, nil
	}
	k := kindOf(e.Type)
	if k == 0 {
		return c, nil // log-only or unknown: consumed, nothing to price
	}
	d, err := readSurface(e, k)
	if err != nil {
		return nil, err
	}
	switch e.Op.Kind {
	case surface.OpAppend:
		c.op, c.from, c.to = surface.OpAppend, len(m.nodes), len(m.nodes)-1
	case surface.OpReplace:
		c.op = surface.OpReplace
		if c.from, c.to, err = m.locate(e); err != nil {
			return nil, err
		}
	default:
		return nil, errorf(e, "surface event without surfaceOp")
	}
	if c.node, c.price, err = m.price(e, &d); err != nil {
		return nil, err
	}
	c.raw = d.content
	if k == kindAssistant {
		if !m.open {
			return nil, errorf(e, "assistant/message names turn %d step %d, but no step is open", d.at.turn, d.at.step)
		}
		if !d.hasStep || d.at != m.step {
			return nil, errorf(e, "assistant/message names turn %d step %d, but the open step is turn %d step %d", d.at.turn, d.at.step, m.step.turn, m.step.step)
		}
		if c.anchor, err = m.capture(e, &d, c.price.Tokens); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// locate resolves the positions a replace names (spec 4.3 step 6).
func (m *Meter) locate(e *surface.Event) (from, to int, err *Error) {
	from, to = m.position(e.Op.Start), -1
	if from >= 0 {
		// A valid range ends at or after its start: look there first.
		for i := from; i < len(m.prices); i++ {
			if m.prices[i].Seq == e.Op.End {
				to = i
				break
			}
		}
	}
	if to < 0 {
		to = m.position(e.Op.End)
	}
	switch {
	case from < 0:
		return 0, 0, errorf(e, "replace start seq %d not found in surface", e.Op.Start)
	case to < 0:
		return 0, 0, errorf(e, "replace end seq %d not found in surface", e.Op.End)
	case from > to:
		return 0, 0, errorf(e, "replace start seq %d (node %d) is after end seq %d (node %d)", e.Op.Start, from, e.Op.End, to)
	}
	return from, to, nil
}

// position is the surface position of seq, or -1. Seqs on the surface
// are distinct, so it searches from both ends at once: compactions replace
// near the front, rewrites of recent tool results near the back.
func (m *Meter) position(seq int64) int {
	for i, j := 0, len(m.prices)-1; i <= j; i, j = i+1, j-1 {
		if m.prices[i].Seq == seq {
			return i
		}
		if m.prices[j].Seq == seq {
			return j
		}
	}
	return -1
}

// price prices a surface event's node under the estimator and the route.
func (m *Meter) price(e *surface.Event, d *surfaceData) (node, Node, *Error) {
	n := node{kind: d.kind, key: keyOf(d.kind, d.content)}
	n.vis = d.kind == kindUser || d.kind == kindTool || !emptyArray(d.content)
	lb := d.lazy()
	pr := Node{Seq: e.Seq}
	var err error
	if pr.HeuristicTokens, err = m.heur.node(n.key, n.kind, lb); err != nil {
		return node{}, Node{}, errorf(e, "%v", err)
	}
	pr.Tokens = pr.HeuristicTokens
	if m.route != m.heur {
		if pr.Tokens, err = m.route.node(n.key, n.kind, lb); err != nil {
			return node{}, Node{}, errorf(e, "%v", err)
		}
	}
	return n, pr, nil
}

// capture builds the anchor of an assistant/message whose own price is tok.
func (m *Meter) capture(e *surface.Event, d *surfaceData, tok int64) (*anchor, *Error) {
	a := &anchor{header: m.header, surface: m.sumTok, assistant: tok, tools: m.tools}
	if d.usage == nil || m.header == nil {
		return a, nil
	}
	u := *d.usage
	a.usage = &u
	if m.reassemble == nil || absent(d.stream) {
		return a, nil
	}
	blocks, err := m.reassemble(d.stream)
	if err != nil {
		return nil, errorf(e, "the provider output cannot be reassembled from the stream: %v", err)
	}
	a.assistant = m.route.message(kindAssistant, blocks)
	return a, nil
}

func (m *Meter) commit(c *change) {
	m.next++
	if c.header != nil {
		m.header, m.tools = c.header, c.tools
		if c.retok != nil {
			m.route, m.sumTok, m.sums = c.route, 0, [len(m.sums)]int64{}
			for i := range m.prices {
				m.prices[i].Tokens = c.retok[i]
				m.sumTok += c.retok[i]
				m.sums[m.nodes[i].kind] += c.retok[i]
			}
		}
	}
	switch c.stepOp {
	case 1:
		m.open, m.step = true, c.step
	case 2:
		m.open = false
	}
	if c.anchor != nil {
		m.anchor = c.anchor
	}
	switch c.op {
	case surface.OpAppend:
		m.raw[c.price.Seq] = c.raw
		m.nodes = append(m.nodes, c.node)
		m.prices = append(m.prices, c.price)
		if c.node.kind == kindSystem && c.node.vis {
			m.lastSys = len(m.nodes) - 1
		}
	case surface.OpReplace:
		for i := c.from; i <= c.to; i++ {
			m.sumTok -= m.prices[i].Tokens
			m.sums[m.nodes[i].kind] -= m.prices[i].Tokens
			delete(m.raw, m.prices[i].Seq)
		}
		m.raw[c.price.Seq] = c.raw
		m.nodes = slices.Replace(m.nodes, c.from, c.to+1, c.node)
		m.prices = slices.Replace(m.prices, c.from, c.to+1, c.price)
		// The last visible system node: one after the range moved with it;
		// one before it stays unless the new node is a later one; only one
		// inside the range needs a search.
		switch last := m.lastSys; {
		case last > c.to:
			m.lastSys = last - (c.to - c.from)
		case c.node.kind == kindSystem && c.node.vis:
			m.lastSys = c.from
		case last >= c.from:
			m.lastSys = -1
			for i := c.from - 1; i >= 0; i-- {
				if m.nodes[i].kind == kindSystem && m.nodes[i].vis {
					m.lastSys = i
					break
				}
			}
		}
	default:
		return
	}
	m.sumTok += c.price.Tokens
	m.sums[c.node.kind] += c.price.Tokens
	for _, p := range m.res.pricers {
		p.trim(m.nodes)
	}
}

// Measure returns the measurement of the surface under the effective
// header: override (canonicalized) when given, else the latest logged one
// (spec 12.2). It fails while the meter is stopped at an event it cannot
// fold.
func (m *Meter) Measure(override *surface.Header) (Measurement, error) {
	return m.measure(override, true)
}

// MeasureTotals is Measure without the per-node prices (Nodes is nil):
// the same totals, baseline and breakdown, without copying the surface.
func (m *Meter) MeasureTotals(override *surface.Header) (Measurement, error) {
	return m.measure(override, false)
}

func (m *Meter) measure(override *surface.Header, nodes bool) (Measurement, error) {
	if m.err != nil {
		return Measurement{}, m.err
	}
	h := m.header
	if override != nil {
		c := override.Canonical()
		h = &c
	}
	p, tools := m.route, m.tools
	if h != m.header {
		p = m.res.pricer(h)
		tools = p.tools(h.Tools)
	}
	out := Measurement{LogRevision: m.next, Tokenizer: p.name}
	var sums [len(m.sums)]int64
	var lastSys int64
	if p == m.route {
		if nodes {
			out.Nodes = append(make([]Node, 0, len(m.prices)), m.prices...)
		}
		out.SurfaceTokens, sums = m.sumTok, m.sums
		if m.lastSys >= 0 {
			lastSys = m.prices[m.lastSys].Tokens
		}
	} else {
		if nodes {
			out.Nodes = make([]Node, len(m.nodes))
		}
		for i := range m.nodes {
			n := &m.nodes[i]
			tok := m.prices[i].Tokens // kept for a node gone from the content source
			raw, err := m.load(i)
			if err == nil {
				tok, err = p.node(n.key, n.kind, &lazyBlocks{raw: raw})
			}
			if err != nil && !errors.Is(err, ErrNoContent) {
				return Measurement{}, &Error{Seq: m.prices[i].Seq, Type: n.kind.eventType(), Msg: fmt.Sprintf("surface node %d cannot be priced with %s: %v", i, p.name, err)}
			}
			if nodes {
				out.Nodes[i] = Node{Seq: m.prices[i].Seq, Tokens: tok, HeuristicTokens: m.prices[i].HeuristicTokens}
			}
			out.SurfaceTokens += tok
			sums[n.kind] += tok
			if i == m.lastSys {
				lastSys = tok
			}
		}
	}
	out.Breakdown = Breakdown{
		System:      lastSys,
		User:        sums[kindUser] + sums[kindSystem] - lastSys,
		Assistant:   sums[kindAssistant],
		ToolResults: sums[kindTool],
		Tools:       tools,
	}

	a := m.anchor
	switch {
	case a != nil && sameHeader(a.header, h):
		anchorSurface := a.surface + a.assistant
		estimated := tools + anchorSurface
		if a.usage != nil && a.usage.Total() >= estimated {
			out.Baseline, out.BaselineTokens = BaselineUsage, a.usage.Total()
		} else {
			out.Baseline, out.BaselineTokens = BaselineEstimated, estimated
		}
		out.SurfaceDeltaTokens = out.SurfaceTokens - anchorSurface
	case h == nil && out.SurfaceTokens == 0:
		out.Baseline = BaselineNone
	default:
		out.Baseline, out.BaselineTokens = BaselineEstimated, tools+out.SurfaceTokens
	}
	out.TotalTokens = max(0, out.BaselineTokens+out.SurfaceDeltaTokens)
	if a != nil && a.usage != nil {
		d := a.tools + a.surface + a.assistant - a.usage.Total()
		out.EstimateError = &d
	}
	return out, nil
}

// sameHeader is headerEquals extended to absent headers (both absent are
// equal).
func sameHeader(a, b *surface.Header) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a == b || a.Equal(*b)
}

// emptyArray reports whether the JSON array raw has no elements.
func emptyArray(raw []byte) bool {
	for _, c := range raw[1:] {
		switch c {
		case ' ', '\t', '\n', '\r':
		case ']':
			return true
		default:
			return false
		}
	}
	return false
}
