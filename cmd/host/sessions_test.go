package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSessionsInSQLite runs a session kept in a SQLite store by id, lists
// it, exports it to a file and imports it into another id, byte for byte,
// and reads it back with the inspection commands.
func TestSessionsInSQLite(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "weir.yaml"), "sessions:\n  store: sqlite:sessions.db\n")
	r := runHost(t, dir, "", "run", "--route", "offline", "--session", "demo-1", "what files are here?")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "turn 1: completed")
	r = runHost(t, dir, "", "run", "--route", "offline", "--session", "demo-1", "and again")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "turn 2: completed", "the session resumed from the store")

	r = runHost(t, dir, "", "sessions", "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "demo-1")
	r = runHost(t, dir, "", "sessions", "expire", "--older-than", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "0 session(s) expired", "a session written just now is kept")

	out := filepath.Join(dir, "demo-1.jsonl")
	r = runHost(t, dir, "", "export", "demo-1", "--to", out)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "read back byte for byte")
	r = runHost(t, dir, "", "import", "copy", "--from", out, "--id", "demo-2")
	require.Equal(t, 0, r.code, r.stderr)
	r = runHost(t, dir, "", "export", "demo-2", "--to", filepath.Join(dir, "demo-2.jsonl"))
	require.Equal(t, 0, r.code, r.stderr)
	a, b := readFile(t, out), readFile(t, filepath.Join(dir, "demo-2.jsonl"))
	require.Equal(t, a[strings.IndexByte(a, '\n'):], b[strings.IndexByte(b, '\n'):], "the events went through two stores byte for byte")

	// Reading commands take a session id of the configured store too.
	r = runHost(t, dir, "", "transcript", "demo-2")
	require.Equal(t, 0, r.code, r.stderr)
	r2 := runHost(t, dir, "", "transcript", out)
	require.Equal(t, r2.stdout, r.stdout)

	// Copying over a session that has events is refused.
	r = runHost(t, dir, "", "import", "copy", "--from", out, "--id", "demo-2")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "refusing to copy over them")
	_, err := os.Stat(filepath.Join(dir, ".weir"))
	require.ErrorIs(t, err, os.ErrNotExist, "no session file was written")
}

func TestPostgresPasswordIsRefusedInConfig(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "weir.yaml"), "sessions:\n  store: postgres://weir:s3cret-pw@127.0.0.1:1/weir\n")
	r := runHost(t, dir, "", "sessions", "list")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "sessions.store")
	require.NotContains(t, r.stderr+r.stdout, "s3cret-pw")
}
