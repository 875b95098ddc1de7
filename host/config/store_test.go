package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStoreProblem(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"file", ""},
		{"sqlite:.weir/sessions.db", ""},
		{"postgres://weir@db.example:5432/weir?sslmode=disable", ""},
		{"postgresql://weir@127.0.0.1/weir", ""},
		{"sqlite:", "needs the database file's path"},
		{"postgres://weir:hunter2@db/weir", "carries a password"},
		{"postgres://weir@db/weir?password=hunter2", "carries a password"},
		{"postgres:///weir", "names no host"},
		{"mysql://weir:hunter2@db/weir", "is not a store"},
		{"files", `"files" is not a store`},
	} {
		got := StoreProblem(c.spec)
		if c.want == "" {
			require.Empty(t, got, c.spec)
			continue
		}
		require.Contains(t, got, c.want, c.spec)
		require.NotContains(t, got, "hunter2", "a password is never repeated")
	}
}

func TestSessionsStoreKey(t *testing.T) {
	dir := t.TempDir()
	cfg, _, err := Load(Options{Dir: dir, UserConfigDir: t.TempDir()})
	require.NoError(t, err)
	require.Equal(t, "file", cfg.Sessions.Store, "the file store is the default")

	require.NoError(t, os.WriteFile(filepath.Join(dir, FileName), []byte("sessions:\n  store: postgres://weir:hunter2@db/weir\n"), 0o644))
	_, _, err = Load(Options{Dir: dir, UserConfigDir: t.TempDir()})
	require.ErrorContains(t, err, "sessions.store")
	require.NotContains(t, err.Error(), "hunter2")
}
