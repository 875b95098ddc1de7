package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/host/store/postgres"
	"github.com/weirhost/weir/host/store/postgres/pgtest"
	"github.com/weirhost/weir/host/store/storetest"
	"github.com/weirhost/weir/surface"
)

var (
	server   *pgtest.Server
	startErr error
)

func TestMain(m *testing.M) {
	if u := os.Getenv(scaleEnv); u != "" {
		if err := scaleChild(u, os.Getenv(scaleArgsEnv)); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if u := os.Getenv(hostsEnv); u != "" {
		if err := hostsChild(u, os.Getenv(hostsArgsEnv), os.Getenv(hostsModelEnv)); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	storetest.Main(func(url string) (store.Store, error) {
		return postgres.Open(context.Background(), url, postgres.Password(postgres.PasswordEnv))
	})
	server, startErr = pgtest.Start()
	if server != nil {
		// The stores opened by the tests (and their crash children) read
		// the password from the environment (they ask for it), never from
		// the URL.
		os.Setenv(postgres.PasswordEnv, server.Password())
	}
	code := m.Run()
	if server != nil {
		server.Stop()
	}
	os.Exit(code)
}

// need returns the test server, or fails (CI=true) or skips the test when
// none could be started.
func need(t testing.TB) *pgtest.Server {
	t.Helper()
	if server == nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL tests need a server and none could be started: %v", startErr)
		}
		t.Skipf("skipping the PostgreSQL tests: no server could be started (%v); CI=true makes this a failure", startErr)
	}
	return server
}

func newDB(t testing.TB) string {
	u, err := need(t).NewDatabase(context.Background())
	require.NoError(t, err)
	return u
}

func open(t testing.TB, url string, opts ...postgres.Option) *postgres.Store {
	st, err := postgres.Open(context.Background(), url, append([]postgres.Option{postgres.Password(postgres.PasswordEnv)}, opts...)...)
	require.NoError(t, err)
	return st
}

func TestConformance(t *testing.T) {
	need(t)
	storetest.Run(t, storetest.Harness{
		New:   func(t testing.TB) store.Store { return open(t, newDB(t)) },
		Again: func(t testing.TB, st store.Store) store.Store { return open(t, url(st)) },
		Lapse: func(t testing.TB, st store.Store, id string) {
			require.NoError(t, st.(*postgres.Store).Lapse(context.Background(), id))
		},
		Spec: func(t testing.TB, st store.Store) string { return url(st) },
		Short: func(t testing.TB, st store.Store, lease, wait time.Duration) store.Store {
			u := newDBOr(t, st)
			return open(t, u, postgres.Lease(lease, -1), postgres.Wait(wait))
		},
		Freeze:     freeze,
		EndsFrozen: true,
	})
}

func newDBOr(t testing.TB, st store.Store) string {
	if st == nil {
		return newDB(t)
	}
	return url(st)
}

func freeze(t testing.TB, st store.Store, id string) func() {
	tx, err := st.(*postgres.Store).DB().BeginTx(context.Background(), nil)
	require.NoError(t, err)
	_, err = tx.Exec(`UPDATE sessions SET updated_at = updated_at WHERE id = $1`, id)
	require.NoError(t, err)
	return func() { tx.Rollback() }
}

func url(st store.Store) string { return st.(*postgres.Store).Where() }

func TestPasswordNeverInURLOrErrors(t *testing.T) {
	srv := need(t)
	u := newDB(t)
	withPw := strings.Replace(u, pgtest.User+"@", pgtest.User+":"+srv.Password()+"@", 1)
	_, err := postgres.Open(context.Background(), withPw)
	require.ErrorIs(t, err, postgres.ErrPasswordInURL)
	require.NotContains(t, err.Error(), srv.Password())
	_, err = postgres.Open(context.Background(), u+"&password="+srv.Password())
	require.ErrorIs(t, err, postgres.ErrPasswordInURL)
	require.NotContains(t, err.Error(), srv.Password())

	// A wrong password from the environment: refused by the server, and
	// the message carries no password.
	t.Setenv("WEIR_TEST_WRONG_PW", "not-the-password")
	_, err = postgres.Open(context.Background(), u, postgres.Password("WEIR_TEST_WRONG_PW"))
	require.Error(t, err)
	require.NotContains(t, err.Error(), "not-the-password")
	require.NotContains(t, err.Error(), srv.Password())

	// Without a password option the store reads no environment, so the
	// server refuses it; with the password given, it opens.
	_, err = postgres.Open(context.Background(), u)
	require.Error(t, err)
	st, err := postgres.Open(context.Background(), u, postgres.PasswordValue(srv.Password()))
	require.NoError(t, err)
	require.NoError(t, st.Close())
}

