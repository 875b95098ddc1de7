package setup_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/setup"
)

// Each store a sessions.store setting names keeps a session where the
// setting says: written through one store, it is listed by a second one
// opened from the same setting.
func TestOpenStoreKeepsSessionsWhereTheSettingSays(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		spec  string
		where string // the file the session lands in
	}{
		{"", filepath.Join(dir, "sessions")},
		{"file", filepath.Join(dir, "sessions")},
		{"file:" + filepath.Join(dir, "other"), filepath.Join(dir, "other")},
		{"sqlite:" + filepath.Join(dir, "s.db"), filepath.Join(dir, "s.db")},
		{filepath.Join(dir, "one.jsonl"), filepath.Join(dir, "one.jsonl")},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			cfg := config.Default()
			cfg.Sessions.Store, cfg.Sessions.Dir = c.spec, filepath.Join(dir, "sessions")
			st, err := setup.OpenSessionStore(ctx, cfg)
			require.NoError(t, err)
			s, err := host.Open(ctx, st, "s-1")
			require.NoError(t, err)
			s.ReportFailure(host.Proposer{Kind: host.ByLoop}, errors.New("an event to keep"))
			require.NoError(t, s.Close())
			require.NoError(t, st.Close())
			_, err = os.Stat(c.where)
			require.NoError(t, err, "the session is kept at %s", c.where)

			again, err := setup.OpenStore(ctx, c.spec, cfg.Sessions.Dir)
			require.NoError(t, err)
			defer again.Close()
			infos, err := again.List(ctx)
			require.NoError(t, err)
			require.Len(t, infos, 1)
		})
	}
}

// A setting config.StoreProblem refuses is an error naming the key and the
// rule, before anything is opened; a password in a PostgreSQL URL is never
// echoed.
func TestOpenStoreRefusesABadSetting(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"files", `"files" is not a store`},
		{"postgres://weir:hunter2-secret@db/weir", "carries a password"},
		{"postgres:///weir", "names no host"},
	} {
		_, err := setup.OpenStore(context.Background(), c.spec, t.TempDir())
		require.ErrorContains(t, err, "sessions.store: ")
		require.ErrorContains(t, err, c.want)
		require.NotContains(t, err.Error(), "hunter2-secret")
	}
}
