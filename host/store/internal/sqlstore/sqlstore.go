// Package sqlstore is the session store over a SQL database, shared by the
// SQLite and PostgreSQL stores: the schema, its versioned migrations, the
// lease with its fencing token, and the appends that check it.
//
// Schema (version 1):
//
//	sessions(id PRIMARY KEY, created_at, updated_at, next_seq, epoch,
//	         lease_until, holder)
//	events(session_id, seq, type, time, event, PRIMARY KEY (session_id, seq))
//
// Times are epoch milliseconds of the database's clock. events.event holds
// the exact bytes of the event's canonical encoding (surface.AppendEvent);
// type and time are copies for people querying the table.
//
// Schema version 2 adds the epoch counter (a sequence in PostgreSQL, a
// one-row table in SQLite); version 3 the header column, the session's
// header line (surface/jsonl) as created, NULL when it had none.
//
// Fencing: every Open that takes a session's lease sets its epoch to the
// next value of the database-wide epoch counter, in the same transaction
// that checks the lease is free (lease_until not in the database's
// future). Epochs never repeat, for any session id, across expiry,
// deletion and re-creation. Each append is one transaction whose first
// statement is
//
//	UPDATE sessions SET next_seq = next_seq + n, ...
//	WHERE id = ? AND epoch = <the writer's epoch> AND next_seq = <its next seq>
//
// so a writer whose lease was taken over, however long it was paused or cut
// off, matches no row and its batch is refused by the database before any
// event is inserted; the (session_id, seq) key refuses any interleaving
// besides.
package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/host/store/internal/pardec"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

// Dialect is what differs between databases.
type Dialect struct {
	// Name names the database in errors ("sqlite", "postgres").
	Name string
	// Numbered makes placeholders $1, $2, ... instead of ?.
	Numbered bool
	// Now is the SQL expression of the database's clock, epoch ms.
	Now string
	// Blob is the column type of the event bytes.
	Blob string
	// ForUpdate is appended to the select that reads a session's lease
	// before changing it.
	ForUpdate string
	// MigrationLock is run first in the migration transaction, to
	// serialize hosts starting at once ("" when the transaction already
	// does).
	MigrationLock string
	// LoadSetup, when set, runs in a read-only transaction before the
	// query that streams a session's events (PostgreSQL: make the planner
	// read the primary key in order rather than sort on disk).
	LoadSetup string
	// Unique reports whether err is a unique-key violation.
	Unique func(error) bool
	// Busy reports whether err is the database giving up a bounded wait
	// for a lock (PostgreSQL's lock_timeout, SQLite's busy timeout).
	Busy func(error) bool
	// Lock names what a writer waits for, in errors ("the session's
	// row", "the database's write lock").
	Lock string
	// DatabaseLock says that Lock is one lock for the whole database
	// (SQLite's write lock), held by whichever transaction writes, of
	// any session or client: a wait given up then names no holder, only
	// the session's own lease for what it is. Otherwise Lock is the
	// session's own (PostgreSQL's row lock) and the error names the
	// session's writer as its holder.
	DatabaseLock bool
	// EpochSource is migration 2's statements: the database-wide counter
	// every new epoch is drawn from, started above every epoch stored.
	EpochSource string
	// NextEpoch is the query, run inside the transaction that takes a
	// lease, that returns the next value of that counter.
	NextEpoch string
}

// Config configures a Store.
type Config struct {
	// Lease is how long a writer's lease lasts without an append or a
	// renewal (default 30 s).
	Lease time.Duration
	// Renew is how often an idle writer renews its lease (default a third
	// of Lease; negative: never, for tests that simulate a paused host).
	Renew time.Duration
	// Wait bounds how long an operation waits for a lock another
	// transaction holds before it fails with store.ErrLocked (the
	// database enforces it: lock_timeout, busy_timeout). Set by the
	// store's package.
	Wait time.Duration
	// Where names the database in errors, without secrets.
	Where string
}

