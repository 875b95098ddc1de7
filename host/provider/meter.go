package provider

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/surface"
)

// Meter is a token-meter plugin as the host's meter, for one session. It
// keeps the plugin's state blob, folds events in batches and remembers its
// latest measurement. It is safe for concurrent use.
type Meter struct {
	p *plugin.Plugin
	s *host.Session
	o options

	mu    sync.Mutex
	state []byte // the durable state blob: the events before blobNext folded
	// warm: the plugin understands state keys (abi.Description.WarmState)
	// and the adapter has a session to replay from. key, when not 0, names
	// the state of the events before next, which an instance may hold in
	// memory; the blob may lag behind it (blobNext <= next) by at most
	// unsaved() events, which a new instance replays from the log.
	warm     bool
	key      int64
	blobNext int64
	prefix   prefixHash // of the log before the blob's position (statecache.go)
	cold     int        // observe calls still to make from the blob after a miss
	// next is the seq of the first event the plugin has not folded;
	// pending are the events from next on, waiting for a batch.
	next         int64
	pending      []surface.Event
	pendingBytes int
	last         *host.Measurement // latest measurement under the logged header
	lastAt       int64             // next when last was taken
	lastTotal    int64             // total of the latest totals-only measurement
	lastTotalAt  int64             // next when lastTotal was taken
	rev          int64             // the highest logRevision measured
	// wantTotals makes flush ask the last batch for the totals-only
	// measurement (abi.ObserveRequest.MeasureTotals); totals is the answer,
	// of the events before totalsAt, when the plugin gave one.
	wantTotals bool
	totals     *abi.Measurement
	totalsAt   int64
	// wantBlob makes flush ask the last batch for the blob (the end of a
	// turn, with a StateCache); adopted tells the cache was consulted.
	wantBlob bool
	adopted  bool
	br       breaker
	c        *cache
	buf      []byte
	events   []abi.Event
}

var _ host.Meter = (*Meter)(nil)

// NewMeter returns the meter adapter of plugin p for session s. With a
// session, the plugin's queries read it and Measure first catches up with
// events committed but not observed; s may be nil for a meter fed only
// through Observe (its queries then answer "not granted").
func NewMeter(p *plugin.Plugin, s *host.Session, opts ...Option) (*Meter, error) {
	if err := checkRole(p, RoleTokenMeter); err != nil {
		return nil, err
	}
	o := newOptions(opts)
	if o.batch <= 0 {
		o.batch = DefaultObserveBatch
	}
	return &Meter{p: p, s: s, o: o, br: newBreaker(&o, p.Name(), host.ByMeter), c: newCache(), lastAt: -1, lastTotalAt: -1, totalsAt: -1,
		warm: s != nil && p.Description().WarmState}, nil
}

var emptyData = []byte("{}")

// stateKeys hands out state keys: one process never gives one key to two
// states.
var stateKeys atomic.Int64

// maxUnsaved is how many events the warm state may run ahead of the
// durable blob on a small surface; past it the plugin must return the
// blob. It bounds the replay after a miss.
const maxUnsaved = 256

// unsavedPerNode: on a larger surface the warm state may run ahead by one
// event per unsavedPerNode surface nodes. Writing the blob costs O(surface)
// in the guest; spacing the writes in proportion keeps its share of a step
// constant, and a replay after a miss stays about the cost of restoring
// the blob itself.
const unsavedPerNode = 8

// unsaved is how many events the warm state may run ahead of the blob.
func (m *Meter) unsaved() int64 {
	n := int64(maxUnsaved)
	if m.s != nil {
		n = max(n, int64(m.s.Log().NodeCount()/unsavedPerNode))
	}
	return n
}

// coldAfterMiss is how many observe calls after a miss go from the blob
// and return it, as without state keys: a session whose warm state keeps
// being evicted (many sessions per instance) then pays about what it paid
// without them, not a miss and a replay on every call.
const coldAfterMiss = 8

// ID is the plugin's name.
func (m *Meter) ID() string { return m.p.Name() }

// State returns a copy of the state blob of every event folded (Folded):
// when the plugin kept a newer state in memory, it is asked for its blob
// first, or, from an instance without it, the events since the blob are
// folded into the blob again. On failure it is the last blob the plugin
// returned.
func (m *Meter) State() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	// Twice at most: a replay from the blob may end in a kept state again.
	for range 2 {
		if m.key == 0 || m.blobNext == m.next || m.br.open {
			break
		}
		req := &abi.ObserveRequest{StateKey: m.key, NextStateKey: stateKeys.Add(1)}
		res, err := m.p.Fold(context.Background(), m.host(), req)
		switch {
		case err == nil && len(res.State) <= m.o.stateLimit:
			m.state, m.key, m.blobNext = res.State, req.NextStateKey, m.next
		case errors.Is(err, plugin.ErrStateUnknown):
			if m.rewind() == nil {
				_ = m.flush(context.Background()) // from the blob: returns the blob
			}
		}
	}
	return append([]byte(nil), m.state...)
}

