// Package store is the contract between a Weir session and the place its
// events are kept durably, and the errors every implementation reports.
//
// A store only stores: it keeps each session's events as the exact bytes
// of their canonical encoding (surface.AppendEvent), in seq order, and
// hands them back. Everything a resume does with them (admission through
// surface.Log, the end-seed marker, the open-compaction check, the repair
// of an interrupted turn) lives once, above every store, in host.Open.
//
// Implementations: host/store/file (one JSONL file per session, the
// default), host/store/memory, host/store/sqlite and host/store/postgres.
// host/store/storetest is the conformance suite each of them passes.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

// Store keeps sessions. Its methods are safe for concurrent use.
type Store interface {
	// Open opens session id for writing. It takes the session's writer
	// lease first (failing at once with an error matching ErrLocked when
	// another writer, in this process or another, holds it), creates the
	// session when opt.Create is set and it does not exist (else the error
	// matches ErrNotFound), then streams every stored event to load in seq
	// order, one at a time, and returns a Writer positioned after the last
	// one. A write a crash interrupted is never seen: load receives whole
	// batches only. An error from load aborts the open and releases the
	// lease. load is never nil and may keep the events it receives.
	Open(ctx context.Context, id string, opt OpenOptions, load func(surface.Event) error) (Writer, error)
	// Load streams the stored events of session id to fn in seq order
	// without taking the lease. A reader running beside a writer sees a
	// prefix of the log, whole events only: with the transactional stores
	// (memory, sqlite, postgres) whole committed batches; with the file
	// store possibly part of the batch being written, which its writer has
	// not acknowledged yet. It returns the session's Info as of the read.
	Load(ctx context.Context, id string, fn func(surface.Event) error) (Info, error)
	// List returns the stored sessions, ordered by id.
	List(ctx context.Context) ([]Info, error)
	// Close releases the store's resources. Writers still open must be
	// closed first.
	Close() error
}

// OpenOptions says how Open treats a session that does not exist.
type OpenOptions struct {
	// Create creates the session when it does not exist.
	Create bool
	// CreatedAt is the creation time (epoch milliseconds) of a session
	// Open creates; 0 means now.
	CreatedAt int64
	// Header is the header a session Open creates is kept with (its cwd,
	// parentSession, isSeeded, origin, delegationDepth, agentPreset and
	// unknown members; its ID and CreatedAt are the session's own). nil:
	// none beyond the id and creation time.
	Header *jsonl.Header
}

// Writer is the single writer of one session, holding its lease until
// Close.
type Writer interface {
	// Info describes the session; Events is the seq the next batch must
	// start with.
	Info() Info
	// Append stores batch durably, all or nothing, and returns only once
	// it is durable: an event is acknowledged when the Append of its batch
	// returns nil. The batch must continue the stored log (its first seq
	// is Info().Events and its seqs are contiguous), else the error
	// matches ErrNotContinuous and nothing is stored. When the writer has
	// lost its lease to another writer, the store itself refuses the
	// batch with an error matching ErrFenced. An empty batch is a no-op.
	Append(ctx context.Context, batch []surface.Event) error
	// Close releases the lease. It is idempotent.
	Close() error
}

// Info describes a stored session.
type Info struct {
	ID string
	// CreatedAt is the creation time, epoch milliseconds.
	CreatedAt int64
	// Events is the number of events stored: the next seq.
	Events int64
	// UpdatedAt is the time of the last append, epoch milliseconds; 0 when
	// the store does not record it.
	UpdatedAt int64
	// Header is the session's header, as created (OpenOptions.Header),
	// with ID and CreatedAt those of the session; set by Load, nil where
	// the session was created without one.
	Header *jsonl.Header
}

// Deleter is implemented by stores that can delete sessions.
type Deleter interface {
	// Delete removes session id and its events. A session whose lease is
	// held is refused with an error matching ErrLocked.
	Delete(ctx context.Context, id string) error
}

// Lease is a session's writer lease: as the database last committed it
// (the SQL stores), or the lock of its file as it is now (the file store).
type Lease struct {
	// Holder names the writer: in the SQL stores the last writer to take
	// the lease (host/pid/random), which stays after the writer closes;
	// in the file store the process holding the file's lock ("pid 4121",
	// or "" when free or when the system does not tell).
	Holder string
	// Epoch is that writer's fencing token; 0 in the file store, which
	// needs none.
	Epoch int64
	// Left is how long the lease has to run by the database's clock; 0
	// when it is free (closed, lapsed or released), and for a lock held
	// UntilExit.
	Left time.Duration
	// UntilExit is set for a held lock that lasts as long as its holder
	// (the file store's flock): it ends when the holder closes the
	// session or its process ends, never before, so it cannot lapse and
	// Lapse refuses to end it.
	UntilExit bool
}

// Held reports whether a writer holds the lease.
func (l Lease) Held() bool { return l.Left > 0 || l.UntilExit }

// Leaser is implemented by stores that can tell who holds a session's
// writer lease: the SQL stores, whose leases can lapse, and the file
// store, whose lock ends only with its holder.
type Leaser interface {
	// Lease returns session id's lease.
	Lease(ctx context.Context, id string) (Lease, error)
	// Lapse ends session id's lease as if it had timed out, so another
	// writer may open the session at once: for an operator who knows the
	// holder is gone. A holder still alive is fenced at its next append.
	// A lease held UntilExit is refused with an error matching ErrLocked
	// (its holder is alive: the lock outlives no process); a free one is
	// left as it is.
	Lapse(ctx context.Context, id string) error
}

// Expirer is implemented by stores that can expire old sessions.
type Expirer interface {
	// Expire deletes every session not appended to since before, whose
	// lease is not held, and returns their ids.
	Expire(ctx context.Context, before time.Time) ([]string, error)
}

// Errors every store reports; match them with errors.Is.
var (
	// ErrNotFound: the session does not exist.
	ErrNotFound = errors.New("session not found")
	// ErrLocked: another writer holds the session's lease.
	ErrLocked = errors.New("session is held by another writer")
	// ErrFenced: the writer lost its lease to another writer; its append
	// was refused and nothing of it was stored.
	ErrFenced = errors.New("writer fenced out: another writer took the session over")
	// ErrNotContinuous: the batch does not continue the stored log.
	ErrNotContinuous = errors.New("batch does not continue the stored log")
	// ErrClosed: the writer or store is closed.
	ErrClosed = errors.New("closed")
)

// CheckBatch checks that batch continues a log whose next seq is next, the
// rule every Writer.Append enforces before storing anything.
func CheckBatch(id string, next int64, batch []surface.Event) error {
	for i := range batch {
		if want := next + int64(i); batch[i].Seq != want {
			return fmt.Errorf("session %s: batch event %d has seq %d, but the stored log continues with seq %d: %w",
				id, i, batch[i].Seq, want, ErrNotContinuous)
		}
	}
	return nil
}

// CheckID refuses a session id no store can keep: empty, longer than 200
// bytes, or holding a character outside letters, digits and "._-" (ids
// become file names in the file store).
func CheckID(id string) error {
	if id == "" || len(id) > 200 {
		return fmt.Errorf("session id %q: must be 1 to 200 bytes", id)
	}
	for _, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("session id %q: only letters, digits, '.', '_' and '-' are allowed", id)
		}
	}
	if id[0] == '.' {
		return fmt.Errorf("session id %q: must not start with '.'", id)
	}
	return nil
}
