package provider

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"os"
	"path/filepath"
	"sync"

	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/surface"
)

// StateCache keeps meter state blobs outside the session log, so that a
// new process resumes a session from the latest blob instead of folding the
// whole log into the plugin again (WithStateCache). It is a cache: the log
// stays the truth. A meter adopts an entry only when it was made by the
// same plugin module and configuration, for the same session, and the
// log's prefix up to the entry's position is the one the blob folds (by
// its hash); otherwise it folds the log from the start, as without a
// cache. A blob stored under another session's entry, or folded from
// another history, is ignored. A state blob gives the same
// results as the fold it stands for (docs/abi.md, meter.observe), so
// adopting one changes no measurement and nothing in the log.
type StateCache interface {
	// Load returns the entry stored under key; ok is false when there is
	// none or it cannot be read.
	Load(key string) (e CachedState, ok bool)
	// Store replaces the entry under key. A failure is the cache's own
	// business: the meter goes on without it.
	Store(key string, e CachedState)
}

// CachedState is one meter state blob and where it stands in the log.
type CachedState struct {
	// Plugin fingerprints the plugin module and its configuration.
	Plugin []byte
	// Session is the id of the session whose log State folds.
	Session string
	// Next is the seq of the first event not folded into State.
	Next int64
	// Prefix is the SHA-256 of the log's events before Next (their JSON
	// lines, from the first the log holds), all of them folded into State.
	Prefix []byte
	State  []byte
}

// WithStateCache makes the meter adapter keep its state blobs in c between
// processes: a blob is stored whenever the plugin returns one and at the
// end of every turn, and a new adapter starts from the stored blob of its
// session when it still fits the log. Without it a resumed session folds
// its whole log into the plugin on its first step.
func WithStateCache(c StateCache) Option { return func(o *options) { o.cache = c } }

func withFingerprint(b []byte) Option { return func(o *options) { o.fingerprint = b } }

// pluginPrint is the fingerprint of cache entries: the module's and
// configuration's from Load, else (an adapter made with NewMeter) the
// plugin's described name and version.
func (o *options) pluginPrint(desc abi.Description) []byte {
	if o.fingerprint != nil {
		return o.fingerprint
	}
	return []byte("described " + desc.Name + " " + desc.Version + " " + desc.Sdk)
}

// stateCacheKey names a session's entry for one plugin.
func stateCacheKey(session, plugin string) string { return session + "\x00" + plugin }

// prefixHash hashes a log's prefix incrementally: a meter's blobs move
// forward, so each event is hashed once, and a position behind the last
// one asked for starts again from the log's first event.
type prefixHash struct {
	next int64 // the first event not hashed; -1: nothing hashed yet
	h    hash.Hash
	buf  []byte
}

// sum is the hash of l's events before next; ok is false when l does not
// hold them all.
func (p *prefixHash) sum(l *surface.Log, next int64) (sum []byte, ok bool) {
	if p.h == nil || next < p.next {
		p.h, p.next = sha256.New(), l.BaseSeq()
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(p.next))
		p.h.Write(b[:])
	}
	for ; p.next < next; p.next++ {
		e, ok := l.Event(p.next)
		if !ok {
			p.h = nil
			return nil, false
		}
		p.buf = surface.AppendEvent(p.buf[:0], &e)
		p.h.Write(p.buf)
	}
	return p.h.Sum(nil), true
}

// fingerprint fingerprints a plugin module, by its SHA-256, and its
// configuration.
func fingerprint(module [32]byte, config []byte) []byte {
	h := sha256.New()
	h.Write(module[:])
	h.Write(config)
	return h.Sum(nil)
}

// DirStateCache is a StateCache of one file per entry in a directory,
// created on first store. A file holds the fingerprint, the position, the
// mark and the blob; a file that does not parse is no entry.
type DirStateCache struct {
	Dir string
	mu  sync.Mutex
}

var _ StateCache = (*DirStateCache)(nil)

func (d *DirStateCache) path(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(d.Dir, hex.EncodeToString(sum[:16])+".meter")
}

const stateFileMagic = "weir-meter-state 2\n"

// Load implements StateCache.
func (d *DirStateCache) Load(key string) (CachedState, bool) {
	b, err := os.ReadFile(d.path(key))
	if err != nil || !bytes.HasPrefix(b, []byte(stateFileMagic)) {
		return CachedState{}, false
	}
	b = b[len(stateFileMagic):]
	var fields [6][]byte // key, session, plugin, next, prefix, state
	for i := range fields {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return CachedState{}, false
		}
		fields[i], b = b[k:k+int(n)], b[k+int(n):]
	}
	if len(b) != 0 || string(fields[0]) != key || len(fields[3]) != 8 {
		return CachedState{}, false
	}
	e := CachedState{Session: string(fields[1]), Plugin: fields[2], Next: int64(binary.LittleEndian.Uint64(fields[3])),
		Prefix: fields[4], State: fields[5]}
	return e, true
}

// Store implements StateCache: it writes a temporary file and renames it
// over the entry, so a reader sees the old entry or the new one.
func (d *DirStateCache) Store(key string, e CachedState) {
	var next [8]byte
	binary.LittleEndian.PutUint64(next[:], uint64(e.Next))
	b := []byte(stateFileMagic)
	for _, f := range [][]byte{[]byte(key), []byte(e.Session), e.Plugin, next[:], e.Prefix} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := os.MkdirAll(d.Dir, 0o755); err != nil {
		return
	}
	p := d.path(key)
	tmp := p + ".tmp"
	if err := writeState(tmp, b, e.State); err != nil {
		_ = os.Remove(tmp)
		return
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
	}
}

func writeState(path string, head, state []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(binary.AppendUvarint(head, uint64(len(state))))
	if err == nil {
		_, err = f.Write(state)
	}
	return errors.Join(err, f.Close())
}

// adopt starts a new adapter from its session's cached blob when the entry
// fits: the same plugin fingerprint and session, a position within the
// log and the same log prefix before it. It runs once, before anything
// was folded.
func (m *Meter) adopt() {
	if m.adopted {
		return
	}
	m.adopted = true
	if m.o.cache == nil || m.s == nil || m.next != 0 || len(m.pending) != 0 || m.state != nil {
		return
	}
	e, ok := m.o.cache.Load(stateCacheKey(m.s.ID(), m.p.Name()))
	if !ok || e.Next <= 0 || len(e.State) == 0 || len(e.State) > m.o.stateLimit ||
		e.Session != m.s.ID() || !bytes.Equal(e.Plugin, m.o.pluginPrint(m.p.Description())) {
		return
	}
	l := m.s.Log()
	if e.Next > l.NextSeq() {
		return
	}
	if sum, ok := m.prefix.sum(l, e.Next); !ok || !bytes.Equal(sum, e.Prefix) {
		return
	}
	m.state, m.next, m.blobNext, m.key = e.State, e.Next, e.Next, 0
}

// store leaves the latest blob in the cache.
func (m *Meter) store() {
	if m.o.cache == nil || m.s == nil || m.blobNext <= 0 {
		return
	}
	sum, ok := m.prefix.sum(m.s.Log(), m.blobNext)
	if !ok {
		return
	}
	m.o.cache.Store(stateCacheKey(m.s.ID(), m.p.Name()), CachedState{Plugin: m.o.pluginPrint(m.p.Description()),
		Session: m.s.ID(), Next: m.blobNext, Prefix: sum, State: bytes.Clone(m.state)})
}