// Folded is the seq of the first event the plugin has not folded yet.
func (m *Meter) Folded() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next
}

// Disabled reports whether the adapter stopped calling the plugin.
func (m *Meter) Disabled() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.br.open
}

// Observe implements host.Meter. Events the plugin already folded are
// skipped, so the host may hand over the whole log and then each new
// event. The events are queued and sent in batches: as soon as the queue
// holds a batch's worth (WithObserveBatch, MaxObserveEvents), else at the
// next Measure. Observe has no context: the plugin's deadline bounds it.
func (m *Meter) Observe(events []surface.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.br.open {
		return nil
	}
	m.adopt()
	var err error
	for i := range events {
		want := m.next + int64(len(m.pending))
		e := events[i]
		if e.Seq < want {
			continue
		}
		if e.Seq > want {
			if err := m.catchUp(e.Seq); err != nil {
				return err
			}
		}
		m.queue(e)
		// After a failed batch the rest is only queued, for the next try.
		if err == nil && !m.br.open && (m.pendingBytes >= m.o.batch || len(m.pending) >= MaxObserveEvents) {
			err = m.flush(context.Background())
		}
		if err == nil && !m.br.open && m.o.cache != nil && e.Type == surface.TypeTurnEnd && i == len(events)-1 {
			// The end of a turn, often of a process: leave the cache a
			// blob of everything so far.
			m.wantBlob = true
			err = m.flush(context.Background())
			m.wantBlob = false
		}
	}
	if m.br.open {
		m.pending, m.pendingBytes = nil, 0
	}
	return err
}

func (m *Meter) queue(e surface.Event) {
	m.pending = append(m.pending, e)
	m.pendingBytes += len(e.Data) + 64
}

// catchUp queues the session's events up to (excluding) seq.
func (m *Meter) catchUp(until int64) error {
	want := m.next + int64(len(m.pending))
	if m.s == nil {
		if until > want {
			return fmt.Errorf("token meter %q: event %d arrived, but events %d..%d were never observed", m.p.Name(), until, want, until-1)
		}
		return nil
	}
	l := m.s.Log()
	for seq := want; seq < until; seq++ {
		e, ok := l.Event(seq)
		if !ok {
			return fmt.Errorf("token meter %q: event %d is not in the session log", m.p.Name(), seq)
		}
		m.queue(e)
	}
	return nil
}

// flush sends the queued events in batches.
func (m *Meter) flush(ctx context.Context) error {
	for len(m.pending) > 0 {
		n, size := 0, 0
		for n < len(m.pending) && n < MaxObserveEvents && (n == 0 || size+len(m.pending[n].Data) <= m.o.batch) {
			size += len(m.pending[n].Data)
			n++
		}
		req := m.observeRequest(m.pending[:n])
		req.MeasureTotals = m.wantTotals && n == len(m.pending)
		if m.warm {
			req.NextStateKey = stateKeys.Add(1)
			// A call from the blob returns the blob: so every replay after
			// a miss moves the blob forward.
			if m.key != 0 {
				req.StateKey, req.State = m.key, nil
				req.StateOptional = m.next+int64(n)-m.blobNext <= m.unsaved() && !(m.wantBlob && n == len(m.pending))
			}
			if m.cold > 0 {
				m.cold--
			}
		}
		var state []byte
		res, err := m.p.Fold(ctx, m.host(), req)
		if errors.Is(err, plugin.ErrStateUnknown) && req.StateKey != 0 {
			// The instance does not hold the state: start again from the blob.
			if err = m.rewind(); err == nil {
				continue
			}
		}
		if err == nil {
			state = res.State
		}
		if err == nil && len(state) > m.o.stateLimit {
			err = fmt.Errorf("plugin %q: call meter.observe: state of %d bytes exceeds the %d-byte limit", m.p.Name(), len(state), m.o.stateLimit)
		}
		if err != nil {
			m.clock()
			err = m.br.fail(classify(err), &m.o, m.sessionID())
			if m.br.open {
				m.pending, m.pendingBytes = nil, 0
			}
			return err
		}
		m.key = req.NextStateKey
		if !res.StateKept {
			m.state, m.blobNext = state, m.next+int64(n)
			m.store()
		}
		if m.cold > 0 {
			m.key = 0 // cold: the next call goes from this blob too
		}
		m.next += int64(n)
		if res.HasTotals && req.MeasureTotals {
			t := res.Totals
			m.totals, m.totalsAt = &t, m.next
		}
		m.pending = m.pending[n:]
		m.pendingBytes -= size + 64*n
	}
	m.pending, m.pendingBytes = nil, 0
	return nil
}

