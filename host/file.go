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
