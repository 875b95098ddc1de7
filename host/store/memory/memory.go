// Package memory is a session store in memory, for tests and embedders
// that keep sessions only as long as the process. It follows the store
// contract exactly: events are kept as the bytes of their canonical
// encoding and decoded again on load, a batch is stored all or nothing,
// one writer holds a session's lease, and a writer whose lease was taken
// over is fenced out.
package memory

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/host/store/internal/pardec"
	"github.com/weirhost/weir/surface"
)

// Store is an in-memory store. The zero value is not usable; call New.
type Store struct {
	mu       sync.Mutex
	sessions map[string]*session
	epoch    int64 // the last epoch given: every lease of the store gets a new one
	closed   bool
}

type session struct {
	info   store.Info
	events [][]byte
	epoch  int64 // fencing token of the current lease
	held   bool
}

// New returns an empty store.
func New() *Store { return &Store{sessions: map[string]*session{}} }

// Open implements store.Store.
func (s *Store) Open(ctx context.Context, id string, opt store.OpenOptions, load func(surface.Event) error) (store.Writer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := store.CheckID(id); err != nil {
		return nil, err
	}
	if load == nil {
		load = func(surface.Event) error { return nil }
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("memory store: %w", store.ErrClosed)
	}
	ss := s.sessions[id]
	if ss == nil {
		if !opt.Create {
			s.mu.Unlock()
			return nil, fmt.Errorf("session %s: %w", id, store.ErrNotFound)
		}
		created := opt.CreatedAt
		if created == 0 {
			created = time.Now().UnixMilli()
		}
		ss = &session{info: store.Info{ID: id, CreatedAt: created}}
		if opt.Header != nil {
			h := *opt.Header
			h.ID, h.CreatedAt = id, created
			ss.info.Header = &h
		}
		s.sessions[id] = ss
	}
	if ss.held {
		s.mu.Unlock()
		return nil, fmt.Errorf("session %s: another writer holds its lease (epoch %d): %w", id, ss.epoch, store.ErrLocked)
	}
	ss.held = true
	s.epoch++
	ss.epoch = s.epoch
	w := &writer{s: s, ss: ss, epoch: ss.epoch}
	events := ss.events[:len(ss.events):len(ss.events)]
	s.mu.Unlock()
	if err := decodeAll(ctx, events, load); err != nil {
		w.Close()
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	return w, nil
}

func decodeAll(ctx context.Context, events [][]byte, fn func(surface.Event) error) error {
	i := 0
	src := func() (int64, []byte, bool, error) {
		if i == len(events) {
			return 0, nil, false, nil
		}
		i++
		return int64(i - 1), events[i-1], true, nil
	}
	return pardec.Decode(ctx, src, func(_ int64, e surface.Event) error { return fn(e) })
}

// Load implements store.Store.
func (s *Store) Load(ctx context.Context, id string, fn func(surface.Event) error) (store.Info, error) {
	s.mu.Lock()
	ss := s.sessions[id]
	if ss == nil {
		s.mu.Unlock()
		return store.Info{}, fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	}
	info := ss.info
	events := ss.events[:len(ss.events):len(ss.events)]
	s.mu.Unlock()
	info.Events = int64(len(events))
	return info, decodeAll(ctx, events, fn)
}

// List implements store.Store.
func (s *Store) List(ctx context.Context) ([]store.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]store.Info, 0, len(s.sessions))
	for _, ss := range s.sessions {
		i := ss.info
		i.Events = int64(len(ss.events))
		out = append(out, i)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Delete implements store.Deleter.
func (s *Store) Delete(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	switch {
	case ss == nil:
		return fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	case ss.held:
		return fmt.Errorf("session %s: %w", id, store.ErrLocked)
	}
	delete(s.sessions, id)
	return nil
}

// Lapse ends the lease of session id's writer as if it had timed out (its
// host paused past the lease): the next Open takes the session over and
// the old writer's appends are fenced out.
func (s *Store) Lapse(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[id]; ss != nil {
		ss.held = false
	}
}

// Close implements store.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

type writer struct {
	s      *Store
	ss     *session
	epoch  int64
	closed bool
}

func (w *writer) Info() store.Info {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	i := w.ss.info
	i.Events = int64(len(w.ss.events))
	return i
}

func (w *writer) Append(ctx context.Context, batch []surface.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	id := w.ss.info.ID
	switch {
	case w.closed:
		return fmt.Errorf("session %s: writer: %w", id, store.ErrClosed)
	case w.s.sessions[id] != w.ss:
		return fmt.Errorf("session %s was deleted while this writer held it: %w", id, store.ErrFenced)
	case w.ss.epoch != w.epoch:
		return fmt.Errorf("session %s: append refused: this writer's lease (epoch %d) was taken over by epoch %d: %w", id, w.epoch, w.ss.epoch, store.ErrFenced)
	}
	if len(batch) == 0 {
		return nil
	}
	if err := store.CheckBatch(id, int64(len(w.ss.events)), batch); err != nil {
		return err
	}
	for i := range batch {
		w.ss.events = append(w.ss.events, surface.AppendEvent(nil, &batch[i]))
	}
	w.ss.info.UpdatedAt = time.Now().UnixMilli()
	return nil
}

func (w *writer) Close() error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if !w.closed && w.ss.epoch == w.epoch {
		w.ss.held = false
	}
	w.closed = true
	return nil
}