// rewind forgets the warm state: the events since the blob are queued
// again, in front of the pending ones, to fold into the blob.
func (m *Meter) rewind() error {
	m.cold = coldAfterMiss
	l := m.s.Log()
	again := make([]surface.Event, 0, int(m.next-m.blobNext)+len(m.pending))
	size := 0
	for seq := m.blobNext; seq < m.next; seq++ {
		e, ok := l.Event(seq)
		if !ok {
			return fmt.Errorf("token meter %q: event %d is not in the session log", m.p.Name(), seq)
		}
		again = append(again, e)
		size += len(e.Data) + 64
	}
	m.pending = append(again, m.pending...)
	m.pendingBytes += size
	m.next, m.key = m.blobNext, 0
	return nil
}

// observeRequest encodes events as the plugin sees them: seq, type and the
// event's JSON line, with its data and surface op apart (minor 2), so a
// guest need not parse the line for them.
func (m *Meter) observeRequest(evs []surface.Event) *abi.ObserveRequest {
	m.buf = m.buf[:0]
	ends := make([]int, len(evs))
	for i := range evs {
		m.buf = surface.AppendEvent(m.buf, &evs[i])
		ends[i] = len(m.buf)
	}
	m.events = m.events[:0]
	start := 0
	for i := range evs {
		e := &evs[i]
		ev := abi.Event{Seq: e.Seq, Type: e.Type, JSON: m.buf[start:ends[i]], Data: e.Data, HasData: true}
		if len(ev.Data) == 0 {
			ev.Data = emptyData // as the line has it
		}
		switch e.Op.Kind {
		case surface.OpAppend:
			ev.SurfaceOp = uint32(abi.IntentAppend)
		case surface.OpReplace:
			ev.SurfaceOp = uint32(abi.IntentReplace)
			ev.ReplaceStartSeq, ev.ReplaceEndSeq = e.Op.Start, e.Op.End
		}
		m.events = append(m.events, ev)
		start = ends[i]
	}
	return &abi.ObserveRequest{State: m.state, Events: m.events}
}

func (m *Meter) host() *Host {
	h := &Host{kind: abi.KindTokenMeter, plugin: m.p.Name(), counters: m.o.counters, c: m.c}
	if m.s != nil {
		h.r = logReader{m.s.Log()}
	}
	return h
}

func (m *Meter) sessionID() string {
	if m.s == nil {
		return sessionName("")
	}
	return sessionName(m.s.ID())
}

// Measure implements host.Meter: it sends what is queued, then asks the
// plugin for a measurement under header (the logged header when nil). A
// measurement under the logged header is reused while no event arrived.
//
// The plugin's measurement is validated (host.ValidateMeasurement): a bad
// one is a failure of the plugin, counted by its breaker and logged, and
// the error returned (rule meter/measurement, naming the plugin) matches
// host.ErrNotGranted, so the consumer prices the surface with its own
// estimate as it does without a meter. It is not written to the session
// here: a measure call usually serves a compaction call, which a log
// append in its middle would make stale.
func (m *Meter) Measure(ctx context.Context, header *surface.Header) (*host.Measurement, error) {
	return m.measureLogged(ctx, header, false)
}

func (m *Meter) measureLogged(ctx context.Context, header *surface.Header, totalsOnly bool) (*host.Measurement, error) {
	out, err := m.measure(ctx, header, totalsOnly)
	if err != nil && errors.Is(err, host.ErrBadMeasurement) {
		m.o.log.Warn("token meter returned a bad measurement; its consumer uses its own estimate",
			"plugin", m.p.Name(), "session", m.sessionID(), "error", err)
	}
	return out, err
}

