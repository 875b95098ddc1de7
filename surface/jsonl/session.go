package jsonl

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/weirhost/weir/surface/internal/atomicfile"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/weirhost/weir/surface"
)

// file is the part of *os.File a Session writes through; tests substitute
// it to inject failures.
type file interface {
	WriteAt(b []byte, off int64) (int, error)
	Sync() error
	Truncate(size int64) error
}

// Session is the single writer of one session file. It appends batches of
// committed events as whole lines and acknowledges a batch only once it is
// durable. It is safe for concurrent use, but a session has one writer: an
// advisory lock on the file keeps every other Session, in this process or
// another, out until Close.
type Session struct {
	mu     sync.Mutex
	path   string
	cfg    *config
	header Header
	osf    *os.File // the published, locked file; nil before the first append of a created session
	f      file     // writes go through f (osf unless a test wraps it)
	wrap   func(*os.File) file
	size   int64 // committed bytes
	next   int64 // seq of the next event to store
	torn   int64
	broken error
	closed bool
	buf    []byte
}

// Create prepares a new session file at path with header h. It writes
// nothing: the first Append writes the header and the first batch to a
// temporary file in the same directory, syncs it and publishes it under path
// without overwriting (an existing file makes that Append fail with an error
// matching fs.ErrExist), then syncs the directory. Create already refuses a
// path that exists.
func Create(path string, h Header, opts ...Option) (*Session, error) {
	if _, err := appendHeader(nil, &h); err != nil {
		return nil, fmt.Errorf("create session log %s: %w", path, err)
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("create session log %s: %w: refusing to overwrite an existing session", path, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("create session log: %w", err)
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("create session log: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("create session log %s: %s is not a directory", path, filepath.Dir(path))
	}
	return &Session{path: path, cfg: newConfig(opts), header: h, wrap: osFile}, nil
}

func osFile(f *os.File) file { return f }

// Open opens the session file at path for writing: it takes the writer's
// lock (failing at once with a *LockedError when another writer holds it),
// loads and validates the file (see Load), physically truncates a torn tail,
// and returns the restored log and a Session positioned at its end. Like
// Load it refuses a path that is not a regular file. With the Each option
// the events go to its function instead and the returned log is nil.
func Open(path string, opts ...Option) (*Session, *surface.Log, error) {
	cfg := newConfig(opts)
	f, err := openRegular(path, os.O_RDWR)
	if err != nil {
		return nil, nil, fmt.Errorf("open session log: %w", err)
	}
	if err := lock(f, path); err != nil {
		f.Close()
		return nil, nil, err
	}
	// The lock is the file's, not the path's: a file deleted (by a writer
	// holding the lock) between the open and the lock would take appends
	// no one can read.
	if err := samePath(f, path); err != nil {
		f.Close()
		return nil, nil, err
	}
	ld, err := read(f, path, cfg)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if ld.Torn > 0 {
		err := f.Truncate(ld.Size)
		if err == nil && cfg.sync {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("session log %s: truncate the torn tail (%d bytes) at %d: %w", path, ld.Torn, ld.Size, err)
		}
	}
	removeTemps(path)
	s := &Session{path: path, cfg: cfg, header: ld.Header, osf: f, f: f, wrap: osFile,
		size: ld.Size, next: ld.Events, torn: ld.Torn}
	return s, ld.Log, nil
}

// samePath checks that path still names the file f, opened from it.
func samePath(f *os.File, path string) error {
	fst, err := f.Stat()
	if err != nil {
		return fmt.Errorf("open session log %s: %w", path, err)
	}
	pst, err := os.Stat(path)
	if err == nil && !os.SameFile(fst, pst) {
		err = fs.ErrNotExist
	}
	if err != nil {
		return fmt.Errorf("open session log %s: deleted or replaced while it was being opened: %w", path, err)
	}
	return nil
}

// removeTemps deletes temporary files of unfinished publications of path.
// Once path exists no publication of it can succeed, so they are garbage.
func removeTemps(path string) {
	names, _ := filepath.Glob(filepath.Join(filepath.Dir(path), tempPrefix(path)+"*"))
	for _, n := range names {
		os.Remove(n)
	}
}

func tempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp-" }

// Path is the session file's path.
func (s *Session) Path() string { return s.path }

// Header is the session file's header.
func (s *Session) Header() Header { return s.header }

// NextSeq is the seq the next appended batch must start with: the number
// of events stored.
func (s *Session) NextSeq() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// Size is the number of bytes committed to the file.
func (s *Session) Size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size
}

// Torn is the length of the torn tail Open dropped and truncated.
func (s *Session) Torn() int64 { return s.torn }

// Append stores batch, events the caller's surface.Log has already admitted
// (a batch returned by Log.AppendBatch, for instance), as whole lines with
// one write, and syncs the file before returning. An event is acknowledged
// only when the Append of its batch returns nil. The batch must continue the
// stored log: its first seq is NextSeq and its seqs are contiguous, else the
// error matches ErrNotContinuous and nothing is written. When the write or
// the sync fails, the file is truncated back to its previous length and the
// error returned: the batch is not stored and may be appended again. An
// empty batch is a no-op.
func (s *Session) Append(batch []surface.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.append(batch)
}

// Persist appends every event of l that the file does not hold yet: the
// natural call after Log.Append or Log.AppendBatch. l must be the log this
// Session stores (the one Open returned, or the one whose events a created
// Session receives).
func (s *Session) Persist(l *surface.Log) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	base, next := l.BaseSeq(), l.NextSeq()
	if s.next < base || s.next > next {
		return fmt.Errorf("session log %s: the log holds seqs %d..%d, but the file continues at seq %d: %w",
			s.path, base, next-1, s.next, ErrNotContinuous)
	}
	return s.append(l.Events()[s.next-base:])
}

