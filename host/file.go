package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/host/store/file"
	"github.com/weirhost/weir/surface"
)

// Open opens session id of st for writing, creating it when it does not
// exist (unless the Existing option is given); an empty id creates a new
// session with a fresh id. This is the one resume path every store shares:
// the store streams the stored events, each is admitted through a fresh
// surface.Log exactly as an append is; a resumed session (one with events)
// gets its end-seed marker (spec 3.5), and a compaction bracket the
// previous writer left open is reported as a plugin/failure rather than
// closed. The caller's Agent repairs a turn a crash left open. Close the
// session to flush it and release the store's writer lease.
func Open(ctx context.Context, st store.Store, id string, opts ...SessionOption) (*Session, error) {
	probe := NewSession("", nil, nil, opts...)
	var lopts []surface.Option
	var created int64
	if probe.clock != nil {
		lopts = append(lopts, surface.WithClock(probe.clock))
		created = probe.clock()
	}
	if id == "" {
		if probe.mustExist {
			return nil, errors.New("open session: no session id given, and the session must exist")
		}
		id = "session-" + probe.newID()
	}
	l := surface.New(lopts...)
	w, err := st.Open(ctx, id, store.OpenOptions{Create: !probe.mustExist, CreatedAt: created}, l.Admit)
	if err != nil {
		return nil, err
	}
	s := NewSession(w.Info().ID, l, nil, opts...)
	s.store = w
	s.closer = w.Close
	if l.Len() == 0 {
		return s, nil
	}
	orphan := openBracket(l)
	evs, err := l.MarkSeed()
	if err == nil && len(evs) > 0 {
		err = w.Append(ctx, evs)
	}
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("resume session %s: %w", s.id, err)
	}
	if orphan >= 0 {
		// The end-seed just written makes the bracket stale; say so in the
		// log rather than closing it as if it had succeeded.
		s.ReportFailure(Proposer{Kind: ByCompaction}, fmt.Errorf(
			"compaction/start at seq %d was never closed before the session stopped; it is stale now and nothing of it reached the surface", orphan))
		if err := s.FlushContext(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// OpenFile opens the session stored in the file at path for writing,
// creating it when it does not exist: Open on a single-file store
// (file.Single).
func OpenFile(path string, opts ...SessionOption) (*Session, error) {
	// An existing file's header names the session; Single ignores the id.
	id := filepath.Base(path)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		probe := NewSession("", nil, nil, opts...)
		id = "session-" + probe.newID()
	}
	return Open(context.Background(), file.Single(path), id, opts...)
}

// Close flushes the session's committed events to its store, whatever the
// store, and releases the store's writer (for a session Open returned).
// It ends every subscription (their channels close). Close is idempotent.
//
// Close does not wait for a running operation: while a turn or a manual
// compaction runs, it returns at once with an error matching ErrBusy and
// closes nothing (cancel the turn's context, wait for its Run to return,
// then close). After Close, Run, NewAgent and CompactNow return an error
// matching ErrClosed.
func (s *Session) Close() error {
	if !s.busy.CompareAndSwap(false, true) {
		return fmt.Errorf("session %s: cannot close: a turn or compaction is running on it; cancel it and close once it returns: %w", s.id, ErrBusy)
	}
	defer s.busy.Store(false)
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.flushLocked(context.Background())
	s.closeSubsLocked()
	if s.closer != nil {
		err = errors.Join(err, s.closer())
		s.closer = nil
	}
	return err
}

// openBracket returns the seq of a compaction/start that no compaction/end
// or end-seed follows, or -1.
func openBracket(l *surface.Log) int64 {
	evs := l.Events()
	for i := len(evs) - 1; i >= 0; i-- {
		switch evs[i].Type {
		case surface.TypeEndSeed, surface.TypeCompactionEnd:
			return -1
		case surface.TypeCompactionStart:
			return evs[i].Seq
		}
	}
	return -1
}