func (m *Meter) measure(ctx context.Context, header *surface.Header, totalsOnly bool) (*host.Measurement, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.br.open {
		return nil, fmt.Errorf("token meter %q: %w", m.p.Name(), ErrDisabled)
	}
	m.adopt()
	if m.s != nil {
		if err := m.catchUp(m.s.Log().NextSeq()); err != nil {
			return nil, err
		}
	}
	// A totals-only measurement under the logged header comes with the
	// last observe batch when the plugin answers it there: one call.
	m.wantTotals = totalsOnly && header == nil
	err := m.flush(ctx)
	m.wantTotals = false
	if err != nil {
		return nil, err
	}
	if header == nil && m.last != nil && m.lastAt == m.next {
		return cloneMeasurement(m.last), nil
	}
	req := &abi.MeasureRequest{State: m.state, TotalsOnly: totalsOnly}
	if m.key != 0 {
		req.StateKey, req.State = m.key, nil
	}
	if header != nil {
		b, err := surface.Data(header.Canonical())
		if err != nil {
			return nil, fmt.Errorf("token meter %q: encode the header override: %w", m.p.Name(), err)
		}
		req.HeaderOverride, req.HasHeaderOverride = b, true
	}
	var res *abi.Measurement
	call := abi.MethodMeterMeasure
	if totalsOnly && header == nil && m.totals != nil && m.totalsAt == m.next {
		res, call = m.totals, abi.MethodMeterObserve
	} else {
		res, err = m.p.Measure(ctx, m.host(), req)
	}
	m.totals = nil
	if errors.Is(err, plugin.ErrStateUnknown) && req.StateKey != 0 {
		// The instance does not hold the state: fold again from the blob.
		if err = m.rewind(); err != nil {
			return nil, err
		}
		if err := m.flush(ctx); err != nil {
			return nil, err
		}
		req.StateKey, req.State = m.key, nil
		if m.key == 0 {
			req.State = m.state
		}
		res, err = m.p.Measure(ctx, m.host(), req)
	}
	var out *host.Measurement
	if err == nil {
		out, err = fromABIMeasurement(res, m.typeOf)
		if err == nil {
			err = host.ValidateMeasurement(out)
		}
		if err == nil {
			err = m.consistent(out)
		}
		if err != nil {
			err = fmt.Errorf("plugin %q: call %s: %w", m.p.Name(), call, err)
		}
	}
	if err != nil {
		m.clock()
		return nil, m.br.fail(classify(err), &m.o, m.sessionID())
	}
	if header == nil && !totalsOnly {
		m.last, m.lastAt = out, m.next
		m.c.measured(out)
	}
	if header == nil && totalsOnly {
		m.lastTotal, m.lastTotalAt = out.TotalTokens, m.next
	}
	return cloneMeasurement(out), nil
}

// consistent checks what ValidateMeasurement cannot see alone (rule
// meter/measurement): log_revision never goes back within the session and
// names no event past the log, and every priced node is a node of the
// session's current surface.
func (m *Meter) consistent(out *host.Measurement) error {
	if out.LogRevision < m.rev {
		return &host.MeasurementError{Msg: fmt.Sprintf("logRevision is %d, behind the %d of an earlier measurement", out.LogRevision, m.rev)}
	}
	if out.LogRevision > m.next {
		return &host.MeasurementError{Msg: fmt.Sprintf("logRevision is %d, past the %d events given to the meter", out.LogRevision, m.next)}
	}
	if m.s == nil || len(out.Nodes) == 0 {
		m.rev = out.LogRevision
		return nil
	}
	nodes := m.s.Log().Nodes()
	on := make(map[int64]struct{}, len(nodes))
	for _, seq := range nodes {
		on[seq] = struct{}{}
	}
	for i, n := range out.Nodes {
		if _, ok := on[n.Seq]; !ok {
			return &host.MeasurementError{Msg: fmt.Sprintf("node %d has seq %d, which is no node of the surface", i, n.Seq)}
		}
	}
	m.rev = out.LogRevision
	return nil
}

// MeasureTotal implements host.TotalMeter: the total of the measurement
// under the logged header, without per-node prices when the plugin can
// leave them out (abi.MeasureRequest.TotalsOnly). It is validated and
// counted like Measure.
func (m *Meter) MeasureTotal(ctx context.Context) (int64, error) {
	m.mu.Lock()
	if m.s != nil && !m.br.open {
		if err := m.catchUp(m.s.Log().NextSeq()); err != nil {
			m.mu.Unlock()
			return 0, err
		}
	}
	if len(m.pending) == 0 && !m.br.open {
		if m.last != nil && m.lastAt == m.next {
			defer m.mu.Unlock()
			return m.last.TotalTokens, nil
		}
		if m.lastTotalAt == m.next {
			defer m.mu.Unlock()
			return m.lastTotal, nil
		}
	}
	m.mu.Unlock()
	out, err := m.measureLogged(ctx, nil, true)
	if err != nil {
		return 0, err
	}
	return out.TotalTokens, nil
}

// clock advances the breaker's step clock over the session's log.
func (m *Meter) clock() {
	if m.s != nil {
		m.br.sync(m.s.Log().Events(), &m.o, m.sessionID())
	}
}

// typeOf is the event type at seq, for the breakdown.
func (m *Meter) typeOf(seq int64) string {
	if m.s == nil {
		return ""
	}
	e, ok := m.s.Log().Event(seq)
	if !ok {
		return ""
	}
	return e.Type
}
