package host

import (
	"slices"

	"errors"
	"fmt"
	"github.com/weirhost/weir/host/llm"
	"sync"
	"sync/atomic"

	"github.com/weirhost/weir/surface"
)

// ErrBusy is matched by the error of an operation that needs the session
// to itself (Agent.Run, CompactNow, CompactDryRun) while another one runs
// on it. Nothing was done; try again once the running one returns.
var ErrBusy = errors.New("session busy")

// ErrTurnOpen is matched by the error of Run on a session whose log has a
// turn open that no running operation owns: a previous run failed inside
// it (a store write, an invariant). Reopen the session; NewAgent repairs
// the turn.
var ErrTurnOpen = errors.New("turn still open")

// ErrClosed is matched by the error of an operation on a session Close
// has closed (Agent.Run, NewAgent, CompactNow). Nothing was done or
// queued; reopen the session.
var ErrClosed = errors.New("session closed")

// acquire takes the session for one driving operation (what names it in
// the error) and returns the function that gives it back. Close takes it
// too, so a session is never closed under a running operation.
func (s *Session) acquire(what string) (release func(), err error) {
	if !s.busy.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("session %s: cannot %s: another turn or compaction is running on it: %w", s.id, what, ErrBusy)
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		s.busy.Store(false)
		return nil, fmt.Errorf("session %s: cannot %s: %w", s.id, what, ErrClosed)
	}
	return func() { s.busy.Store(false) }, nil
}

// Busy reports whether a turn or a manual compaction is running on the
// session. It is safe to call from any goroutine; the answer may be stale
// by the time it is read.
func (s *Session) Busy() bool { return s.busy.Load() }

// DefaultSubscriptionBuffer is the buffer of a subscription asked for with
// a buffer below 1.
const DefaultSubscriptionBuffer = 256

// Subscription delivers a session's committed events, in seq order, on a
// channel, from whichever goroutine commits them and without ever blocking
// it. Read Events from any goroutine; a subscriber may call back into the
// session (Snapshot, Flush, Propose when it is the session's driver, even
// Close) without deadlocking, because nothing is delivered under a lock a
// subscriber could wait for.
//
// Slow subscribers: the channel's buffer is bounded. When it is full, the
// event is not delivered and Dropped counts it; the loop never waits. The
// events a subscriber does receive stay in seq order, so a gap in Seq
// shows where events were dropped; Snapshot().Events holds them all.
type Subscription struct{ feed[surface.Event] }

// Delta is a piece of a model reply as it streams, tagged with where it
// belongs: the turn and step, and the step's model attempt (from 1; a
// retried or recovered request is the next attempt). Deltas are not in the
// log: the reply's assistant/message (or assistant/attempt) records the
// whole stream once the attempt ends.
type Delta struct {
	Turn, Step int64
	Attempt    int
	llm.Delta
}

// DeltaSubscription delivers the deltas of the model replies streamed on
// a session, in arrival order, with the same rules as Subscription: a
// bounded buffer, never blocking the loop, Dropped counting what a full
// buffer refused.
type DeltaSubscription struct{ feed[Delta] }

// feed is one subscriber's channel of T.
type feed[T any] struct {
	s       *Session
	c       chan T
	dropped atomic.Uint64
	done    bool // under s.mu
}

// Subscribe returns a subscription to the events the session commits from
// now on (the events already in the log are in Snapshot().Events). buf is
// the channel's buffer (DefaultSubscriptionBuffer when below 1). It is
// safe to call from any goroutine. Cancel it with Close; Session.Close
// ends it too. Either way its channel is closed.
func (s *Session) Subscribe(buf int) *Subscription {
	sub := &Subscription{}
	subscribe(s, &sub.feed, buf, &s.subs)
	return sub
}

// SubscribeDeltas returns a subscription to the deltas of the model
// replies streamed on the session from now on, whichever agent drives it.
// buf, Close and the end of the channel are as for Subscribe.
func (s *Session) SubscribeDeltas(buf int) *DeltaSubscription {
	sub := &DeltaSubscription{}
	subscribe(s, &sub.feed, buf, &s.deltaSubs)
	return sub
}

func subscribe[T any](s *Session, f *feed[T], buf int, list *[]*feed[T]) {
	if buf < 1 {
		buf = DefaultSubscriptionBuffer
	}
	f.s, f.c = s, make(chan T, buf)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		f.done = true
		close(f.c)
		return
	}
	*list = append(*list, f)
	s.deltaSubsN.Store(int32(len(s.deltaSubs)))
}

// Events is the channel the subscription's events arrive on. It is closed
// when the subscription ends.
func (sub *Subscription) Events() <-chan surface.Event { return sub.c }

// Deltas is the channel the subscription's deltas arrive on. It is closed
// when the subscription ends.
func (sub *DeltaSubscription) Deltas() <-chan Delta { return sub.c }

// Dropped counts what was not delivered because the buffer was full.
func (f *feed[T]) Dropped() uint64 { return f.dropped.Load() }

// Close ends the subscription: nothing is delivered after it returns and
// the channel is closed (what is already buffered can still be read). It
// is safe to call from any goroutine, more than once, and from the
// subscriber's own receive loop.
func (f *feed[T]) Close() {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.done {
		return
	}
	f.done = true
	close(f.c)
	switch f := any(f).(type) {
	case *feed[surface.Event]:
		s.subs = slices.DeleteFunc(s.subs, func(o *feed[surface.Event]) bool { return o == f })
	case *feed[Delta]:
		s.deltaSubs = slices.DeleteFunc(s.deltaSubs, func(o *feed[Delta]) bool { return o == f })
		s.deltaSubsN.Store(int32(len(s.deltaSubs)))
	}
}