// WithDefaults returns c with the defaults filled in: a lease of 30 s,
// renewed every third of it.
func (c Config) WithDefaults() Config {
	if c.Lease <= 0 {
		c.Lease = 30 * time.Second
	}
	if c.Renew == 0 {
		c.Renew = c.Lease / 3
	}
	return c
}

// Store is a session store over db.
type Store struct {
	db     *sql.DB
	d      Dialect
	cfg    Config
	holder string
}

// New returns the store over db after applying the migrations it lacks.
func New(ctx context.Context, db *sql.DB, d Dialect, cfg Config) (*Store, error) {
	cfg = cfg.WithDefaults()
	host, _ := os.Hostname()
	var b [4]byte
	rand.Read(b[:])
	s := &Store{db: db, d: d, cfg: cfg, holder: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Where names the store's database, without secrets.
func (s *Store) Where() string { return s.cfg.Where }

// DB is the store's database.
func (s *Store) DB() *sql.DB { return s.db }

// Holder names this store's writers in the sessions table.
func (s *Store) Holder() string { return s.holder }

// q rewrites the ? placeholders of query for the dialect.
func (s *Store) q(query string) string {
	query = strings.ReplaceAll(query, "NOW()", s.d.Now)
	if !s.d.Numbered {
		return query
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Migrations are the schema's versions, applied in order on start.
func (s *Store) migrations() []string {
	return []string{
		1: `CREATE TABLE sessions (
	id          TEXT PRIMARY KEY,
	created_at  BIGINT NOT NULL,
	updated_at  BIGINT NOT NULL,
	next_seq    BIGINT NOT NULL DEFAULT 0,
	epoch       BIGINT NOT NULL DEFAULT 0,
	lease_until BIGINT NOT NULL DEFAULT 0,
	holder      TEXT NOT NULL DEFAULT ''
);
CREATE TABLE events (
	session_id TEXT NOT NULL REFERENCES sessions(id),
	seq        BIGINT NOT NULL,
	type       TEXT NOT NULL,
	time       BIGINT NOT NULL,
	event      ` + s.d.Blob + ` NOT NULL,
	PRIMARY KEY (session_id, seq)
);
CREATE INDEX sessions_updated_at ON sessions (updated_at)`,
		2: s.d.EpochSource,
		3: `ALTER TABLE sessions ADD COLUMN header ` + s.d.Blob,
	}
}

// migrate applies the migrations the database lacks. It reads the
// schema's version first, outside any write transaction, so a store
// opened on an up-to-date database (a reader beside a writer holding its
// transaction, or the fiftieth process starting at once) takes no lock.
func (s *Store) migrate(ctx context.Context) error {
	ms := s.migrations()
	var have int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM weir_schema`).Scan(&have)
	switch {
	case err == nil && have > len(ms)-1:
		return fmt.Errorf("%s: schema version %d is newer than this build knows (%d): upgrade weir", s.cfg.Where, have, len(ms)-1)
	case err == nil && have == len(ms)-1:
		return nil
	}
	// No schema table yet, or an older version: migrate in a write
	// transaction, which reads the version again.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.errf(err, "migrate: begin")
	}
	defer tx.Rollback()
	if s.d.MigrationLock != "" {
		if _, err := tx.ExecContext(ctx, s.d.MigrationLock); err != nil {
			return s.errf(err, "migrate: lock")
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS weir_schema (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return s.errf(err, "migrate: schema table")
	}
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM weir_schema`).Scan(&have); err != nil {
		return s.errf(err, "migrate: read the schema version")
	}
	if have >= len(ms)-1 {
		if have > len(ms)-1 {
			return fmt.Errorf("%s: schema version %d is newer than this build knows (%d): upgrade weir", s.cfg.Where, have, len(ms)-1)
		}
		return nil
	}
	for v := have + 1; v < len(ms); v++ {
		for _, stmt := range strings.Split(ms[v], ";\n") {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return s.errf(err, "migrate to schema version %d", v)
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO weir_schema (version, applied_at) VALUES (?, NOW())`), v); err != nil {
			return s.errf(err, "migrate: record version %d", v)
		}
	}
	return s.errf(tx.Commit(), "migrate: commit")
}

func (s *Store) errf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s store %s: %s: %w", s.d.Name, s.cfg.Where, fmt.Sprintf(format, args...), err)
}

// fail is errf for an operation on session id, except that a lock wait
// the database gave up (Dialect.Busy) becomes store.ErrLocked naming the
// session's writer and how long its lease has left, as committed.
func (s *Store) fail(err error, id string, format string, args ...any) error {
	if err == nil || s.d.Busy == nil || !s.d.Busy(err) {
		return s.errf(err, format, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Wait+time.Second)
	defer cancel()
	var holder string
	var epoch, until, now int64
	lease := "no writer holds the session's lease"
	qerr := s.db.QueryRowContext(ctx, s.q(`SELECT holder, epoch, lease_until, NOW() FROM sessions WHERE id = ?`), id).Scan(&holder, &epoch, &until, &now)
	switch {
	case qerr != nil && !errors.Is(qerr, sql.ErrNoRows):
		lease = fmt.Sprintf("the session's writer could not be read (%v)", qerr)
	case qerr == nil && until > now:
		lease = fmt.Sprintf("the session's writer %s holds its lease (epoch %d) for %s more, until %s",
			holderName(holder), epoch, time.Duration(until-now)*time.Millisecond, time.UnixMilli(until).UTC().Format(time.RFC3339Nano))
	case qerr == nil && holder != "":
		lease = fmt.Sprintf("the lease of the session's writer %s (epoch %d) ran out %s ago", holderName(holder), epoch, time.Duration(now-until)*time.Millisecond)
	}
	what := fmt.Sprintf(format, args...)
	if s.d.DatabaseLock {
		// The lock is the whole database's: its holder is whichever
		// transaction writes, which the database does not tell.
		return fmt.Errorf("%s store %s: %s: gave up after waiting %s for %s (bounded wait): the database is locked by another writer or transaction, of any session or client of the file, which %s does not name; apart from that lock, %s: %w (%v)",
			s.d.Name, s.cfg.Where, what, s.cfg.Wait, s.d.Lock, s.d.Name, lease, store.ErrLocked, err)
	}
	return fmt.Errorf("%s store %s: %s: gave up after waiting %s for %s, which another transaction holds (bounded wait); %s: %w (%v)",
		s.d.Name, s.cfg.Where, what, s.cfg.Wait, s.d.Lock, lease, store.ErrLocked, err)
}

// holderName is a holder column as errors show it.
func holderName(h string) string {
	if h == "" {
		return "(unnamed)"
	}
	return h
}

// Open implements store.Store.
func (s *Store) Open(ctx context.Context, id string, opt store.OpenOptions, load func(surface.Event) error) (store.Writer, error) {
	if err := store.CheckID(id); err != nil {
		return nil, err
	}
	if load == nil {
		load = func(surface.Event) error { return nil }
	}
	w, err := s.acquire(ctx, id, opt)
	if err != nil {
		return nil, err
	}
	if err := s.stream(ctx, id, w.next, load); err != nil {
		w.Close()
		return nil, err
	}
	w.startRenew()
	return w, nil
}

// acquire takes session id's lease, creating the session when allowed.
func (s *Store) acquire(ctx context.Context, id string, opt store.OpenOptions) (*writer, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, s.fail(err, id, "open session %s", id)
	}
	defer tx.Rollback()
	var now int64
	if err := tx.QueryRowContext(ctx, s.q(`SELECT NOW()`)).Scan(&now); err != nil {
		return nil, s.fail(err, id, "open session %s: read the clock", id)
	}
	var info store.Info
	var epoch, until int64
	var holder string
	err = tx.QueryRowContext(ctx, s.q(`SELECT created_at, updated_at, next_seq, epoch, lease_until, holder FROM sessions WHERE id = ?`+s.d.ForUpdate), id).
		Scan(&info.CreatedAt, &info.UpdatedAt, &info.Events, &epoch, &until, &holder)
	info.ID = id
	lease := s.cfg.Lease.Milliseconds()
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if !opt.Create {
			return nil, fmt.Errorf("%s store %s: session %s: %w", s.d.Name, s.cfg.Where, id, store.ErrNotFound)
		}
		info.CreatedAt = opt.CreatedAt
		if info.CreatedAt == 0 {
			info.CreatedAt = now
		}
		info.UpdatedAt = now
		if epoch, err = s.nextEpoch(ctx, tx, id); err != nil {
			return nil, err
		}
		var header []byte
		if opt.Header != nil {
			h := *opt.Header
			h.ID, h.CreatedAt = id, info.CreatedAt
			if header, err = jsonl.MarshalHeader(h); err != nil {
				return nil, fmt.Errorf("%s store %s: create session %s: %w", s.d.Name, s.cfg.Where, id, err)
			}
			info.Header = &h
		}
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO sessions (id, created_at, updated_at, next_seq, epoch, lease_until, holder, header) VALUES (?, ?, ?, 0, ?, ?, ?, ?)`),
			id, info.CreatedAt, now, epoch, now+lease, s.holder, header)
		if err != nil && s.d.Unique(err) {
			return nil, fmt.Errorf("%s store %s: session %s was created by another writer at the same moment: %w", s.d.Name, s.cfg.Where, id, store.ErrLocked)
		}
		if err != nil {
			return nil, s.fail(err, id, "create session %s", id)
		}
	case err != nil:
		return nil, s.fail(err, id, "open session %s", id)
	case until > now:
		return nil, fmt.Errorf("%s store %s: session %s: writer %s holds its lease (epoch %d) for %s more, until %s; only one writer per session: %w",
			s.d.Name, s.cfg.Where, id, holderName(holder), epoch, time.Duration(until-now)*time.Millisecond, time.UnixMilli(until).UTC().Format(time.RFC3339Nano), store.ErrLocked)
	default:
		next, err := s.nextEpoch(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		res, err := tx.ExecContext(ctx, s.q(`UPDATE sessions SET epoch = ?, lease_until = ?, holder = ? WHERE id = ? AND epoch = ?`),
			next, now+lease, s.holder, id, epoch)
		if err != nil {
			return nil, s.fail(err, id, "take the lease of session %s", id)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return nil, fmt.Errorf("%s store %s: session %s: another writer took its lease first: %w", s.d.Name, s.cfg.Where, id, store.ErrLocked)
		}
		epoch = next
	}
	if err := tx.Commit(); err != nil {
		if s.d.Unique(err) {
			return nil, fmt.Errorf("%s store %s: session %s was created by another writer at the same moment: %w", s.d.Name, s.cfg.Where, id, store.ErrLocked)
		}
		return nil, s.fail(err, id, "open session %s: commit", id)
	}
	return &writer{s: s, id: id, info: info, epoch: epoch, next: info.Events}, nil
}

// nextEpoch draws a fencing token from the database-wide counter: no two
// leases, of any session, ever share an epoch, so a writer paused across
// its session's expiry or deletion and re-creation under the same id is
// still refused.
func (s *Store) nextEpoch(ctx context.Context, tx *sql.Tx, id string) (int64, error) {
	var e int64
	if err := tx.QueryRowContext(ctx, s.d.NextEpoch).Scan(&e); err != nil {
		return 0, s.fail(err, id, "open session %s: draw an epoch", id)
	}
	return e, nil
}

// stream hands the events of session id with seq below next to fn. The
// rows are read by one goroutine into shared arenas (one allocation per
// megabyte, not per row) and decoded on all cores.
func (s *Store) stream(ctx context.Context, id string, next int64, fn func(surface.Event) error) (err error) {
	query := s.q(`SELECT event FROM events WHERE session_id = ? AND seq < ? ORDER BY seq`)
	var rows *sql.Rows
	if s.d.LoadSetup != "" {
		tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return s.errf(err, "load session %s", id)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, s.d.LoadSetup); err != nil {
			return s.errf(err, "load session %s", id)
		}
		rows, err = tx.QueryContext(ctx, query, id, next)
		if err != nil {
			return s.errf(err, "load session %s", id)
		}
	} else if rows, err = s.db.QueryContext(ctx, query, id, next); err != nil {
		return s.errf(err, "load session %s", id)
	}
	defer rows.Close()
	var (
		arena []byte
		pos   int64
		raw   sql.RawBytes
	)
	src := func() (int64, []byte, bool, error) {
		if !rows.Next() {
			return 0, nil, false, rows.Err()
		}
		if err := rows.Scan(&raw); err != nil {
			return 0, nil, false, err
		}
		if cap(arena)-len(arena) < len(raw) {
			arena = make([]byte, 0, max(1<<20, len(raw)))
		}
		start := len(arena)
		arena = append(arena, raw...)
		pos++
		return pos - 1, arena[start:len(arena):len(arena)], true, nil
	}
	err = pardec.Decode(ctx, src, func(seq int64, e surface.Event) error {
		if e.Seq != seq {
			return fmt.Errorf("the event stored at position %d has seq %d: the events table has a gap or a stray row", seq, e.Seq)
		}
		return fn(e)
	})
	if err != nil {
		return fmt.Errorf("%s store %s: load session %s: %w", s.d.Name, s.cfg.Where, id, err)
	}
	if pos != next {
		return fmt.Errorf("%s store %s: session %s: %d events stored where the session counts %d", s.d.Name, s.cfg.Where, id, pos, next)
	}
	return nil
}

// Load implements store.Store. It reads the session's count first and
// then the events below it: each append commits its events and the count
// together, so a reader sees whole batches.
func (s *Store) Load(ctx context.Context, id string, fn func(surface.Event) error) (store.Info, error) {
	info := store.Info{ID: id}
	var header []byte
	err := s.db.QueryRowContext(ctx, s.q(`SELECT created_at, updated_at, next_seq, header FROM sessions WHERE id = ?`), id).
		Scan(&info.CreatedAt, &info.UpdatedAt, &info.Events, &header)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Info{}, fmt.Errorf("%s store %s: session %s: %w", s.d.Name, s.cfg.Where, id, store.ErrNotFound)
	}
	if err != nil {
		return store.Info{}, s.errf(err, "load session %s", id)
	}
	if header != nil {
		h, err := jsonl.ParseHeader(header)
		if err != nil {
			return store.Info{}, fmt.Errorf("%s store %s: session %s: the stored header: %w", s.d.Name, s.cfg.Where, id, err)
		}
		info.Header = &h
	}
	return info, s.stream(ctx, id, info.Events, fn)
}

// List implements store.Store.
func (s *Store) List(ctx context.Context) ([]store.Info, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, created_at, updated_at, next_seq FROM sessions ORDER BY id`)
	if err != nil {
		return nil, s.errf(err, "list sessions")
	}
	defer rows.Close()
	var out []store.Info
	for rows.Next() {
		var i store.Info
		if err := rows.Scan(&i.ID, &i.CreatedAt, &i.UpdatedAt, &i.Events); err != nil {
			return nil, s.errf(err, "list sessions")
		}
		out = append(out, i)
	}
	return out, s.errf(rows.Err(), "list sessions")
}

// Delete implements store.Deleter.
func (s *Store) Delete(ctx context.Context, id string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.fail(err, id, "delete session %s", id)
	}
	defer tx.Rollback()
	var until, now int64
	var holder string
	err = tx.QueryRowContext(ctx, s.q(`SELECT lease_until, NOW(), holder FROM sessions WHERE id = ?`+s.d.ForUpdate), id).Scan(&until, &now, &holder)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s store %s: session %s: %w", s.d.Name, s.cfg.Where, id, store.ErrNotFound)
	}
	if err != nil {
		return s.fail(err, id, "delete session %s", id)
	}
	if until > now {
		return fmt.Errorf("%s store %s: session %s: writer %s holds its lease for %s more; it is not deleted: %w",
			s.d.Name, s.cfg.Where, id, holderName(holder), time.Duration(until-now)*time.Millisecond, store.ErrLocked)
	}
	if err := s.deleteTx(ctx, tx, id); err != nil {
		return err
	}
	return s.errf(tx.Commit(), "delete session %s", id)
}

func (s *Store) deleteTx(ctx context.Context, tx *sql.Tx, id string) error {
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM events WHERE session_id = ?`), id); err != nil {
		return s.fail(err, id, "delete session %s", id)
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE id = ?`), id); err != nil {
		return s.fail(err, id, "delete session %s", id)
	}
	return nil
}

// Expire implements store.Expirer.
func (s *Store) Expire(ctx context.Context, before time.Time) ([]string, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, s.errf(err, "expire sessions")
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, s.q(`SELECT id FROM sessions WHERE updated_at < ? AND lease_until <= NOW() ORDER BY id`+s.d.ForUpdate), before.UnixMilli())
	if err != nil {
		return nil, s.errf(err, "expire sessions")
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, s.errf(err, "expire sessions")
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.errf(err, "expire sessions")
	}
	for _, id := range ids {
		if err := s.deleteTx(ctx, tx, id); err != nil {
			return nil, err
		}
	}
	return ids, s.errf(tx.Commit(), "expire sessions")
}

// Lease implements store.Leaser.
func (s *Store) Lease(ctx context.Context, id string) (store.Lease, error) {
	var l store.Lease
	var until, now int64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT holder, epoch, lease_until, NOW() FROM sessions WHERE id = ?`), id).Scan(&l.Holder, &l.Epoch, &until, &now)
	if errors.Is(err, sql.ErrNoRows) {
		return l, fmt.Errorf("%s store %s: session %s: %w", s.d.Name, s.cfg.Where, id, store.ErrNotFound)
	}
	if err != nil {
		return l, s.errf(err, "read the lease of session %s", id)
	}
	if until > now {
		l.Left = time.Duration(until-now) * time.Millisecond
	}
	return l, nil
}

