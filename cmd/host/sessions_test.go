package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	r = runHost(t, dir, "", "sessions", "list", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var listed []struct {
		ID        string `json:"id"`
		Events    int64  `json:"events"`
		CreatedAt string `json:"createdAt"`
		UpdatedAt string `json:"updatedAt"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &listed), r.stdout)
	require.Len(t, listed, 1)
	require.Equal(t, "demo-1", listed[0].ID)
	require.Greater(t, listed[0].Events, int64(0))
	_, perr := time.Parse(time.RFC3339, listed[0].UpdatedAt)
	require.NoError(t, perr, "updatedAt is an RFC 3339 time")
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