// offer hands v to the subscriber without blocking. s.mu is held.
func (f *feed[T]) offer(v T) {
	select {
	case f.c <- v:
	default:
		f.dropped.Add(1)
	}
}

// publishLocked offers committed events to every subscription, without
// blocking. s.mu is held.
func (s *Session) publishLocked(evs []surface.Event) {
	for _, sub := range s.subs {
		for _, e := range evs {
			sub.offer(e)
		}
	}
}

// publishDelta offers a delta to every delta subscription, without
// blocking. It costs one atomic load when there is none.
func (s *Session) publishDelta(d Delta) {
	if s.deltaSubsN.Load() == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sub := range s.deltaSubs {
		sub.offer(d)
	}
}

// closeSubsLocked ends every subscription; later ones start closed. s.mu
// is held.
func (s *Session) closeSubsLocked() {
	s.closed = true
	for _, sub := range s.subs {
		sub.done = true
		close(sub.c)
	}
	for _, sub := range s.deltaSubs {
		sub.done = true
		close(sub.c)
	}
	s.subs, s.deltaSubs = nil, nil
	s.deltaSubsN.Store(0)
}

// Snapshot is an immutable view of a session's log at one instant. It is
// safe to read from any goroutine, also while a turn goes on writing the
// session, and to share between goroutines. Its slices and the messages it
// returns are shared: read them, do not modify them.
type Snapshot struct {
	// ID is the session id.
	ID string
	// Events are the committed events of the log window, in seq order.
	Events []surface.Event
	// BaseSeq is the seq of Events[0]; NextSeq the seq of the next event.
	BaseSeq, NextSeq int64
	// Nodes are the surface's seqs in surface order.
	Nodes []int64
	// Turn and Step are the open turn and step (0 when none); LastTurn is
	// the latest turn started.
	Turn, Step, LastTurn int64
	// Busy reports whether a turn or manual compaction was running.
	Busy bool

	once     sync.Once
	messages []*surface.Message
	surface  []surface.NodeInfo
}

// Snapshot returns an immutable view of the log as it is now. Taking one
// costs a copy of the surface's seqs under the session's mutex; the
// derived views (Messages, Surface) are built on first use, outside it.
// It is safe to call from any goroutine at any time, also from a
// subscriber.
func (s *Session) Snapshot() *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	turn, step := s.log.OpenTurn()
	return &Snapshot{ID: s.id, Events: s.log.Events(), BaseSeq: s.log.BaseSeq(), NextSeq: s.log.NextSeq(),
		Nodes: s.log.Nodes(), Turn: turn, Step: step, LastTurn: s.log.LastTurn(), Busy: s.busy.Load()}
}

// derive builds the derived views from the snapshot's own copy of the log
// (the live log's caches belong to the session's driver).
func (sn *Snapshot) derive() {
	sn.once.Do(func() {
		l, err := surface.RestoreWindow(sn.BaseSeq, sn.Events)
		if err != nil {
			// The events were committed by the same admission path.
			panic(fmt.Sprintf("host: snapshot of session %s does not restore: %v", sn.ID, err))
		}
		sn.messages, sn.surface = l.Messages(), l.Surface()
	})
}

// Messages is the wire history of the surface at the snapshot (see
// surface.Log.Messages).
func (sn *Snapshot) Messages() []*surface.Message {
	sn.derive()
	return sn.messages
}

// Surface describes the surface's nodes at the snapshot (see
// surface.Log.Surface).
func (sn *Snapshot) Surface() []surface.NodeInfo {
	sn.derive()
	return sn.surface
}

// TurnError is a turn that ended with an error, aborted or blocked, as an
// error an embedder can branch on: errors.Is matches ErrTurnFailed,
// ErrTurnAborted or ErrTurnBlocked, and errors.As gives the turn and its
// logged reason (with the error's stable code, for a failure).
type TurnError struct {
	Turn   int64
	Reason surface.EndReason
}

// Turn end sentinels matched by a *TurnError.
var (
	ErrTurnFailed  = errors.New("turn failed")
	ErrTurnAborted = errors.New("turn aborted")
	ErrTurnBlocked = errors.New("turn blocked")
)

func (e *TurnError) Error() string {
	switch e.Reason.Kind {
	case surface.EndError:
		if c := e.Reason.Error; c != nil {
			return fmt.Sprintf("turn %d failed: %s (%s)", e.Turn, c.Message, c.Code)
		}
		return fmt.Sprintf("turn %d failed", e.Turn)
	case surface.EndAborted:
		return fmt.Sprintf("turn %d aborted: %s", e.Turn, e.Reason.Reason)
	}
	return fmt.Sprintf("turn %d ended %s", e.Turn, e.Reason.Kind)
}

// Is matches the sentinel of the turn's end kind.
func (e *TurnError) Is(target error) bool {
	switch e.Reason.Kind {
	case surface.EndError:
		return target == ErrTurnFailed
	case surface.EndAborted:
		return target == ErrTurnAborted
	case surface.EndBlocked:
		return target == ErrTurnBlocked
	}
	return false
}

// Code is the stable code of a failed turn's error ("" otherwise), such
// as an llm error code or MAX_STEPS.
func (e *TurnError) Code() string {
	if e.Reason.Error != nil {
		return e.Reason.Error.Code
	}
	return ""
}

// Err is nil for a turn that completed (or stopped at the output limit)
// and a *TurnError for one that failed, was aborted or was blocked.
func (r *TurnResult) Err() error {
	if r == nil {
		return nil
	}
	switch r.Reason.Kind {
	case surface.EndError, surface.EndAborted, surface.EndBlocked:
		return &TurnError{Turn: r.Turn, Reason: r.Reason}
	}
	return nil
}