// Lapse ends the lease of session id as if it had timed out: for tests
// that simulate a paused host, and for an operator who knows its holder
// is gone.
func (s *Store) Lapse(ctx context.Context, id string) error {
	n, err := s.write(ctx, s.q(`UPDATE sessions SET lease_until = 0 WHERE id = ?`), id)
	if err == nil && n == 0 {
		return fmt.Errorf("%s store %s: session %s: %w", s.d.Name, s.cfg.Where, id, store.ErrNotFound)
	}
	return s.fail(err, id, "lapse the lease of session %s", id)
}

// write runs one statement in a write transaction of its own and returns
// the rows it changed. Never a bare statement: in SQLite an autocommit
// write begins as a read and, when another process commits first, fails
// at once (SQLITE_BUSY_SNAPSHOT) without waiting; a transaction begun
// IMMEDIATE waits for the write lock within the busy timeout.
func (s *Store) write(ctx context.Context, query string, args ...any) (int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return n, tx.Commit()
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// insertRows is the number of events one INSERT statement stores.
const insertRows = 100

type writer struct {
	s     *Store
	id    string
	epoch int64

	mu     sync.Mutex
	info   store.Info
	next   int64
	closed bool
	fenced error
	stop   chan struct{}
	done   chan struct{}
}

func (w *writer) Info() store.Info {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := w.info
	i.Events = w.next
	return i
}

func (w *writer) Append(ctx context.Context, batch []surface.Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.s
	switch {
	case w.closed:
		return fmt.Errorf("%s store %s: session %s: writer: %w", s.d.Name, s.cfg.Where, w.id, store.ErrClosed)
	case w.fenced != nil:
		return w.fenced
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(batch) == 0 {
		return nil
	}
	if err := store.CheckBatch(w.id, w.next, batch); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.fail(err, w.id, "session %s: append", w.id)
	}
	defer tx.Rollback()
	n := int64(len(batch))
	res, err := tx.ExecContext(ctx, s.q(`UPDATE sessions SET next_seq = next_seq + ?, updated_at = NOW(), lease_until = NOW() + ? WHERE id = ? AND epoch = ? AND next_seq = ?`),
		n, s.cfg.Lease.Milliseconds(), w.id, w.epoch, w.next)
	if err != nil {
		return s.fail(err, w.id, "session %s: append seq %d..%d", w.id, batch[0].Seq, batch[n-1].Seq)
	}
	if k, _ := res.RowsAffected(); k != 1 {
		return w.refused(ctx, tx, batch)
	}
	// One multi-row INSERT per 100 events: a batch costs a few round trips
	// to the server, not one per event.
	var buf []byte
	for from := 0; from < len(batch); from += insertRows {
		part := batch[from:min(from+insertRows, len(batch))]
		args := make([]any, 0, 5*len(part))
		var q strings.Builder
		q.WriteString("INSERT INTO events (session_id, seq, type, time, event) VALUES ")
		for i := range part {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?)")
			start := len(buf)
			buf = surface.AppendEvent(buf, &part[i])
			args = append(args, w.id, part[i].Seq, part[i].Type, part[i].Time, buf[start:len(buf):len(buf)])
		}
		if _, err := tx.ExecContext(ctx, s.q(q.String()), args...); err != nil {
			return s.errf(err, "session %s: append seq %d..%d", w.id, part[0].Seq, part[len(part)-1].Seq)
		}
		buf = buf[:0:0]
	}
	if err := tx.Commit(); err != nil {
		return s.errf(err, "session %s: append seq %d..%d: commit", w.id, batch[0].Seq, batch[n-1].Seq)
	}
	w.next += n
	return nil
}

