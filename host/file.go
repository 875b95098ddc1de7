package host

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

// OpenFile opens the session stored at path for writing, creating it when
// it does not exist. A resumed session gets its end-seed marker (spec 3.5);
// the caller's Agent repairs a turn a crash left open. Close the session
// to release the file's writer lock.
func OpenFile(path string, opts ...SessionOption) (*Session, error) {
	st, l, err := jsonl.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		probe := NewSession("", nil, nil, opts...)
		id := "session-" + probe.newID()
		created := time.Now().UnixMilli()
		var lopts []surface.Option
		if probe.clock != nil {
			lopts = append(lopts, surface.WithClock(probe.clock))
			created = probe.clock()
		}
		st, err := jsonl.Create(path, jsonl.Header{ID: id, CreatedAt: created})
		if err != nil {
			return nil, err
		}
		s := NewSession(id, surface.New(lopts...), st, opts...)
		s.closer = st.Close
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	orphan := openBracket(l)
	evs, err := l.MarkSeed()
	if err == nil && len(evs) > 0 {
		err = st.Append(evs)
	}
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("resume %s: %w", path, err)
	}
	s := NewSession(st.Header().ID, l, st, opts...)
	s.closer = st.Close
	if orphan >= 0 {
		// The end-seed just written makes the bracket stale; say so in the
		// log rather than closing it as if it had succeeded.
		s.ReportFailure(Proposer{Kind: ByCompaction}, fmt.Errorf(
			"compaction/start at seq %d was never closed before the session stopped; it is stale now and nothing of it reached the surface", orphan))
		if err := s.Flush(); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Close releases the session's store.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closer == nil {
		return nil
	}
	err := errors.Join(s.flushLocked(), s.closer())
	s.closer = nil
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
