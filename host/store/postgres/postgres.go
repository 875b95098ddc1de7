// Package postgres keeps sessions in PostgreSQL through
// github.com/jackc/pgx/v5, with the schema of the SQLite store
// (docs/stores.md). Each append is one transaction, committed with
// synchronous_commit=on before it is acknowledged. The writer fence
// survives crashes and network partitions: a host that lost its lease
// (paused, or cut off while another host took the session over after the
// lease timed out) has its next append refused by the database itself,
// whose UPDATE checks the writer's epoch and expected next seq in the same
// transaction as the insert. Migrations are versioned and applied on start,
// serialized by an advisory lock.
//
// The password is never part of the URL: the caller gives it, or names the
// environment variable to read it from (Password; the command-line host
// uses PasswordEnv, WEIR_POSTGRES_PASSWORD), and no error or log line
// carries it. The package reads no environment variable unless told;
// pgx, which parses the URL, still applies libpq's PG* variables and
// password file to what the URL leaves unset.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/weirhost/weir/host/store/internal/sqlstore"
)

// PasswordEnv is the environment variable the command-line host reads the
// password from (Password(PasswordEnv)).
const PasswordEnv = "WEIR_POSTGRES_PASSWORD"

// Store is a PostgreSQL session store.
type Store struct {
	*sqlstore.Store
}

// Option configures a Store.
type Option func(*options)

type options struct {
	cfg         sqlstore.Config
	passwordEnv string
	password    string
	noSync      bool
}

// Lease sets how long a writer's lease lasts without an append or renewal
// (default 30 s) and how often an idle writer renews it (default a third of
// it; negative: never, to simulate a paused host).
func Lease(lease, renew time.Duration) Option {
	return func(o *options) { o.cfg.Lease, o.cfg.Renew = lease, renew }
}

// Password reads the password from the environment variable env when the
// store opens. Without it or PasswordValue, the store gives no password of
// its own.
func Password(env string) Option { return func(o *options) { o.passwordEnv, o.password = env, "" } }

// PasswordValue sets the password.
func PasswordValue(password string) Option {
	return func(o *options) { o.passwordEnv, o.password = "", password }
}

// Wait bounds how long an operation waits for a session's row while
// another transaction holds it (lock_timeout; default 2 s) before it fails
// with store.ErrLocked naming the session's writer.
func Wait(d time.Duration) Option { return func(o *options) { o.cfg.Wait = d } }

// NoSync sets synchronous_commit=off: appends are acknowledged before they
// are durable. Only for benchmarks.
func NoSync() Option { return func(o *options) { o.noSync = true } }

var dialect = sqlstore.Dialect{
	Name:          "postgres",
	Numbered:      true,
	Now:           "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT",
	Blob:          "BYTEA",
	ForUpdate:     " FOR UPDATE",
	MigrationLock: "SELECT pg_advisory_xact_lock(7105116175106766)", // "weirsessions"
	// Without fresh statistics (a session just written) the planner
	// estimates a few hundred rows and sorts 100k on disk; the primary
	// key already yields them in seq order.
	LoadSetup: "SET LOCAL enable_sort = off",
	EpochSource: `CREATE SEQUENCE weir_epoch;
SELECT setval('weir_epoch', COALESCE((SELECT MAX(epoch) FROM sessions), 0) + 1, false)`,
	NextEpoch: `SELECT nextval('weir_epoch')`,
	Unique: func(err error) bool {
		var e *pgconn.PgError
		return errors.As(err, &e) && e.Code == "23505"
	},
	Lock: "the session's row",
	Busy: func(err error) bool {
		var e *pgconn.PgError
		return errors.As(err, &e) && e.Code == "55P03" // lock_not_available: lock_timeout
	},
}

// StatementTimeout bounds every statement the store runs (PostgreSQL's
// statement_timeout), the longest a load of a whole session may take.
const StatementTimeout = 5 * time.Minute

// ErrPasswordInURL is the error of a URL that carries a password.
var ErrPasswordInURL = errors.New("the PostgreSQL URL must not carry a password: give it apart")

// Redact returns rawURL without its password, for messages.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable PostgreSQL URL)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// Open connects to the database at rawURL (postgres://user@host:port/db),
// with the password the options give, and applies the schema migrations
// it lacks.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	where := Redact(rawURL)
	o.cfg.Where = where
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("postgres store: the URL does not parse (%s)", where)
	}
	if _, ok := u.User.Password(); ok || u.Query().Has("password") {
		if o.passwordEnv != "" {
			return nil, fmt.Errorf("postgres store %s: %w (in the environment variable %s)", where, ErrPasswordInURL, o.passwordEnv)
		}
		return nil, fmt.Errorf("postgres store %s: %w", where, ErrPasswordInURL)
	}
	cc, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("postgres store %s: %w", where, err)
	}
	switch {
	case o.passwordEnv != "":
		cc.Password = os.Getenv(o.passwordEnv)
	case o.password != "":
		cc.Password = o.password
	}
	sync := "on"
	if o.noSync {
		sync = "off"
	}
	cc.RuntimeParams["synchronous_commit"] = sync
	// Bounded waits (docs/stores.md): a lock is waited for at most Wait;
	// a transaction left idle (its host frozen or cut off mid-append) is
	// ended by the server after the lease, so it cannot hold a session's
	// row past the lease it was renewing; a statement runs at most
	// StatementTimeout. A URL that sets one of them keeps its own value.
	o.cfg = o.cfg.WithDefaults()
	if o.cfg.Wait <= 0 {
		o.cfg.Wait = 2 * time.Second
	}
	for k, v := range map[string]time.Duration{
		"lock_timeout":                        o.cfg.Wait,
		"idle_in_transaction_session_timeout": o.cfg.Lease,
		"statement_timeout":                   StatementTimeout,
	} {
		if _, set := cc.RuntimeParams[k]; !set {
			cc.RuntimeParams[k] = strconv.FormatInt(v.Milliseconds(), 10)
		}
	}
	cc.RuntimeParams["application_name"] = "weir"
	db := stdlib.OpenDB(*cc)
	// Keep every connection the store may open: database/sql keeps 2 idle
	// by default and closes the others as they come back, so a host with
	// a few sessions at once opened a new connection (TCP, password
	// authentication, a server process) for most appends, which took up
	// to a second on a loaded machine (TestScaleOutHosts).
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres store %s: connect: %w", where, err)
	}
	s, err := sqlstore.New(ctx, db, dialect, o.cfg)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Store{s}, nil
}

// maxConns bounds the connections of one store, shared by all its
// sessions' writers and readers.
const maxConns = 8

var _ interface{ DB() *sql.DB } = (*Store)(nil)