// refused explains an append whose fencing update matched no row.
func (w *writer) refused(ctx context.Context, tx *sql.Tx, batch []surface.Event) error {
	s := w.s
	var epoch, next int64
	var holder string
	err := tx.QueryRowContext(ctx, s.q(`SELECT epoch, next_seq, holder FROM sessions WHERE id = ?`), w.id).Scan(&epoch, &next, &holder)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		w.fenced = fmt.Errorf("%s store %s: session %s was deleted while this writer held it: %w", s.d.Name, s.cfg.Where, w.id, store.ErrFenced)
	case err != nil:
		return s.errf(err, "session %s: append refused; reading why", w.id)
	case epoch != w.epoch:
		w.fenced = fmt.Errorf("%s store %s: session %s: append of seq %d..%d refused by the database: this writer's lease (epoch %d) lapsed and writer %s took the session over (epoch %d); reopen the session: %w",
			s.d.Name, s.cfg.Where, w.id, batch[0].Seq, batch[len(batch)-1].Seq, w.epoch, holderName(holder), epoch, store.ErrFenced)
	default:
		return fmt.Errorf("%s store %s: session %s: the database holds %d events but this writer expected %d: %w",
			s.d.Name, s.cfg.Where, w.id, next, w.next, store.ErrNotContinuous)
	}
	return w.fenced
}

func (w *writer) startRenew() {
	if w.s.cfg.Renew < 0 {
		return
	}
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.done)
		t := time.NewTicker(w.s.cfg.Renew)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), w.s.cfg.Renew)
			n, err := w.s.write(ctx, w.s.q(`UPDATE sessions SET lease_until = NOW() + ? WHERE id = ? AND epoch = ?`),
				w.s.cfg.Lease.Milliseconds(), w.id, w.epoch)
			cancel()
			if err == nil && n == 0 {
				return // taken over: the next append says so
			}
		}
	}()
}

// Close releases the lease (when this writer still holds it).
func (w *writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	if w.stop != nil {
		close(w.stop)
		<-w.done
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.s.cfg.Wait+5*time.Second)
	defer cancel()
	_, err := w.s.write(ctx, w.s.q(`UPDATE sessions SET lease_until = 0 WHERE id = ? AND epoch = ?`), w.id, w.epoch)
	return w.s.fail(err, w.id, "session %s: release the lease", w.id)
}
