package provider

import (
	"context"
	"errors"
	"fmt"
	"sync"

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
	state []byte
	// next is the seq of the first event the plugin has not folded;
	// pending are the events from next on, waiting for a batch.
	next         int64
	pending      []surface.Event
	pendingBytes int
	last         *host.Measurement // latest measurement under the logged header
	lastAt       int64             // next when last was taken
	br           breaker
	c            *cache
	buf          []byte
	events       []abi.Event
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
	return &Meter{p: p, s: s, o: o, br: newBreaker(&o, p.Name(), host.ByMeter), c: newCache(), lastAt: -1}, nil
}

// ID is the plugin's name.
func (m *Meter) ID() string { return m.p.Name() }

// State returns a copy of the state blob.
func (m *Meter) State() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
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
		state, err := m.p.Observe(ctx, m.host(), req)
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
		m.state = state
		m.next += int64(n)
		m.pending = m.pending[n:]
		m.pendingBytes -= size + 64*n
	}
	m.pending, m.pendingBytes = nil, 0
	return nil
}

// observeRequest encodes events as the plugin sees them: seq, type and the
// event's JSON line.
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
		m.events = append(m.events, abi.Event{Seq: evs[i].Seq, Type: evs[i].Type, JSON: m.buf[start:ends[i]]})
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
	out, err := m.measure(ctx, header)
	if err != nil && errors.Is(err, host.ErrBadMeasurement) {
		m.o.log.Warn("token meter returned a bad measurement; its consumer uses its own estimate",
			"plugin", m.p.Name(), "session", m.sessionID(), "error", err)
	}
	return out, err
}

func (m *Meter) measure(ctx context.Context, header *surface.Header) (*host.Measurement, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.br.open {
		return nil, fmt.Errorf("token meter %q: %w", m.p.Name(), ErrDisabled)
	}
	if m.s != nil {
		if err := m.catchUp(m.s.Log().NextSeq()); err != nil {
			return nil, err
		}
	}
	if err := m.flush(ctx); err != nil {
		return nil, err
	}
	if header == nil && m.last != nil && m.lastAt == m.next {
		return cloneMeasurement(m.last), nil
	}
	req := &abi.MeasureRequest{State: m.state}
	if header != nil {
		b, err := surface.Data(header.Canonical())
		if err != nil {
			return nil, fmt.Errorf("token meter %q: encode the header override: %w", m.p.Name(), err)
		}
		req.HeaderOverride, req.HasHeaderOverride = b, true
	}
	res, err := m.p.Measure(ctx, m.host(), req)
	var out *host.Measurement
	if err == nil {
		out, err = fromABIMeasurement(res, m.typeOf)
		if err == nil {
			err = host.ValidateMeasurement(out)
		}
		if err != nil {
			err = fmt.Errorf("plugin %q: call meter.measure: %w", m.p.Name(), err)
		}
	}
	if err != nil {
		m.clock()
		return nil, m.br.fail(classify(err), &m.o, m.sessionID())
	}
	if header == nil {
		m.last, m.lastAt = out, m.next
		m.c.measured(out)
	}
	return cloneMeasurement(out), nil
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
