package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/host/store/sqlite"
	"github.com/weirhost/weir/host/store/storetest"
)

func TestMain(m *testing.M) {
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