func (s *Session) append(batch []surface.Event) error {
	if s.closed {
		return fmt.Errorf("session log %s: %w", s.path, ErrClosed)
	}
	if s.broken != nil {
		return s.broken
	}
	if len(batch) == 0 {
		return nil
	}
	for i := range batch {
		if want := s.next + int64(i); batch[i].Seq != want {
			return fmt.Errorf("session log %s: batch event %d has seq %d, but the stored log continues with seq %d: %w",
				s.path, i, batch[i].Seq, want, ErrNotContinuous)
		}
	}
	buf := s.buf[:0]
	if s.osf == nil {
		var err error
		if buf, err = appendHeader(buf, &s.header); err != nil {
			return fmt.Errorf("session log %s: %w", s.path, err)
		}
		buf = append(buf, '\n')
	}
	for i := range batch {
		start := len(buf)
		buf = surface.AppendEvent(buf, &batch[i])
		if bytes.IndexByte(buf[start:], '\n') >= 0 {
			return fmt.Errorf("session log %s: event seq %d (%s) encodes with a line break; only events admitted by a surface.Log can be stored",
				s.path, batch[i].Seq, batch[i].Type)
		}
		buf = append(buf, '\n')
	}
	if cap(buf) <= 4<<20 {
		s.buf = buf[:0]
	} else {
		s.buf = nil
	}
	var err error
	if s.osf == nil {
		err = s.publish(buf)
	} else {
		err = s.write(buf)
	}
	if err != nil {
		return fmt.Errorf("session log %s: append seq %d..%d: %w", s.path, batch[0].Seq, batch[len(batch)-1].Seq, err)
	}
	s.next += int64(len(batch))
	s.size += int64(len(buf))
	return nil
}

// write appends buf at the end of the committed content and syncs it. On
// failure it truncates the file back; if even that fails the session is
// broken and refuses further appends.
func (s *Session) write(buf []byte) error {
	n, err := s.f.WriteAt(buf, s.size)
	if err == nil && n < len(buf) {
		err = io.ErrShortWrite
	}
	if err == nil && s.cfg.sync {
		err = s.f.Sync()
	}
	if err == nil {
		return nil
	}
	if terr := s.f.Truncate(s.size); terr != nil {
		s.broken = fmt.Errorf("session log %s: a failed append (%w) could not be undone by truncating back to %d bytes (%w); the file may end in a partial batch and this writer refuses further appends; reopen it",
			s.path, err, s.size, terr)
		return s.broken
	}
	if s.cfg.sync {
		// Best effort: if the truncation is not durable yet, the next
		// successful sync makes it so, and until then a crash can only
		// bring back lines of this unacknowledged batch.
		s.f.Sync()
	}
	return fmt.Errorf("%w (file truncated back to %d bytes)", err, s.size)
}

// publish writes the header and the first batch to a temporary file, syncs
// it, takes the writer's lock on it and moves it to the session path without
// overwriting, then syncs the directory.
func (s *Session) publish(buf []byte) (err error) {
	dir := filepath.Dir(s.path)
	tmp, err := os.CreateTemp(dir, tempPrefix(s.path))
	if err != nil {
		return fmt.Errorf("create the temporary file: %w", err)
	}
	published := false
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			if published {
				os.Remove(s.path)
			}
		}
	}()
	f := s.wrap(tmp)
	n, err := f.WriteAt(buf, 0)
	if err == nil && n < len(buf) {
		err = io.ErrShortWrite
	}
	if err == nil && s.cfg.sync {
		err = f.Sync()
	}
	if err != nil {
		return fmt.Errorf("write the temporary file: %w", err)
	}
	if err = lock(tmp, s.path); err != nil {
		return err
	}
	if err = atomicfile.PublishNoReplace(tmp.Name(), s.path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("publish: %w: another session was created at this path; refusing to overwrite it", fs.ErrExist)
		}
		return fmt.Errorf("publish: %w", err)
	}
	published = true
	if s.cfg.sync {
		if err = atomicfile.SyncDir(dir); err != nil {
			return fmt.Errorf("sync directory %s: %w", dir, err)
		}
	}
	s.osf, s.f = tmp, f
	return nil
}

// Close releases the writer's lock. A created Session that never appended
// leaves nothing on disk. Close is idempotent.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.osf == nil {
		return nil
	}
	if err := s.osf.Close(); err != nil {
		return fmt.Errorf("close session log %s: %w", s.path, err)
	}
	return nil
}
