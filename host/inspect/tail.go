package inspect

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"

	"github.com/weirhost/weir/surface"
)

// A model is read on from the end of what it folded when its file grew,
// so a session being written costs the server only its new lines. The
// file must still be the one read (same device and inode), at least as
// long as what was folded, with the same header line and the same bytes
// just before the end of the fold; anything else (a file replaced,
// truncated or rewritten) is read again whole.
const (
	headBytes = 4 << 10 // of the header line, digested
	markBytes = 4 << 10 // before the end of the fold, digested
)

// version is what of a session file a model was folded from.
type version struct {
	st     os.FileInfo // the file when it was last read (identity, size, modification time)
	offset int64       // bytes folded: through the last complete line
	tail   bool        // the file can be read on from offset (not a converted v2 log)
	head   [32]byte    // digest of the header line (at most headBytes of it)
	mark   [32]byte    // digest of the markBytes before offset
}

// current reports whether st is the file as it was last read.
func (v *version) current(st os.FileInfo) bool {
	return v.st != nil && os.SameFile(v.st, st) && v.st.Size() == st.Size() && v.st.ModTime().Equal(st.ModTime())
}

// loadVersioned reads a session file whole, with the version it read.
func loadVersioned(path string) (*Session, version, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, version{}, err
	}
	v := version{st: st}
	sess, err := Load(path)
	if err != nil {
		return nil, v, err
	}
	if sess.MigratedFrom != 0 {
		return sess, v, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return sess, v, nil
	}
	defer f.Close()
	if fs, err := f.Stat(); err != nil || !os.SameFile(fs, st) {
		return sess, v, nil // replaced meanwhile: read again whole next time
	}
	head, err := digest(f, 0, min(sess.Size, headBytes), true)
	if err != nil {
		return sess, v, nil
	}
	mark, err := digest(f, max(0, sess.Size-markBytes), sess.Size, false)
	if err != nil {
		return sess, v, nil
	}
	v.offset, v.tail, v.head, v.mark = sess.Size, true, head, mark
	return sess, v, nil
}

// digest is the SHA-256 of f's bytes from..to, or only of the first line
// among them.
func digest(f *os.File, from, to int64, line bool) ([32]byte, error) {
	b := make([]byte, to-from)
	if _, err := f.ReadAt(b, from); err != nil {
		return [32]byte{}, err
	}
	if i := bytes.IndexByte(b, '\n'); line && i >= 0 {
		b = b[:i+1]
	}
	return sha256.Sum256(b), nil
}

// grow folds what the file gained since v into m: the complete lines
// after v.offset (a torn last line waits for its newline), each decoded
// and admitted to the log as a whole read would, then the model advanced
// over them. It reports false when the file must be read again whole: it
// is not the file v read, it is shorter, its header line or the bytes
// before v.offset changed, or a new line does not decode or is not
// admitted (a whole read then reports why). The caller holds m
// exclusively.
func (v *version) grow(path string, m *Model) (bool, error) {
	if !v.tail {
		return false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	if !st.Mode().IsRegular() || !os.SameFile(v.st, st) || st.Size() < v.offset {
		return false, nil
	}
	if h, err := digest(f, 0, min(v.offset, headBytes), true); err != nil || h != v.head {
		return false, err
	}
	if mk, err := digest(f, max(0, v.offset-markBytes), v.offset, false); err != nil || mk != v.mark {
		return false, err
	}
	// What was appended up to the size the file had when it was opened;
	// later appends are read on the next growth.
	buf := make([]byte, st.Size()-v.offset)
	if _, err := f.ReadAt(buf, v.offset); err != nil && err != io.EOF {
		return false, err
	}
	end := bytes.LastIndexByte(buf, '\n') + 1
	dec := surface.Decoder{Alias: true} // buf is not reused
	l := m.Session.Log
	var bad error
	for rest := buf[:end]; len(rest) > 0 && bad == nil; {
		i := bytes.IndexByte(rest, '\n')
		e, err := dec.Decode(rest[:i])
		rest = rest[i+1:]
		if err == nil {
			err = l.Admit(e)
		}
		bad = err
	}
	// The events admitted are a log: the model follows them even when a
	// later line is refused (the caller then reads the file again).
	m.Advance()
	if bad != nil {
		return false, nil
	}
	v.st = st
	if end > 0 {
		v.offset += int64(end)
		if v.mark, err = digest(f, max(0, v.offset-markBytes), v.offset, false); err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
		m.Session.Size = v.offset
	}
	m.Session.Torn = st.Size() - v.offset
	return true, nil
}
