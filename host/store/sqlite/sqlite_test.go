package sqlite_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/host/store/sqlite"
	"github.com/weirhost/weir/host/store/storetest"
	"github.com/weirhost/weir/surface"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(procEnv); path != "" {
		if err := procChild(path, os.Getenv(procIDEnv)); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	storetest.Main(func(path string) (store.Store, error) { return sqlite.Open(context.Background(), path) })
	os.Exit(m.Run())
}

func open(t testing.TB, path string) *sqlite.Store {
	st, err := sqlite.Open(context.Background(), path)
	require.NoError(t, err)
	return st
}

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New:   func(t testing.TB) store.Store { return open(t, filepath.Join(t.TempDir(), "sessions.db")) },
		Again: func(t testing.TB, st store.Store) store.Store { return open(t, st.(*sqlite.Store).Where()) },
		Lapse: func(t testing.TB, st store.Store, id string) {
			require.NoError(t, st.(*sqlite.Store).Lapse(context.Background(), id))
		},
		Spec: func(t testing.TB, st store.Store) string { return st.(*sqlite.Store).Where() },
		Short: func(t testing.TB, st store.Store, lease, wait time.Duration) store.Store {
			path := filepath.Join(t.TempDir(), "sessions.db")
			if st != nil {
				path = st.(*sqlite.Store).Where()
			}
			s, err := sqlite.Open(context.Background(), path, sqlite.Lease(lease, -1), sqlite.Wait(wait))
			require.NoError(t, err)
			return s
		},
		Freeze: func(t testing.TB, st store.Store, id string) func() {
			tx, err := st.(*sqlite.Store).DB().BeginTx(context.Background(), nil)
			require.NoError(t, err)
			_, err = tx.Exec(`UPDATE sessions SET updated_at = updated_at WHERE id = ?`, id)
			require.NoError(t, err)
			return func() { tx.Rollback() }
		},
	})
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B, durable bool) store.Store {
		var opts []sqlite.Option
		if !durable {
			opts = append(opts, sqlite.NoSync())
		}
		st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), opts...)
		require.NoError(b, err)
		return st
	})
}

const (
	procEnv   = "WEIR_SQLITE_PROC_DB"
	procIDEnv = "WEIR_SQLITE_PROC_ID"
)

// procChild is one of the processes of TestManyProcesses: it opens the
// store, creates its own session, appends three batches, lists and loads
// the store as a reader would, and closes.
func procChild(path, id string) error {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		return err
	}
	defer st.Close()
	w, err := st.Open(ctx, id, store.OpenOptions{Create: true}, nil)
	if err != nil {
		return err
	}
	evs := storetest.Synthetic(nopTB{}, 6)
	for i := 0; i < len(evs); i += 2 {
		if err := w.Append(ctx, evs[i:i+2]); err != nil {
			return err
		}
	}
	if _, err := st.List(ctx); err != nil {
		return err
	}
	if _, err := st.Load(ctx, id, func(surface.Event) error { return nil }); err != nil {
		return err
	}
	return w.Close()
}

type nopTB struct{ testing.TB }

func (nopTB) Helper()               {}
func (nopTB) Errorf(string, ...any) {}
func (nopTB) FailNow()              { panic("fixtures do not decode") }

// shortProcs is the number of processes TestManyProcesses starts at once
// in a plain test run: enough for the races, a fifth of the CPU of the
// long run's (on a loaded machine 50 processes contending for the write
// lock take a minute of CPU).
const shortProcs = 10

// TestManyProcesses starts 10 processes at once on one SQLite file (50
// with WEIR_LONG=1), first a new file (the first pragmas race), then the
// same file again (the migration check and the writes race): every process
// succeeds and every session holds its six events.
func TestManyProcesses(t *testing.T) {
	procs := min(shortProcs, longProcs)
	if os.Getenv("WEIR_LONG") == "1" {
		procs = longProcs
	}
	path := filepath.Join(t.TempDir(), "many.db")
	for round := range 2 {
		cmds := make([]*exec.Cmd, procs)
		outs := make([]*bytes.Buffer, procs)
		for i := range cmds {
			cmds[i] = exec.Command(os.Args[0], "-test.run=^$")
			cmds[i].Env = append(os.Environ(), procEnv+"="+path, fmt.Sprintf("%s=p%d-%d", procIDEnv, round, i))
			outs[i] = &bytes.Buffer{}
			cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
		}
		for _, c := range cmds {
			require.NoError(t, c.Start())
		}
		failed := 0
		for i, c := range cmds {
			if err := c.Wait(); err != nil {
				failed++
				t.Errorf("round %d: process %d: %v: %s", round, i, err, outs[i])
			}
		}
		require.Zero(t, failed, "round %d: processes failed", round)
	}
	st := open(t, path)
	defer st.Close()
	list, err := st.List(context.Background())
	require.NoError(t, err)
	require.Len(t, list, 2*procs)
	for _, i := range list {
		require.EqualValues(t, 6, i.Events, "session %s", i.ID)
	}
}

// TestLockedNamesTheDatabase: SQLite's write lock is the whole database's,
// so an open that gave up waiting for it says the database is locked by
// another writer or transaction, and never names a session's writer as
// the holder: not the writer of another session, and this session's own
// writer only as its lease, apart from the lock.
func TestLockedNamesTheDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "locked.db")
	a, err := sqlite.Open(ctx, path, sqlite.Wait(200*time.Millisecond))
	require.NoError(t, err)
	defer a.Close()
	w, err := a.Open(ctx, "held", store.OpenOptions{Create: true}, nil)
	require.NoError(t, err)
	defer w.Close()
	lease, err := a.Lease(ctx, "held")
	require.NoError(t, err)
	require.NotEmpty(t, lease.Holder)

	// Another client of the file holds the write lock.
	tx, err := a.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback()
	_, err = tx.Exec(`UPDATE weir_epoch SET last = last`)
	require.NoError(t, err)

	b, err := sqlite.Open(ctx, path, sqlite.Wait(200*time.Millisecond))
	require.NoError(t, err)
	defer b.Close()
	cases := []struct {
		id, lease string
	}{
		{"other", "apart from that lock, no writer holds the session's lease"},
		{"held", "apart from that lock, the session's writer " + lease.Holder + " holds its lease (epoch " + fmt.Sprint(lease.Epoch) + ")"},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			_, err := b.Open(ctx, c.id, store.OpenOptions{Create: true}, nil)
			require.ErrorIs(t, err, store.ErrLocked)
			msg := err.Error()
			t.Log(msg)
			require.Contains(t, msg, "gave up after waiting 200ms for the database's write lock (bounded wait)")
			require.Contains(t, msg, "the database is locked by another writer or transaction, of any session or client of the file, which sqlite does not name")
			require.Contains(t, msg, c.lease)
			require.NotContains(t, msg, "which another transaction holds;", "the lock's holder is not the session's writer")
			if c.id == "other" {
				require.NotContains(t, msg, lease.Holder, "another session's writer is not named")
			}
		})
	}
}

// TestOpenCreatesTheFolder: a database path in a folder that does not
// exist yet opens, as the file store's folder does; a folder that cannot
// be made is an error naming the path.
func TestOpenCreatesTheFolder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".weir", "deeper", "sessions.db")
	st := open(t, path)
	require.NoError(t, st.Close())
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular())

	blocker := filepath.Join(dir, "plain-file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o644))
	_, err = sqlite.Open(context.Background(), filepath.Join(blocker, "sessions.db"))
	require.ErrorContains(t, err, "sqlite store "+filepath.Join(blocker, "sessions.db")+": the database's folder")
}
