package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

// Store is the session store contract: see package host/store. Open
// resumes or creates a session kept in one.
type Store = store.Store

// Appender is the context-free writer NewSession accepts: Append returns
// only after the batch is durable. A store.Writer is the context-aware
// form Open uses.
type Appender interface {
	Append(events []surface.Event) error
}

// writer is what a Session persists its committed events through.
type writer interface {
	Append(ctx context.Context, events []surface.Event) error
}

type appenderWriter struct{ a Appender }

func (w appenderWriter) Append(_ context.Context, evs []surface.Event) error { return w.a.Append(evs) }

// Proposer names who proposes events; each kind may propose only some.
type Proposer struct {
	Kind ProposerKind
	ID   string // the provider's id (a plugin's configured name); "" for the loop
	// Events are the ignorable event types the provider declared it may
	// propose besides its kind's own.
	Events []string
}

// ProposerKind is a kind of proposer.
type ProposerKind string

// Proposer kinds and what each may propose:
//   - loop: anything the log admits;
//   - prompt: system/message only;
//   - compaction: user/message replacements (checkpoints), tool/result
//     rewrites (pruning) and compaction/* log events;
//   - meter: nothing.
const (
	ByLoop       ProposerKind = "loop"
	ByPrompt     ProposerKind = "prompt"
	ByCompaction ProposerKind = "compaction"
	ByMeter      ProposerKind = "meter"
)

// ErrNotPermitted is the error of a proposal its proposer's kind may not make.
var ErrNotPermitted = errors.New("not permitted")

// compactionTypes are the log event types a compaction provider owns.
var compactionTypes = map[string]bool{
	surface.TypeCompactionStart: true, surface.TypeCompactionSummary: true,
	surface.TypeCompactionEnd: true, surface.TypeCompactionPrune: true,
}

func (p Proposer) String() string {
	if p.ID == "" {
		return string(p.Kind)
	}
	return fmt.Sprintf("%s provider %q", p.Kind, p.ID)
}

func (p Proposer) permits(q *surface.Proposal) error {
	deny := func(why string) error {
		return fmt.Errorf("%s may not propose %s: %s: %w", p, q.Type, why, ErrNotPermitted)
	}
	switch p.Kind {
	case ByLoop:
		return nil
	case ByPrompt:
		if q.Type != surface.TypeSystemMessage {
			return deny("a prompt provider proposes only system/message")
		}
	case ByCompaction:
		switch {
		case q.Type == surface.TypeUserMessage && q.Op.Kind == surface.OpReplace:
		case q.Type == surface.TypeToolResult && q.Op.Kind == surface.OpReplace:
		case compactionTypes[q.Type]:
		case q.Type == surface.TypeUserMessage:
			return deny("a compaction checkpoint must replace a range, not append")
		case !surface.Known(q.Type):
			// Declared or not: checkDeclared decides, with the batch's seqs.
		default:
			return deny("a compaction provider proposes only checkpoint replacements, tool-result rewrites, compaction/start|summary|end|prune events and the ignorable types it declared")
		}
	case ByMeter:
		return deny("a token meter proposes nothing")
	default:
		return deny("unknown proposer kind")
	}
	return nil
}

// Session is one session: its log and durable store. It is the single
// writer: every event, whoever proposes it, is admitted here.
type Session struct {
	id    string
	mu    sync.Mutex
	log   *surface.Log
	store writer
	newID func() string
	// broken is set when the store failed after the log committed: the
	// in-memory log is ahead of the durable one and no more appends are
	// accepted.
	broken    error
	closer    func() error
	clock     func() int64
	mustExist bool
	// pending are committed events not yet durable.
	pending []surface.Event
	// busy is held by the operation that drives the session (a turn, a
	// manual compaction); see acquire.
	busy atomic.Bool
	// subs are the open subscriptions; closed is set by Close, which
	// closes them.
	subs      []*feed[surface.Event]
	deltaSubs []*feed[Delta]
	// deltaSubsN is len(deltaSubs), read without the lock by the
	// streaming path.
	deltaSubsN atomic.Int32
	closed     bool
}

// SessionOption configures a Session.
type SessionOption func(*Session)

// WithClock sets the clock that stamps new events (epoch milliseconds); it
// applies to a session created by OpenFile.
func WithClock(now func() int64) SessionOption { return func(s *Session) { s.clock = now } }

// now reads the clock that stamps the session's events (epoch
// milliseconds). Durations the log records are measured with it, so a
// session on a fixed clock writes the same log on any machine.
func (s *Session) now() int64 { return s.log.Now() }

// WithIDs sets the message-id generator (for deterministic tests).
func WithIDs(next func() string) SessionOption { return func(s *Session) { s.newID = next } }

// Existing makes Open refuse a session that does not exist (the error
// matches store.ErrNotFound) instead of creating it.
func Existing() SessionOption { return func(s *Session) { s.mustExist = true } }