func TestMigrationsAreVersionedAndIdempotent(t *testing.T) {
	u := newDB(t)
	ctx := context.Background()
	done := make(chan error, 3)
	for range 3 { // hosts starting at once
		go func() {
			st, err := postgres.Open(ctx, u, postgres.Password(postgres.PasswordEnv))
			if err == nil {
				st.Close()
			}
			done <- err
		}()
	}
	for range 3 {
		require.NoError(t, <-done)
	}
	st := open(t, u)
	defer st.Close()
	var versions []int
	rows, err := st.DB().QueryContext(ctx, `SELECT version FROM weir_schema ORDER BY version`)
	require.NoError(t, err)
	for rows.Next() {
		var v int
		require.NoError(t, rows.Scan(&v))
		versions = append(versions, v)
	}
	require.Equal(t, []int{1, 2, 3}, versions)
}

func TestExpire(t *testing.T) {
	st := open(t, newDB(t))
	defer st.Close()
	ctx := context.Background()
	evs := storetest.Synthetic(t, 2)
	for _, id := range []string{"old", "held"} {
		w, err := st.Open(ctx, id, store.OpenOptions{Create: true}, func(surface.Event) error { return nil })
		require.NoError(t, err)
		require.NoError(t, w.Append(ctx, evs))
		if id == "old" {
			require.NoError(t, w.Close())
		} else {
			defer w.Close()
		}
	}
	ids, err := st.Expire(ctx, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, []string{"old"}, ids, "a session whose lease is held is not expired")
	list, err := st.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "held", list[0].ID)
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B, durable bool) store.Store {
		var opts []postgres.Option
		if !durable {
			opts = append(opts, postgres.NoSync())
		}
		return open(b, newDB(b), opts...)
	})
}

// TestConnectionsStayOpen: a store serving several sessions at once keeps
// the connections it opened instead of closing them as they come back to
// the pool and opening new ones (each a TCP connection, a password
// authentication and a server process: up to a second on a loaded
// machine, which TestScaleOutHosts showed as seconds-long appends).
func TestConnectionsStayOpen(t *testing.T) {
	st := open(t, newDB(t))
	defer st.Close()
	ctx := context.Background()
	// Four connections in use at once, back in the pool together.
	var txs []*sql.Tx
	for range 4 {
		tx, err := st.DB().BeginTx(ctx, nil)
		require.NoError(t, err)
		txs = append(txs, tx)
	}
	for _, tx := range txs {
		require.NoError(t, tx.Rollback())
	}
	evs := storetest.Synthetic(t, 20)
	errs := make(chan error, 6)
	for i := range 6 {
		go func() {
			w, err := st.Open(ctx, fmt.Sprintf("c%d", i), store.OpenOptions{Create: true}, nil)
			if err != nil {
				errs <- err
				return
			}
			for j := range evs {
				if err := w.Append(ctx, evs[j:j+1]); err != nil {
					errs <- err
					return
				}
			}
			errs <- w.Close()
		}()
	}
	for range 6 {
		require.NoError(t, <-errs)
	}
	stats := st.DB().Stats()
	require.Zero(t, stats.MaxIdleClosed, "no connection was closed for want of room in the idle pool: %+v", stats)
	require.GreaterOrEqual(t, stats.OpenConnections, 4, "the connections used at once are all still open")
}
