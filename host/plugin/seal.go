package plugin

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Sealed entries. wazero reads an entry of its compilation cache by name
// (a hash of the module, the wazero version and CPU feature bits) and
// runs the native code it holds after checking only a CRC, which anyone
// can recompute. The runtime therefore seals every entry it lets wazero
// read: beside entry NAME it keeps NAME.seal, holding an HMAC-SHA256 of
// the entry's name and bytes under the cache key, a per-user secret of 32
// random bytes in the file CacheKeyPath(dir), mode 0600, created on first
// use. When the runtime opens a cache directory it checks every entry of
// this platform's wazero folders before wazero can read one: an entry
// with no seal, a seal made under another key, bytes that differ from
// what was sealed, an entry that is not a regular file or that another
// user owns or may write, is dropped with a warning, so that module is
// compiled again, and never executed. After each compilation the runtime
// seals the entries wazero added.
//
// Hashing every entry at every start would read hundreds of megabytes, so
// a seal also records the entry's inode, size and modification time and
// when it was made, the whole record under the key: an entry whose file is
// the one sealed is not read again; one whose file changed is hashed again
// and kept only if its bytes are the sealed ones. A file time has a coarse
// granularity, so an entry modified less than racyWindow before its seal
// was made could change again without its time moving: it is hashed on
// every check until its seal is renewed later than that.
//
// The key authenticates what the runtime itself compiled; it does not
// defend against the user: a process running as the user can read the key
// (or replace the host binary). It defends against entries the user did
// not compile: a cache folder copied from elsewhere, restored from an
// archive, or written while it was open to others, and entries of another
// module renamed into place.

// keySize is the length of the cache key in bytes.
const keySize = 32

// sealSuffix ends the name of an entry's seal.
const sealSuffix = ".seal"

// sealMagic starts a seal; it names the format and the rule.
var sealMagic = [8]byte{'w', 'e', 'i', 'r', 's', 'l', '0', '1'}

// sealLen is the length of a seal: magic, inode, size, modification time,
// sealing time, the entry's MAC and the record's MAC.
const sealLen = 8 + 4*8 + 2*sha256.Size

// racyWindow is how long after an entry's modification time its seal must
// be made for the seal's stamp to vouch for its bytes.
const racyWindow = 2 * time.Second

// CacheKeyPath is the file of the key that authenticates the entries of
// the compilation cache directory dir: beside dir, not in it, so a copy of
// the folder does not carry the key that would vouch for it.
func CacheKeyPath(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Clean(dir) + ".key"
}

// cacheKey reads the key of the cache directory dir, creating it if it does
// not exist. A key file another user owns, that others may read or write,
// that is not a regular file or not 32 bytes long is refused: the runtime
// then ignores the cache.
func cacheKey(dir string) ([]byte, error) {
	path := CacheKeyPath(dir)
	for range 2 {
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			if err := createKey(path); err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, fmt.Errorf("compilation cache key %s: %w", path, err)
			}
			continue // created here or by a concurrent process: read it
		}
		if err != nil {
			return nil, fmt.Errorf("compilation cache key %s: %w", path, err)
		}
		if err := keyFileRule(path, fi); err != nil {
			return nil, err
		}
		key, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("compilation cache key %s: %w", path, err)
		}
		if len(key) != keySize {
			return nil, fmt.Errorf("compilation cache key %s holds %d bytes, not %d", path, len(key), keySize)
		}
		return key, nil
	}
	return nil, fmt.Errorf("compilation cache key %s: created but not found", path)
}

// keyFileRule reports why the key file at path, described by fi, is not
// to be trusted: not a regular file, readable or writable by others, owned
// by another user, or of the wrong length.
func keyFileRule(path string, fi fs.FileInfo) error {
	switch {
	case !fi.Mode().IsRegular():
		return fmt.Errorf("compilation cache key %s is not a regular file", path)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("compilation cache key %s may be read or written by its group or by others (mode %v; it must be 0600)", path, fi.Mode().Perm())
	case ownedByOther(fi):
		return fmt.Errorf("compilation cache key %s is owned by another user", path)
	case fi.Size() != keySize:
		return fmt.Errorf("compilation cache key %s holds %d bytes, not %d", path, fi.Size(), keySize)
	}
	return nil
}

// createKey writes a new random key at path, whole or not at all: the key
// goes into a temporary file that is then linked into place, which fails
// with fs.ErrExist when another process got there first.
func createKey(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	key := make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Link(tmp, path)
}

// sealer checks and seals the entries of a cache directory's wazero
// folders for this platform.
type sealer struct {
	dir string // the cache directory
	key []byte
	log hclog.Logger

	mu     sync.Mutex
	sealed map[string]bool // entry paths checked or sealed by this process
}

func newSealer(dir string, key []byte, log hclog.Logger) *sealer {
	return &sealer{dir: dir, key: key, log: log, sealed: map[string]bool{}}
}

