package meter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/surface"
)

// State blobs carry the replay state of a meter between processes or
// WebAssembly instances: AppendState writes it, Restore reads it. A blob
// holds what a measurement and later folds read: the fold position and the
// error it stopped at, the current header and the price of its tools, the
// open step, every surface node's seq, kind and both prices, and the
// anchor. It holds no message contents and no price cache, so it grows by a
// few bytes per surface node; a restored meter loads a node's content
// through Config.Content only when it must price it under another
// tokenizer.
//
// Layout (integers are varints, strings and byte strings length-prefixed):
//
//	magic 0xD7, version 1
//	next
//	err:    0 | 1 seq type msg
//	header: 0 | 1 header
//	tools
//	step:   open(0|1) turn step
//	nodes:  count, then per node: seq, kind|vis<<7, tokens, heuristicTokens
//	anchor: 0 | 1 headerMode surface assistant tools usage
//	        headerMode: 0 none, 1 the current header, 2 header
//	        usage: 0 | 1 input output cacheRead cacheWrite reasoning
//	header: provider model reasoningEffort, temperature 0 | 1 float64bits,
//	        maxTokens 0 | 1 n, stop 0 | 1 count strings,
//	        adapterDefaults 0 | 1+reasoningEffort+2*maxTokens, tools count values
const (
	stateMagic   = 0xD7
	stateVersion = 1
)

// AppendState appends the meter's replay state to b (see Restore).
func (m *Meter) AppendState(b []byte) []byte {
	w := stateWriter{b: append(b, stateMagic, stateVersion)}
	w.int(m.next)
	if e, ok := m.err.(*Error); ok {
		w.flag(true)
		w.int(e.Seq)
		w.str(e.Type)
		w.str(e.Msg)
	} else {
		w.flag(false)
	}
	w.flag(m.header != nil)
	if m.header != nil {
		w.header(m.header)
	}
	w.int(m.tools)
	w.flag(m.open)
	w.int(m.step.turn)
	w.int(m.step.step)
	w.uint(uint64(len(m.nodes)))
	for i, n := range m.nodes {
		p := m.prices[i]
		w.int(p.Seq)
		kind := byte(n.kind)
		if n.vis {
			kind |= 0x80
		}
		w.b = append(w.b, kind)
		w.int(p.Tokens)
		w.int(p.HeuristicTokens)
	}
	a := m.anchor
	w.flag(a != nil)
	if a == nil {
		return w.b
	}
	switch {
	case a.header == nil:
		w.b = append(w.b, 0)
	case a.header == m.header:
		w.b = append(w.b, 1)
	default:
		w.b = append(w.b, 2)
		w.header(a.header)
	}
	w.int(a.surface)
	w.int(a.assistant)
	w.int(a.tools)
	w.flag(a.usage != nil)
	if u := a.usage; u != nil {
		for _, v := range [...]int64{u.Input, u.Output, u.CacheRead, u.CacheWrite, u.Reasoning} {
			w.int(v)
		}
	}
	return w.b
}

// Restore returns a meter configured by cfg in the replay state of state,
// a blob written by AppendState (empty: a fresh meter). cfg must name the
// same tokenizers as the configuration that wrote the blob, or the
// restored prices belong to other tokenizers than the ones that would
// price the next events. Its Measure and Observe behave exactly as the
// writer's would have.
func Restore(cfg Config, state []byte) (*Meter, error) {
	m, err := New(cfg)
	if err != nil || len(state) == 0 {
		return m, err
	}
	r := stateReader{b: state}
	if r.byte() != stateMagic {
		return nil, errors.New("token meter: state blob: not a meter state")
	}
	if v := r.byte(); v != stateVersion {
		return nil, fmt.Errorf("token meter: state blob: version %d, this meter reads version %d", v, stateVersion)
	}
	m.next = r.int()
	if r.flag() {
		m.err = &Error{Seq: r.int(), Type: r.str(), Msg: r.str()}
	}
	if r.flag() {
		m.header = r.header()
	}
	m.tools = r.int()
	m.open = r.flag()
	m.step = stepRef{turn: r.int(), step: r.int()}
	n := r.count(4) // a node takes at least 4 bytes
	m.nodes, m.prices = make([]node, n), make([]Node, n)
	for i := range n {
		p := &m.prices[i]
		p.Seq = r.int()
		kb := r.byte()
		p.Tokens, p.HeuristicTokens = r.int(), r.int()
		k := nodeKind(kb &^ 0x80)
		if k < kindSystem || k > kindTool {
			r.fail("unknown node kind")
		}
		m.nodes[i].kind, m.nodes[i].vis = k, kb&0x80 != 0
	}
	if r.flag() {
		a := &anchor{}
		switch r.byte() {
		case 0:
		case 1:
			a.header = m.header
		case 2:
			a.header = r.header()
		default:
			r.fail("unknown anchor header mode")
		}
		a.surface, a.assistant, a.tools = r.int(), r.int(), r.int()
		if r.flag() {
			a.usage = &surface.Usage{Input: r.int(), Output: r.int(), CacheRead: r.int(), CacheWrite: r.int(), Reasoning: r.int()}
		}
		m.anchor = a
	}
	if r.err == nil && r.rest() > 0 {
		r.fail(fmt.Sprintf("%d trailing bytes", r.rest()))
	}
	if r.err != nil {
		return nil, fmt.Errorf("token meter: state blob: %w", r.err)
	}
	// Derived state: the route's pricer, the sums and the last system node.
	m.route = m.res.pricer(m.header)
	for i, nd := range m.nodes {
		m.sumTok += m.prices[i].Tokens
		m.sums[nd.kind] += m.prices[i].Tokens
		if nd.kind == kindSystem && nd.vis {
			m.lastSys = i
		}
	}
	return m, nil
}

