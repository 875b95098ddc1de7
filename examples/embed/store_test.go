package embed_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/host/store/storetest"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

// mapStore is a custom session store: each session is a list of encoded
// events in a map. A store only stores; host.Open does the resume (the
// admission of every event, the end-seed marker, the open-compaction
// check), so this is all a store needs.
type mapStore struct {
	mu       sync.Mutex
	sessions map[string][][]byte
	created  map[string]int64
	headers  map[string]*jsonl.Header
	held     map[string]bool
}

func newMapStore() *mapStore {
	return &mapStore{sessions: map[string][][]byte{}, created: map[string]int64{}, headers: map[string]*jsonl.Header{}, held: map[string]bool{}}
}

func (m *mapStore) Open(ctx context.Context, id string, opt store.OpenOptions, load func(surface.Event) error) (store.Writer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	evs, ok := m.sessions[id]
	switch {
	case m.held[id]:
		m.mu.Unlock()
		return nil, fmt.Errorf("session %s: %w", id, store.ErrLocked)
	case !ok && !opt.Create:
		m.mu.Unlock()
		return nil, fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	}
	if !ok {
		m.created[id] = opt.CreatedAt
		if opt.Header != nil {
			h := *opt.Header
			h.ID, h.CreatedAt = id, opt.CreatedAt
			m.headers[id] = &h
		}
	}
	m.held[id], m.sessions[id] = true, evs
	m.mu.Unlock()
	w := &mapWriter{m: m, id: id}
	if _, err := m.Load(ctx, id, load); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

func (m *mapStore) Load(ctx context.Context, id string, fn func(surface.Event) error) (store.Info, error) {
	m.mu.Lock()
	evs, ok := m.sessions[id]
	info := store.Info{ID: id, CreatedAt: m.created[id], Events: int64(len(evs)), Header: m.headers[id]}
	m.mu.Unlock()
	if !ok {
		return store.Info{}, fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	}
	for _, b := range evs {
		e, err := surface.DecodeEvent(b)
		if err == nil {
			err = ctx.Err()
		}
		if err == nil {
			err = fn(e)
		}
		if err != nil {
			return store.Info{}, err
		}
	}
	return info, nil
}

func (m *mapStore) List(context.Context) ([]store.Info, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.Info
	for id, evs := range m.sessions {
		out = append(out, store.Info{ID: id, CreatedAt: m.created[id], Events: int64(len(evs))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (m *mapStore) Close() error { return nil }

type mapWriter struct {
	m      *mapStore
	id     string
	closed bool
}

func (w *mapWriter) Info() store.Info {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	return store.Info{ID: w.id, CreatedAt: w.m.created[w.id], Events: int64(len(w.m.sessions[w.id]))}
}

// Append stores the whole batch or nothing: it checks the batch first.
func (w *mapWriter) Append(ctx context.Context, batch []surface.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if w.closed {
		return store.ErrClosed
	}
	if err := store.CheckBatch(w.id, int64(len(w.m.sessions[w.id])), batch); err != nil {
		return err
	}
	for i := range batch {
		w.m.sessions[w.id] = append(w.m.sessions[w.id], surface.AppendEvent(nil, &batch[i]))
	}
	return nil
}

func (w *mapWriter) Close() error {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if !w.closed {
		w.closed, w.m.held[w.id] = true, false
	}
	return nil
}

// A session kept in a custom store: host.Open creates it, Close flushes
// it, and opening it again resumes it with its end-seed marker.
func Example_customStore() {
	ctx := context.Background()
	st := newMapStore()
	s, err := host.Open(ctx, st, "notes", host.WithIDs(host.CounterIDs("m")))
	if err != nil {
		panic(err)
	}
	s.Propose(host.Proposer{Kind: host.ByLoop}, surface.Proposal{Type: "app/note", Data: []byte(`{"text":"hello"}`), Ignorable: true})
	s.Close()

	s, err = host.Open(ctx, st, "notes")
	if err != nil {
		panic(err)
	}
	defer s.Close()
	for _, e := range s.Log().Events() {
		fmt.Println(e.Seq, e.Type)
	}
	// Output:
	// 0 app/note
	// 1 session/end-seed
}

// The custom store passes the store conformance suite (its lease cannot
// lapse and it does not outlive the process, so the fencing and crash
// trials are skipped).
func TestCustomStoreConforms(t *testing.T) {
	storetest.Run(t, storetest.Harness{New: func(testing.TB) store.Store { return newMapStore() }})
}
