package surface

import (
	"bytes"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Proposal is a candidate event: everything but the seq and time, which the
// log assigns.
type Proposal struct {
	Type      string
	Data      []byte // one JSON object
	Op        Op
	Sources   []int64 // nil: absent
	Ignorable bool
}

// Log is a session's event log together with its incremental surface fold,
// its latest request header and the enclosure state. It is the single
// admission path: loop events, provider proposals, seeds and loaded events
// all pass the same checks. A Log is not safe for concurrent use.
type Log struct {
	events []Event
	pay    []payload
	fold   fold
	enc    enclosure
	header *Header
	clock  func() int64

	observers []*func(Event)
	notifying bool

	replacements *[]Replacement // complete fold only
}

// Option configures a Log.
type Option func(*Log)

// WithClock sets the clock that stamps appended events (epoch milliseconds).
func WithClock(now func() int64) Option { return func(l *Log) { l.clock = now } }

// Now reads the clock that stamps appended events (epoch milliseconds).
func (l *Log) Now() int64 { return l.clock() }

// New returns an empty session log.
func New(opts ...Option) *Log {
	l := &Log{clock: func() int64 { return time.Now().UnixMilli() }}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Restore rebuilds a log from committed events without writing anything: the
// events are validated in order exactly as appends are, and the first
// invalid one is returned as the error.
func Restore(events []Event, opts ...Option) (*Log, error) {
	return RestoreWindow(0, events, opts...)
}

// RestoreWindow restores a contiguous window of a longer log whose first
// event has seq base. A replacement reaching before the window is "not found".
func RestoreWindow(base int64, events []Event, opts ...Option) (*Log, error) {
	l := New(opts...)
	l.fold.base, l.fold.next = base, base
	l.enc.lenient = base > 0
	l.events = slices.Grow(l.events, len(events))
	l.pay = slices.Grow(l.pay, len(events))
	for i := range events {
		if err := l.admitOne(events[i], false); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Seed constructs a session from a seed (resume, fork, replay): the events
// are validated in order, and when the seed is empty or its last event is
// not session/end-seed, one end-seed marker is appended. Re-seeding from the
// result therefore does not grow the log.
func Seed(events []Event, opts ...Option) (*Log, error) {
	l, err := Restore(events, opts...)
	if err != nil {
		return nil, err
	}
	if n := len(l.events); n == 0 || l.events[n-1].Type != TypeEndSeed {
		if _, err := l.appendMarker(false); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Fork constructs a child session from a parent's prefix; the child always
// appends its own {inherited: true} end-seed marker at the cut.
func Fork(prefix []Event, opts ...Option) (*Log, error) {
	l, err := Restore(prefix, opts...)
	if err != nil {
		return nil, err
	}
	if _, err := l.appendMarker(true); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Log) appendMarker(inherited bool) (Event, error) {
	data := []byte(`{}`)
	if inherited {
		data = []byte(`{"inherited":true}`)
	}
	e := Event{Type: TypeEndSeed, Seq: l.fold.next, Time: l.clock(), Data: data}
	if err := l.admitOne(e, true); err != nil {
		return Event{}, err
	}
	return e, nil
}

// Append validates p as the next event and commits it. The returned event is
// the committed snapshot; later changes to p's slices do not reach the log.
func (l *Log) Append(p Proposal) (Event, error) {
	evs, err := l.AppendBatch([]Proposal{p})
	if err != nil {
		return Event{}, err
	}
	return evs[0], nil
}

// AppendBatch admits ps in order, all or nothing: when any proposal is
// rejected, nothing is committed and the error names that proposal's seq.
func (l *Log) AppendBatch(ps []Proposal) ([]Event, error) {
	return l.appendBatch(ps, nil)
}

// AppendBatchChecked is AppendBatch with a further check: the batch is
// planned on a scratch copy of the log, check reads that copy (the log as it
// would be after the batch; first is the seq of the batch's first event),
// and only when check returns nil is the batch committed. An error of
// check leaves the log unchanged and is returned as is. check must not
// append to the copy, nor keep it or what it returned after check returns.
func (l *Log) AppendBatchChecked(ps []Proposal, check func(planned *Log, first int64) error) ([]Event, error) {
	return l.appendBatch(ps, check)
}

func (l *Log) appendBatch(ps []Proposal, check func(*Log, int64) error) ([]Event, error) {
	if l.notifying {
		return nil, errorf(l.fold.next, "", RuleReentrant, "append from inside an observer of the same session is not allowed")
	}
	now := l.clock()
	evs := make([]Event, len(ps))
	for i, p := range ps {
		if p.Type == TypeEndSeed {
			return nil, errorf(l.fold.next+int64(i), p.Type, RuleSeedMarker, "session/end-seed is written only by the session constructor")
		}
		evs[i] = Event{Type: p.Type, Seq: l.fold.next + int64(i), Time: now, Data: bytes.Clone(p.Data),
			Op: p.Op, Ignorable: p.Ignorable}
		if p.Sources != nil {
			evs[i].Sources = slices.Clone(p.Sources)
		}
		// A known type's data is validated with its payload rules in
		// admitOne, by the same parser and with the same errors; it is
		// validated here first only when it must be compacted, which
		// needs valid JSON.
		if d := evs[i].Data; !Known(p.Type) || len(d) == 0 || !isOneLine(d) {
			if err := validData(&evs[i]); err != nil {
				return nil, err
			}
			evs[i].Data = oneLine(evs[i].Data)
		}
		evs[i].checked = true
	}
	if len(evs) == 1 && check == nil {
		if err := l.admitOne(evs[0], true); err != nil {
			return nil, err
		}
	} else {
		// Plan the batch on a scratch copy, then swap it in. The copy
		// shares the event and payload arrays: it appends only past the
		// log's length, which nothing of the log reads (Events caps what
		// it hands out), so a refused batch leaves the log as it was
		// without copying the whole history for every batch.
		scratch := *l
		scratch.fold.nodes = slices.Clone(l.fold.nodes)
		for _, e := range evs {
			if err := scratch.admitOne(e, true); err != nil {
				return nil, err
			}
		}
		if check != nil {
			scratch.observers, scratch.replacements = nil, nil
			if err := check(&scratch, l.fold.next); err != nil {
				return nil, err
			}
		}
		l.events, l.pay, l.fold, l.enc, l.header = scratch.events, scratch.pay, scratch.fold, scratch.enc, scratch.header
	}
	l.notify(evs)
	return evs, nil
}

// oneLine returns valid JSON data d without whitespace around it or line
// breaks inside it, so the event fits one log line and reads back
// byte-identical. Data already in that form is returned as is.
func oneLine(d []byte) []byte {
	if !isOneLine(d) {
		v := jsontext.Value(d)
		v.Compact() // cannot fail: d is valid
		return v
	}
	return d
}

// isOneLine reports whether non-empty data d has no whitespace around it
// and no line break inside it.
func isOneLine(d []byte) bool {
	return !isSpace(d[0]) && !isSpace(d[len(d)-1]) && !bytes.ContainsAny(d, "\r\n")
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// admitOne plans e and commits it; on error nothing changes.
func (l *Log) admitOne(e Event, live bool) error {
	if e.Seq != l.fold.next {
		return errorf(l.fold.next, e.Type, RuleContiguous, "seq %d is not contiguous: expected seq %d", e.Seq, l.fold.next)
	}
	if e.Type == "" || !utf8.ValidString(e.Type) {
		return errorf(e.Seq, "", RuleEnvelope, "type %q is not a non-empty UTF-8 string", e.Type)
	}
	var p payload
	if !Known(e.Type) && !e.checked {
		if err := validData(&e); err != nil {
			return err
		}
	}
	if Known(e.Type) {
		var err *Error
		if e.pre != nil {
			p, err = e.pre.p, e.pre.err
			e.pre = nil
		} else {
			p, err = parsePayload(&e)
		}
		if err != nil {
			return err
		}
	}
	t, err := l.fold.plan(&e, &p, l.lookup)
	if err != nil {
		return err
	}
	enc, err := l.enc.check(&e, &p)
	if err != nil {
		return err
	}
	// Commit.
	if l.replacements != nil && t.kind == OpReplace {
		*l.replacements = append(*l.replacements, Replacement{Seq: e.Seq, Start: e.Op.Start, End: e.Op.End, Shadowed: t.shadowed})
	}
	l.fold.commit(t)
	l.enc = enc
	if p.header != nil {
		l.header = p.header
	}
	if !KindOf(e.Type).IsSurface() {
		p.msgRaw = nil
	}
	l.events = append(l.events, e)
	l.pay = append(l.pay, p)
	return nil
}

func (l *Log) lookup(seq int64) *Event {
	i := seq - l.fold.base
	if i < 0 || i >= int64(len(l.events)) {
		return nil
	}
	return &l.events[i]
}

// Observe registers fn to be called after every commit, in order, with each
// committed event. It returns a function that removes the observer. An
// observer runs synchronously inside the commit (in a host session, under
// the session's lock): it must not append to the same log, and it should
// return quickly. Code on another goroutine follows a session with
// host.Session.Subscribe instead, which delivers the same events
// asynchronously.
func (l *Log) Observe(fn func(Event)) (remove func()) {
	p := &fn
	l.observers = append(l.observers, p)
	return func() {
		l.observers = slices.DeleteFunc(l.observers, func(q *func(Event)) bool { return q == p })
	}
}

func (l *Log) notify(evs []Event) {
	if len(l.observers) == 0 {
		return
	}
	l.notifying = true
	defer func() { l.notifying = false }()
	for _, e := range evs {
		for _, o := range slices.Clone(l.observers) {
			func() {
				defer func() { recover() }() // an observer failure does not undo the append
				(*o)(e)
			}()
		}
	}
}

// Len is the number of events in the log window (the next seq minus the base).
func (l *Log) Len() int { return len(l.events) }

// NextSeq is the seq the next event will get.
func (l *Log) NextSeq() int64 { return l.fold.next }

// BaseSeq is the seq of the first event of the window (0 for a whole log).
func (l *Log) BaseSeq() int64 { return l.fold.base }

// Events returns the committed events. The slice is shared: do not modify.
func (l *Log) Events() []Event { return l.events[:len(l.events):len(l.events)] }

// Event returns the event with the given seq.
func (l *Log) Event(seq int64) (Event, bool) {
	e := l.lookup(seq)
	if e == nil {
		return Event{}, false
	}
	return *e, true
}

// Nodes returns the surface: seqs in surface order (a fresh slice).
func (l *Log) Nodes() []int64 {
	out := make([]int64, len(l.fold.nodes))
	for i, n := range l.fold.nodes {
		out[i] = n.seq
	}
	return out
}

// NodeCount is the number of surface nodes.
func (l *Log) NodeCount() int { return len(l.fold.nodes) }

// ReplaceGeneration counts committed positional rewrites.
func (l *Log) ReplaceGeneration() uint64 { return l.fold.replaceGen }

// ContentGeneration counts committed changes to already-visible content.
func (l *Log) ContentGeneration() uint64 { return l.fold.contentGen }

// Header returns the canonical header of the latest request/header, or nil.
func (l *Log) Header() *Header { return l.header }

// Message returns the message of the surface event with the given seq.
func (l *Log) Message(seq int64) (*Message, bool) {
	i := seq - l.fold.base
	if i < 0 || i >= int64(len(l.pay)) || l.pay[i].msgRaw == nil {
		return nil, false
	}
	return l.message(i), true
}

// MessageData returns the JSON of the message of the surface event with
// the given seq as the event's data holds it: the whole data of a
// user/message, the "message" member's value of the others. It is a part
// of the event's data, shared: read it, never change it.
func (l *Log) MessageData(seq int64) ([]byte, bool) {
	i := seq - l.fold.base
	if i < 0 || i >= int64(len(l.pay)) || l.pay[i].msgRaw == nil {
		return nil, false
	}
	return l.pay[i].msgRaw, true
}

// OpenTurn returns the open turn and step (0 when none).
func (l *Log) OpenTurn() (turn, step int64) { return l.enc.turn, l.enc.step }

// LastTurn is the number of the latest turn started.
func (l *Log) LastTurn() int64 { return l.enc.lastTurn }

// Replacement is one committed replace of a complete fold.
type Replacement struct {
	Seq        int64
	Start, End int64   // declared seqs
	Shadowed   []int64 // removed nodes in surface order
}

// FoldResult is the result of a complete fold.
type FoldResult struct {
	Nodes             []int64
	Replacements      []Replacement
	ReplaceGeneration uint64
	ContentGeneration uint64
}

// Fold replays a whole log from an empty surface (the complete fold) and
// reports its replacement history. It fails exactly where Restore fails.
func Fold(events []Event) (FoldResult, error) {
	var reps []Replacement
	l := New()
	l.replacements = &reps
	l.events = slices.Grow(l.events, len(events))
	for i := range events {
		if err := l.admitOne(events[i], false); err != nil {
			return FoldResult{}, err
		}
	}
	return FoldResult{Nodes: l.Nodes(), Replacements: reps,
		ReplaceGeneration: l.fold.replaceGen, ContentGeneration: l.fold.contentGen}, nil
}