// NewSession wraps a log and the Appender that makes its events durable
// (nil for an in-memory session). Close flushes it; Open is the
// constructor for a session kept in a store.Store.
func NewSession(id string, log *surface.Log, store Appender, opts ...SessionOption) *Session {
	s := &Session{id: id, log: log, newID: RandomID}
	if store != nil {
		s.store = appenderWriter{store}
	}
	for _, o := range opts {
		o(s)
	}
	s.newID = lockedIDs(s.newID)
	return s
}

// lockedIDs makes an id generator safe for concurrent use.
func lockedIDs(next func() string) func() string {
	var mu sync.Mutex
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return next()
	}
}

// RandomID returns a fresh random message id.
func RandomID() string {
	var b [12]byte
	rand.Read(b[:])
	return "m-" + hex.EncodeToString(b[:])
}

// CounterIDs returns a deterministic id generator: prefix-1, prefix-2, ...
func CounterIDs(prefix string) func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("%s-%d", prefix, n) }
}

// ID is the session id.
func (s *Session) ID() string { return s.id }

// NewID returns a fresh message id. It is safe to call from any goroutine.
func (s *Session) NewID() string { return s.newID() }

// Log returns the session's live log. It is not safe for concurrent use:
// read it only from the goroutine that drives the session (inside a turn:
// the loop and the providers and tools it calls) or while no turn runs.
// Any other goroutine reads a Snapshot, and follows the log through
// Subscribe rather than Log().Observe.
func (s *Session) Log() *surface.Log { return s.log }

// Propose admits ps in order, all or nothing, after checking that by may
// propose each of them, and persists them before returning. A rejection
// leaves the log unchanged and names the proposer and the rule. Proposals
// are serialised by the session's mutex; while a turn runs, only the
// turn's goroutine (the loop and the providers it calls) proposes.
func (s *Session) Propose(by Proposer, ps ...surface.Proposal) ([]surface.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return nil, s.broken
	}
	for i := range ps {
		if err := by.permits(&ps[i]); err != nil {
			return nil, err
		}
	}
	if by.Kind == ByCompaction {
		if err := s.bracketFree(by, ps); err != nil {
			return nil, err
		}
		if err := s.shrinks(by, ps); err != nil {
			return nil, err
		}
	}
	var evs []surface.Event
	var err error
	if by.Kind == ByLoop {
		evs, err = s.log.AppendBatch(ps)
	} else if err = s.screen(by, ps); err == nil {
		evs, err = s.log.AppendBatchChecked(ps, func(planned *surface.Log, first int64) error {
			return s.admits(by, planned, first, ps)
		})
	}
	if err != nil {
		if by.Kind == ByLoop {
			return nil, err
		}
		return nil, fmt.Errorf("%s: proposal rejected: %w", by, err)
	}
	s.pending = append(s.pending, evs...)
	s.publishLocked(evs)
	if by.Kind != ByLoop {
		// A provider's proposal is acknowledged only once durable.
		if err := s.flushLocked(context.Background()); err != nil {
			return nil, err
		}
	}
	return evs, nil
}

// Flush makes every committed event durable with one write and one sync.
// The loop flushes before each side effect (a model call, a tool run) and
// at the end of every step and turn, so a crash never loses an event whose
// consequences escaped the process.
func (s *Session) Flush() error { return s.FlushContext(context.Background()) }

// FlushContext is Flush with a context for the store's write. A write the
// context cancels fails like any other: the session refuses further
// appends and must be reopened.
func (s *Session) FlushContext(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushLocked(ctx)
}

func (s *Session) flushLocked(ctx context.Context) error {
	if s.broken != nil {
		return s.broken
	}
	if len(s.pending) == 0 || s.store == nil {
		s.pending = s.pending[:0]
		return nil
	}
	evs := s.pending
	if err := s.store.Append(ctx, evs); err != nil {
		s.broken = fmt.Errorf("session %s: the durable log is behind the in-memory log after a failed write (seq %d..%d); reopen the session: %w",
			s.id, evs[0].Seq, evs[len(evs)-1].Seq, err)
		return s.broken
	}
	s.pending = s.pending[:0]
	return nil
}

// PluginFailure is the data of a plugin/failure event.
type PluginFailure struct {
	Plugin string `json:"plugin"`
	Kind   string `json:"kind"`
	Error  string `json:"error"`
	Turn   int64  `json:"turn,omitzero"`
	Step   int64  `json:"step,omitzero"`
	// Excused marks a failure that is not the plugin's (the caller
	// cancelled, the plugin was closed, the log moved during the call):
	// failure breakers do not count it.
	Excused bool `json:"excused,omitzero"`
	// Disabled marks the failure that disabled the plugin for the rest of
	// the session (its failure breaker opened).
	Disabled bool `json:"disabled,omitzero"`
}

// ErrExcused is matched by errors that are not the failing plugin's fault.
var ErrExcused = errors.New("not the plugin's fault")

