// Package file is the default session store: one JSONL file per session
// (format v3, package surface/jsonl), with its guarantees unchanged: a
// batch is synced before it is acknowledged, a torn tail left by a crash is
// truncated on the next open, and an advisory lock (flock) keeps a second
// writer out until the first closes or its process dies.
package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

// Ext is the extension of a session file in a Dir store.
const Ext = ".jsonl"

// Store keeps sessions as files: either every session in one folder (Dir),
// session id as the file name, or one session at one path (Single).
type Store struct {
	dir    string
	single string // the path of a Single store
	opts   []jsonl.Option
}

// Option configures a Store.
type Option func(*Store)

// NoSync turns fsync off: appends are acknowledged once written to the
// operating system, not once durable. Only for tests and benchmarks.
func NoSync() Option { return func(s *Store) { s.opts = append(s.opts, jsonl.NoSync()) } }

// Dir returns the store of the sessions in folder dir: session id is kept
// in dir/id.jsonl. The folder is created on the first Open that creates a
// session.
func Dir(dir string, opts ...Option) *Store {
	s := &Store{dir: dir}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Single returns the store of the one session file at path, whatever its
// name. Open and Load ignore the id they are given, except that a session
// Open creates gets it in its header; the Info they return carries the id
// of the file's header.
func Single(path string, opts ...Option) *Store {
	s := Dir(filepath.Dir(path), opts...)
	s.single = path
	return s
}

// Path is the file of session id.
func (s *Store) Path(id string) (string, error) {
	if s.single != "" {
		return s.single, nil
	}
	if err := store.CheckID(id); err != nil {
		return "", err
	}
	return filepath.Join(s.dir, id+Ext), nil
}

// Open implements store.Store. Opening an existing session takes its
// file's lock. A session Open creates is written, and its lock taken, by
// the first Append, which publishes the file without overwriting: when
// another writer published it first, that Append fails with an error
// matching store.ErrFenced.
func (s *Store) Open(ctx context.Context, id string, opt store.OpenOptions, load func(surface.Event) error) (store.Writer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := s.Path(id)
	if err != nil {
		return nil, err
	}
	if load == nil {
		load = func(surface.Event) error { return nil }
	}
	for attempt := 0; ; attempt++ {
		w, err := s.open(path, id, opt, load)
		if err != nil && attempt == 0 && errors.Is(err, fs.ErrExist) {
			continue // another writer published the file meanwhile: open it
		}
		return w, err
	}
}

func (s *Store) open(path, id string, opt store.OpenOptions, load func(surface.Event) error) (store.Writer, error) {
	js, _, err := jsonl.Open(path, append(s.opts[:len(s.opts):len(s.opts)], jsonl.Each(load))...)
	switch {
	case err == nil:
		h := js.Header()
		return &writer{js: js, info: store.Info{ID: s.idOf(path, h.ID), CreatedAt: h.CreatedAt, Events: js.NextSeq()}}, nil
	case errors.Is(err, jsonl.ErrLocked):
		return nil, also{err, store.ErrLocked}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	case !opt.Create:
		return nil, fmt.Errorf("session %s: no file %s: %w", id, path, store.ErrNotFound)
	}
	if err := store.CheckID(id); err != nil {
		return nil, err
	}
	if s.single == "" {
		if err := os.MkdirAll(s.dir, 0o755); err != nil {
			return nil, fmt.Errorf("session folder: %w", err)
		}
	}
	created := opt.CreatedAt
	if created == 0 {
		created = time.Now().UnixMilli()
	}
	h := jsonl.Header{}
	if opt.Header != nil {
		h = *opt.Header
	}
	h.ID, h.CreatedAt = id, created
	js, err = jsonl.Create(path, h, s.opts...)
	if err != nil {
		return nil, err
	}
	return &writer{js: js, info: store.Info{ID: id, CreatedAt: created}}, nil
}

// Load implements store.Store.
func (s *Store) Load(ctx context.Context, id string, fn func(surface.Event) error) (store.Info, error) {
	if err := ctx.Err(); err != nil {
		return store.Info{}, err
	}
	path, err := s.Path(id)
	if err != nil {
		return store.Info{}, err
	}
	ld, err := jsonl.Load(path, jsonl.Each(fn))
	if errors.Is(err, fs.ErrNotExist) {
		return store.Info{}, fmt.Errorf("session %s: no file %s: %w", id, path, store.ErrNotFound)
	}
	if err != nil {
		return store.Info{}, err
	}
	info := store.Info{ID: s.idOf(path, ld.Header.ID), CreatedAt: ld.Header.CreatedAt, Events: ld.Events, Header: &ld.Header}
	if st, err := os.Stat(path); err == nil {
		info.UpdatedAt = st.ModTime().UnixMilli()
	}
	return info, nil
}

// List implements store.Store: the files of the folder whose names end in
// .jsonl, by file name (the session id), with their creation time and event
// count read from the file. A file that does not read as a session is left
// out.
func (s *Store) List(ctx context.Context) ([]store.Info, error) {
	var names []string
	if s.single != "" {
		names = []string{s.single}
	} else {
		ents, err := os.ReadDir(s.dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		for _, e := range ents {
			if e.Type().IsRegular() && strings.HasSuffix(e.Name(), Ext) && !strings.HasPrefix(e.Name(), ".") {
				names = append(names, filepath.Join(s.dir, e.Name()))
			}
		}
	}
	var out []store.Info
	for _, p := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		info, err := s.info(p)
		if err != nil {
			continue
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// idOf is the id of the session in the file at path whose header names
// header: in a Dir store the file's name without .jsonl, the id Open, Load
// and List take and report (a file renamed, or named by time as "weir
// run" names its new files, keeps the id it was written with in its
// header); in a Single store the header's.
func (s *Store) idOf(path, header string) string {
	if s.single != "" {
		return header
	}
	return strings.TrimSuffix(filepath.Base(path), Ext)
}

// info counts a file's events without decoding them.
func (s *Store) info(path string) (store.Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return store.Info{}, err
	}
	defer f.Close()
	h, evs, _, err := jsonl.ReadEvents(f)
	if err != nil {
		return store.Info{}, err
	}
	info := store.Info{ID: s.idOf(path, h.ID), CreatedAt: h.CreatedAt, Events: int64(len(evs))}
	if st, err := f.Stat(); err == nil {
		info.UpdatedAt = st.ModTime().UnixMilli()
	}
	return info, nil
}

// Delete implements store.Deleter.
func (s *Store) Delete(ctx context.Context, id string) error {
	path, err := s.Path(id)
	if err != nil {
		return err
	}
	js, _, err := jsonl.Open(path, jsonl.Each(func(surface.Event) error { return nil }))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	}
	if errors.Is(err, jsonl.ErrLocked) {
		return also{err, store.ErrLocked}
	}
	if err != nil {
		return err
	}
	defer js.Close()
	return os.Remove(path)
}

// Lease implements store.Leaser: whether a writer holds the lock of
// session id's file, and which process when the system tells (Linux). A
// held lock lasts until its holder closes the session or its process
// ends (Lease.UntilExit). Asking takes the lock shared for an instant: a
// writer opening the session in that instant is refused (store.ErrLocked)
// and may open it again.
func (s *Store) Lease(ctx context.Context, id string) (store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return store.Lease{}, err
	}
	path, err := s.Path(id)
	if err != nil {
		return store.Lease{}, err
	}
	pid, held, err := holder(path)
	if errors.Is(err, fs.ErrNotExist) {
		return store.Lease{}, fmt.Errorf("session %s: no file %s: %w", id, path, store.ErrNotFound)
	}
	if err != nil || !held {
		return store.Lease{}, err
	}
	l := store.Lease{UntilExit: true}
	if pid > 0 {
		l.Holder = "pid " + strconv.Itoa(pid)
	}
	return l, nil
}

// Lapse implements store.Leaser. A file's lock ends only with its holder
// (when it closes the session or its process ends, the system releases
// it), so there is never a dead writer's lock to end: a free lock is left
// as it is, and a held one is refused with an error matching
// store.ErrLocked naming the process.
func (s *Store) Lapse(ctx context.Context, id string) error {
	l, err := s.Lease(ctx, id)
	if err != nil || !l.Held() {
		return err
	}
	who := "a live process of this machine"
	if l.Holder != "" {
		who = "live process " + strings.TrimPrefix(l.Holder, "pid ")
	}
	path, _ := s.Path(id)
	return fmt.Errorf("session %s: %s holds the lock of %s; a file's lock cannot be released from outside and never outlives its writer: it ends when that process closes the session or exits (stop it, and the next writer opens at once): %w",
		id, who, path, store.ErrLocked)
}

// Close implements store.Store; a file store holds nothing open.
func (s *Store) Close() error { return nil }

type writer struct {
	js   *jsonl.Session
	info store.Info
}

func (w *writer) Info() store.Info {
	i := w.info
	i.Events = w.js.NextSeq()
	return i
}

func (w *writer) Append(ctx context.Context, batch []surface.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := w.js.Append(batch)
	switch {
	case errors.Is(err, fs.ErrExist):
		return also{err, store.ErrFenced}
	case errors.Is(err, jsonl.ErrNotContinuous):
		return also{err, store.ErrNotContinuous}
	case errors.Is(err, jsonl.ErrClosed):
		return also{err, store.ErrClosed}
	}
	return err
}

func (w *writer) Close() error { return w.js.Close() }

// also is a jsonl error that also matches the store contract's error
// for the same rule, with the jsonl error's message.
type also struct {
	error
	rule error
}

func (e also) Unwrap() error        { return e.error }
func (e also) Is(target error) bool { return target == e.rule }