// entries lists the entries (wazero's files, named by a hex hash) of this
// platform's wazero folders.
func (s *sealer) entries() []string {
	dirs, _ := filepath.Glob(filepath.Join(s.dir, "wazero-*-"+runtime.GOARCH+"-"+runtime.GOOS))
	var out []string
	for _, d := range dirs {
		list, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range list {
			if isEntryName(e.Name()) {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
	}
	return out
}

// isEntryName reports whether name is the name wazero gives an entry
// (the hex of a sha256): the only files of its folder it reads.
func isEntryName(name string) bool {
	if len(name) != 2*sha256.Size {
		return false
	}
	for _, c := range name {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// check verifies every entry and drops (with its seal) each one that does
// not verify, saying why. It runs before wazero may read the folder.
func (s *sealer) check() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var reasons []string
	for _, p := range s.entries() {
		if err := s.verify(p); err != nil {
			os.Remove(p)
			os.Remove(p + sealSuffix)
			reasons = append(reasons, err.Error())
			continue
		}
		s.sealed[p] = true
	}
	if len(reasons) > 0 {
		s.log.Warn("dropped compilation cache entries that are not sealed with this user's cache key; their modules compile again and nothing of them runs",
			"dir", s.dir, "dropped", len(reasons), "reasons", strings.Join(reasons, "; "))
	}
}

// sealNew seals the entries wazero added since the last check or seal.
func (s *sealer) sealNew() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.entries() {
		if s.sealed[p] {
			continue
		}
		if err := s.seal(p); err != nil {
			s.log.Debug("cannot seal a compilation cache entry; the next start compiles it again", "entry", filepath.Base(p), "error", err)
			continue
		}
		s.sealed[p] = true
	}
}

// forget drops what the sealer knows of the entries (after
// dropCacheEntries removed them).
func (s *sealer) forget() {
	s.mu.Lock()
	s.sealed = map[string]bool{}
	s.mu.Unlock()
}

// stamp is what a seal records of the entry's file.
type stamp struct{ ino, size, mtime uint64 }

func stampOf(fi fs.FileInfo) stamp {
	return stamp{fileIno(fi), uint64(fi.Size()), uint64(fi.ModTime().UnixNano())}
}

// vouches reports whether a seal made at sealedAt with stamp st vouches
// for the entry file fi without reading it.
func (st stamp) vouches(fi fs.FileInfo, sealedAt uint64) bool {
	return st == stampOf(fi) && sealedAt >= st.mtime+uint64(racyWindow)
}

// entryMAC is the MAC of the entry at path: its name and its bytes.
func (s *sealer) entryMAC(path string) ([]byte, stamp, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, stamp{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, stamp{}, err
	}
	if err := entryFileRule(fi); err != nil {
		return nil, stamp{}, err
	}
	m := hmac.New(sha256.New, s.key)
	fmt.Fprintf(m, "weir cache entry\x00%s\x00", filepath.Base(path))
	if _, err := io.Copy(m, f); err != nil {
		return nil, stamp{}, err
	}
	return m.Sum(nil), stampOf(fi), nil
}

// entryFileRule refuses an entry file that is not regular, is owned by
// another user or may be written by others.
func entryFileRule(fi fs.FileInfo) error {
	switch {
	case !fi.Mode().IsRegular():
		return errors.New("not a regular file")
	case ownedByOther(fi):
		return errors.New("owned by another user")
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("writable by its group or by others (mode %v)", fi.Mode().Perm())
	}
	return nil
}

// record is the seal, made at sealedAt, of the entry at path with stamp st
// and MAC mac.
func (s *sealer) record(path string, st stamp, sealedAt uint64, mac []byte) []byte {
	b := make([]byte, 0, sealLen)
	b = append(b, sealMagic[:]...)
	b = binary.LittleEndian.AppendUint64(b, st.ino)
	b = binary.LittleEndian.AppendUint64(b, st.size)
	b = binary.LittleEndian.AppendUint64(b, st.mtime)
	b = binary.LittleEndian.AppendUint64(b, sealedAt)
	b = append(b, mac...)
	m := hmac.New(sha256.New, s.key)
	fmt.Fprintf(m, "weir cache seal\x00%s\x00", filepath.Base(path))
	m.Write(b)
	return m.Sum(b)
}

// seal writes the seal of the entry at path.
func (s *sealer) seal(path string) error {
	mac, st, err := s.entryMAC(path)
	if err != nil {
		return err
	}
	return writeSeal(path, s.record(path, st, now(), mac))
}

// writeSeal replaces the seal of the entry at path with rec.
func writeSeal(path string, rec []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(rec)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path+sealSuffix)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// verify reports why the entry at path may not be read: nil when its seal
// is this key's and its file is the one sealed, or its bytes are.
func (s *sealer) verify(path string) error {
	name := filepath.Base(path)
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("entry %s: %w", name, err)
	}
	if err := entryFileRule(fi); err != nil {
		return fmt.Errorf("entry %s is %w", name, err)
	}
	rec, err := os.ReadFile(path + sealSuffix)
	if err != nil || len(rec) != sealLen || !bytes.Equal(rec[:8], sealMagic[:]) {
		return fmt.Errorf("entry %s has no seal", name)
	}
	st := stamp{binary.LittleEndian.Uint64(rec[8:]), binary.LittleEndian.Uint64(rec[16:]), binary.LittleEndian.Uint64(rec[24:])}
	sealedAt := binary.LittleEndian.Uint64(rec[32:])
	mac := rec[40 : 40+sha256.Size]
	if !hmac.Equal(s.record(path, st, sealedAt, mac), rec) {
		return fmt.Errorf("entry %s has a seal made under another key", name)
	}
	if st.vouches(fi, sealedAt) {
		return nil
	}
	got, st2, err := s.entryMAC(path)
	if err != nil {
		return fmt.Errorf("entry %s: %w", name, err)
	}
	if !hmac.Equal(got, mac) {
		return fmt.Errorf("entry %s does not hold the bytes that were sealed", name)
	}
	if err := writeSeal(path, s.record(path, st2, now(), mac)); err != nil {
		s.log.Debug("cannot renew a compilation cache seal", "entry", name, "error", err)
	}
	return nil
}

// now is the sealing time, in Unix nanoseconds.
func now() uint64 { return uint64(time.Now().UnixNano()) }