type stateWriter struct{ b []byte }

func (w *stateWriter) int(v int64)   { w.b = binary.AppendVarint(w.b, v) }
func (w *stateWriter) uint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *stateWriter) str(s string)  { w.uint(uint64(len(s))); w.b = append(w.b, s...) }

func (w *stateWriter) flag(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

func (w *stateWriter) header(h *surface.Header) {
	c := &h.Config
	w.str(c.Provider)
	w.str(c.Model)
	w.str(c.ReasoningEffort)
	w.flag(c.Temperature != nil)
	if c.Temperature != nil {
		w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(*c.Temperature))
	}
	w.flag(c.MaxTokens != nil)
	if c.MaxTokens != nil {
		w.int(*c.MaxTokens)
	}
	w.flag(c.Stop != nil)
	if c.Stop != nil {
		w.uint(uint64(len(c.Stop)))
		for _, s := range c.Stop {
			w.str(s)
		}
	}
	switch d := h.AdapterDefaults; {
	case d == nil:
		w.b = append(w.b, 0)
	default:
		v := byte(1)
		if d.ReasoningEffort {
			v |= 2
		}
		if d.MaxTokens {
			v |= 4
		}
		w.b = append(w.b, v)
	}
	w.uint(uint64(len(h.Tools)))
	for _, t := range h.Tools {
		w.str(string(t))
	}
}

// stateReader reads a blob; the first problem sticks in err and every later
// read returns zero values. It moves an offset rather than reslicing, so
// reading writes no pointers.
type stateReader struct {
	b   []byte
	off int
	err error
}

func (r *stateReader) rest() int { return len(r.b) - r.off }

func (r *stateReader) fail(msg string) {
	if r.err == nil {
		r.err = errors.New(msg)
	}
	r.off = len(r.b)
}

func (r *stateReader) byte() byte {
	if r.off >= len(r.b) {
		r.fail("truncated")
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *stateReader) flag() bool {
	switch r.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	r.fail("bad flag")
	return false
}

func (r *stateReader) int() int64 {
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.off += n
	return v
}

func (r *stateReader) uint() uint64 {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.off += n
	return v
}

// count reads an element count, refusing counts the rest of the blob cannot
// hold at min bytes per element.
func (r *stateReader) count(min int) int {
	n := r.uint()
	if n > uint64(r.rest()/min) {
		r.fail("count exceeds the blob")
		return 0
	}
	return int(n)
}

func (r *stateReader) bytes() []byte {
	n := r.uint()
	if n > uint64(r.rest()) {
		r.fail("truncated")
		return nil
	}
	v := r.b[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return v
}

func (r *stateReader) str() string { return string(r.bytes()) }

func (r *stateReader) header() *surface.Header {
	h := &surface.Header{}
	c := &h.Config
	c.Provider, c.Model, c.ReasoningEffort = r.str(), r.str(), r.str()
	if r.flag() {
		if r.rest() < 8 {
			r.fail("truncated")
			return h
		}
		t := math.Float64frombits(binary.LittleEndian.Uint64(r.b[r.off:]))
		r.off += 8
		c.Temperature = &t
	}
	if r.flag() {
		v := r.int()
		c.MaxTokens = &v
	}
	if r.flag() {
		c.Stop = make([]string, 0, r.count(1))
		for range cap(c.Stop) {
			c.Stop = append(c.Stop, r.str())
		}
	}
	switch d := r.byte(); {
	case d == 0:
	case d&1 == 1 && d < 8:
		h.AdapterDefaults = &surface.AdapterDefaults{ReasoningEffort: d&2 != 0, MaxTokens: d&4 != 0}
	default:
		r.fail("bad adapterDefaults")
	}
	if n := r.count(1); n > 0 {
		h.Tools = make([]jsontext.Value, n)
		for i := range h.Tools {
			h.Tools[i] = jsontext.Value(r.bytes()).Clone()
		}
	}
	return h
}
