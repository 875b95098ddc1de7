// Package sqlite keeps many sessions in one SQLite database file, with the
// schema described in docs/stores.md (sessions; events keyed by
// (session_id, seq) holding each event's JSON as stored bytes). The
// database runs in WAL mode with synchronous=FULL, so an append is durable
// when it returns; one writer per session is enforced by the database (a
// lease with a fencing epoch, checked inside each append's transaction),
// across processes.
//
// The driver is github.com/ncruces/go-sqlite3: SQLite compiled to
// WebAssembly and translated to Go, so no C toolchain is needed. It was
// measured against modernc.org/sqlite on append and load; see
// docs/stores.md.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ncruces/go-sqlite3"
	_ "github.com/ncruces/go-sqlite3/driver" // registers "sqlite3"

	"github.com/weirhost/weir/host/store/internal/sqlstore"
)

// Store is a SQLite session store.
type Store struct {
	*sqlstore.Store
}

// Option configures a Store.
type Option func(*options)

type options struct {
	cfg    sqlstore.Config
	noSync bool
}

// Lease sets how long a writer's lease lasts without an append or renewal
// (default 30 s) and how often an idle writer renews it (default a third of
// it; negative: never).
func Lease(lease, renew time.Duration) Option {
	return func(o *options) { o.cfg.Lease, o.cfg.Renew = lease, renew }
}

// Wait bounds how long a write waits for the database's write lock while
// another transaction, of any process, holds it (busy_timeout; default
// 1 min: the queue of writers of many processes starting at once on a
// loaded machine) before it fails with store.ErrLocked. The write lock is
// the whole database's, so the error says the database is locked by
// another writer or transaction (SQLite does not say which) and gives the
// session's own lease apart from that.
func Wait(d time.Duration) Option { return func(o *options) { o.cfg.Wait = d } }

// NoSync sets synchronous=OFF: appends are acknowledged before they are
// durable. Only for tests and benchmarks.
func NoSync() Option { return func(o *options) { o.noSync = true } }

var dialect = sqlstore.Dialect{
	Name: "sqlite",
	Now:  "CAST(unixepoch('subsec') * 1000 AS INTEGER)",
	Blob: "BLOB",
	EpochSource: `CREATE TABLE weir_epoch (last BIGINT NOT NULL);
INSERT INTO weir_epoch (last) SELECT COALESCE(MAX(epoch), 0) FROM sessions`,
	NextEpoch: `UPDATE weir_epoch SET last = last + 1 RETURNING last`,
	Unique: func(err error) bool {
		var e *sqlite3.Error
		return errors.As(err, &e) && e.Code() == sqlite3.CONSTRAINT
	},
	Lock:         "the database's write lock",
	DatabaseLock: true,
	Busy: func(err error) bool {
		return errors.Is(err, sqlite3.BUSY) || errors.Is(err, sqlite3.LOCKED)
	},
}

// Open opens (creating it when missing) the database file at path and
// applies the schema migrations it lacks. The file's folder is created
// when missing, as the file store creates its own.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	if path != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("sqlite store %s: the database's folder: %w", path, err)
		}
	}
	var o options
	for _, f := range opts {
		f(&o)
	}
	o.cfg.Where = path
	sync := "full"
	if o.noSync {
		sync = "off"
	}
	if o.cfg.Wait <= 0 {
		o.cfg.Wait = time.Minute
	}
	// Write transactions begin IMMEDIATE (the driver's default), so two
	// writers never deadlock upgrading a read lock; busy_timeout makes a
	// writer wait for another's commit instead of failing. It comes
	// first: the pragmas run in order on every new connection, and
	// journal_mode(wal) on a new file takes a lock another process
	// starting at the same moment may hold.
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?_txlock=immediate" +
		"&_pragma=busy_timeout(" + strconv.FormatInt(o.cfg.Wait.Milliseconds(), 10) + ")" +
		"&_pragma=journal_mode(wal)&_pragma=synchronous(" + sync + ")&_pragma=foreign_keys(on)"
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	if mode != "wal" {
		db.Close()
		return nil, fmt.Errorf("sqlite store %s: journal mode is %q, not wal: the store needs WAL for readers beside a writer", path, mode)
	}
	s, err := sqlstore.New(ctx, db, dialect, o.cfg)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Store{s}, nil
}