// ErrPluginDisabled is matched by the error of a provider whose failure
// breaker disabled it for the session.
var ErrPluginDisabled = errors.New("plugin disabled for this session")

// ReportFailure records that a provider failed or that its proposal was
// rejected, as an ignorable plugin/failure event. The session goes on.
func (s *Session) ReportFailure(by Proposer, err error) {
	turn, step := s.log.OpenTurn()
	data, derr := surface.Data(PluginFailure{Plugin: by.ID, Kind: string(by.Kind), Error: err.Error(), Turn: turn, Step: step,
		Excused: errors.Is(err, ErrExcused), Disabled: errors.Is(err, ErrPluginDisabled)})
	if derr != nil {
		return
	}
	s.Propose(Proposer{Kind: ByLoop}, surface.Proposal{Type: surface.TypePluginFailure, Data: data, Ignorable: true})
}

// append is Propose for the loop with one event built from typed data.
func (s *Session) append(typ string, data any, op surface.Op, sources []int64) (surface.Event, error) {
	b, err := eventData(data)
	if err != nil {
		return surface.Event{}, fmt.Errorf("encode %s: %w", typ, err)
	}
	evs, err := s.Propose(Proposer{Kind: ByLoop}, surface.Proposal{Type: typ, Data: b, Op: op, Sources: sources})
	if err != nil {
		return surface.Event{}, err
	}
	return evs[0], nil
}

// Repair closes a turn a crash left open (spec 13.4) and persists the
// closers. It returns the appended events; none for a balanced log.
func (s *Session) Repair() ([]surface.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return nil, s.broken
	}
	evs, err := s.log.Repair(s.newID)
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	s.pending = append(s.pending, evs...)
	s.publishLocked(evs)
	return evs, s.flushLocked(context.Background())
}

// shrinks checks that every replacement a compaction provider proposes is
// smaller than the nodes it shadows, by the fixed estimate of spec 12.1
// applied to the messages' JSON: a compaction that does not reduce the
// surface is refused, whatever the provider believes. Ranges that are not
// on the current surface (a later pass of the same batch) are left to
// admission.
func (s *Session) shrinks(by Proposer, ps []surface.Proposal) error {
	var nodes []surface.NodeInfo
	for i, p := range ps {
		if p.Op.Kind != surface.OpReplace {
			continue
		}
		if nodes == nil {
			nodes = s.log.Surface()
		}
		from, to := -1, -1
		for k, n := range nodes {
			if n.Seq == p.Op.Start {
				from = k
			}
			if n.Seq == p.Op.End {
				to = k
			}
		}
		if from < 0 || to < from {
			continue
		}
		var old int64
		for _, n := range nodes[from : to+1] {
			if e, ok := s.log.Event(n.Seq); ok {
				old += estimate(e.Data)
			}
		}
		if neu := estimate(p.Data); neu >= old {
			return fmt.Errorf("%s: proposal %d (%s) is not smaller than the %d node(s) it replaces: about %d tokens for %d: %w",
				by, i, p.Type, to-from+1, neu, old, ErrNotSmaller)
		}
	}
	return nil
}

// ErrNotSmaller is the error of a compaction that would not shrink the surface.
var ErrNotSmaller = errors.New("a compaction must shrink the surface")

// estimate is the fixed token estimate of a JSON value: UTF-16 length / 4.
// Valid UTF-8 is measured in place (one unit per character, two for one
// above U+FFFF, as tokenizer.UTF16Len counts); only invalid data is copied
// into a string for UTF16Len's decoding of it.
func estimate(b []byte) int64 {
	n := 0
	if utf8.Valid(b) {
		for _, c := range b {
			if c < 0x80 || c >= 0xC0 {
				n++
				if c >= 0xF0 {
					n++
				}
			}
		}
	} else {
		n = tokenizer.UTF16Len(string(b))
	}
	return int64((n + 3) / 4)
}

// bracketFree enforces the compaction lock (spec 11.6): a batch that opens
// a compaction/start while the latest compaction marker is a start with no
// end (and no session/end-seed after it, which would make it a dead
// lifecycle) is refused, whoever proposes it.
func (s *Session) bracketFree(by Proposer, ps []surface.Proposal) error {
	opens := false
	for _, p := range ps {
		opens = opens || p.Type == surface.TypeCompactionStart
	}
	if !opens {
		return nil
	}
	evs := s.log.Events()
	for i := len(evs) - 1; i >= 0; i-- {
		switch evs[i].Type {
		case surface.TypeEndSeed, surface.TypeCompactionEnd:
			return nil
		case surface.TypeCompactionStart:
			return fmt.Errorf("%s: a compaction is already in progress: compaction/start at seq %d has no compaction/end: %w",
				by, evs[i].Seq, ErrCompactionBusy)
		}
	}
	return nil
}

// ErrCompactionBusy is the error of a compaction opened inside another.
var ErrCompactionBusy = errors.New("compaction busy")
