package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/host/store/file"
	"github.com/weirhost/weir/host/store/storetest"
)

// TestSessionsInSQLite runs a session kept in a SQLite store by id, lists
// it, exports it to a file and imports it into another id, byte for byte,
// and reads it back with the inspection commands.
func TestSessionsInSQLite(t *testing.T) {
	t.Parallel()
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
	r = runHost(t, dir, "", "import", "demo-1", "--from", out, "--id", "demo-2")
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

	// --config names the store of every reading command from anywhere.
	other := t.TempDir()
	writeFile(t, filepath.Join(other, "alt.yaml"), "sessions:\n  store: sqlite:"+filepath.Join(dir, "sessions.db")+"\n")
	for _, args := range [][]string{
		{"replay", "demo-2"}, {"transcript", "demo-2"}, {"inspect", "demo-2"}, {"request", "demo-2", "--at", "4"},
		{"snapshot", "demo-2", filepath.Join(other, "snap")},
	} {
		r = runHost(t, other, "", append(args, "--config", "alt.yaml")...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		require.NotEmpty(t, r.stdout, "%v", args)
		r = runHost(t, other, "", args...)
		require.NotEqual(t, 0, r.code, "%v: without --config the session is not in the default store", args)
	}
	r = runHost(t, other, "", "transcript", "demo-2", "--config", "alt.yaml")
	require.Equal(t, r2.stdout, r.stdout)
	// The dry run reads the session (its compaction of so short a log is
	// refused as no smaller, which exits 1 after the receipt).
	r = runHost(t, other, "", "compact", "--route", "offline", "--dry-run", "demo-2", "--config", "alt.yaml")
	require.Contains(t, r.stdout, "dry run on demo-2: nothing was written", r.stderr)
	r = runHost(t, other, "", "compact", "--route", "offline", "--dry-run", "demo-2")
	require.Contains(t, r.stderr, "no session of that id in the store")

	// Copying again onto the same copy finds nothing left to do; copying
	// over a session that holds other events is refused.
	r = runHost(t, dir, "", "import", "demo-1", "--from", out, "--id", "demo-2")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "already holds the first")
	r = runHost(t, dir, "", "run", "--route", "offline", "--session", "demo-3", "something else")
	require.Equal(t, 0, r.code, r.stderr)
	r = runHost(t, dir, "", "import", "demo-1", "--from", out, "--id", "demo-3")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "refusing to copy over them")
	// The lease tools: show names the last writer and its epoch, the
	// lease is free once its run ended; release and delete.
	r = runHost(t, dir, "", "sessions", "show", "demo-1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^id +demo-1$`, r.stdout)
	require.Regexp(t, `(?m)^writer +\S+/\d+/[0-9a-f]+$`, r.stdout)
	require.Regexp(t, `(?m)^epoch +\d+$`, r.stdout)
	require.Regexp(t, `(?m)^lease left +free$`, r.stdout)
	r = runHost(t, dir, "", "sessions", "release", "demo-1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "no writer held its lease")
	r = runHost(t, dir, "", "sessions", "delete", "demo-2")
	require.Equal(t, 0, r.code, r.stderr)
	r = runHost(t, dir, "", "sessions", "delete", "demo-3")
	require.Equal(t, 0, r.code, r.stderr)
	r = runHost(t, dir, "", "sessions", "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "demo-2")
	require.Contains(t, r.stdout, "demo-1")
	r = runHost(t, dir, "", "sessions", "show", "demo-2")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "session not found")

	_, err := os.Stat(filepath.Join(dir, ".weir"))
	require.ErrorIs(t, err, os.ErrNotExist, "no session file was written")
}

func TestPostgresPasswordIsRefusedInConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "weir.yaml"), "sessions:\n  store: postgres://weir:s3cret-pw@127.0.0.1:1/weir\n")
	r := runHost(t, dir, "", "sessions", "list")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "sessions.store")
	require.NotContains(t, r.stderr+r.stdout, "s3cret-pw")
}

// TestCopyKeepsTheHeader imports a session file whose header has every
// member the format knows and unknown ones into SQLite and exports it back
// to a file: the two files are the same, byte for byte.
func TestCopyKeepsTheHeader(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "weir.yaml"), "sessions:\n  store: sqlite:sessions.db\n")
	r := runHost(t, dir, "", "run", "--route", "offline", "--session", "h", "hello")
	require.Equal(t, 0, r.code, r.stderr)
	plain := filepath.Join(dir, "plain.jsonl")
	r = runHost(t, dir, "", "export", "h", "--to", plain)
	require.Equal(t, 0, r.code, r.stderr)
	b := readFile(t, plain)
	events := b[strings.IndexByte(b, '\n'):]
	header := `{"type":"session","version":3,"id":"seeded","createdAt":1750000000000,"cwd":"/srv/work","parentSession":"parent-1",` +
		`"isSeeded":true,"origin":"subagent","delegationDepth":2,"agentPreset":{"name":"reviewer"},"title":"kept","x-tag":[1,{"y":null}]}`
	src := filepath.Join(dir, "seeded.jsonl")
	writeFile(t, src, header+events)
	r = runHost(t, dir, "", "import", "seeded", "--from", src)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "header and events read back byte for byte")
	back := filepath.Join(dir, "back.jsonl")
	r = runHost(t, dir, "", "export", "seeded", "--to", back)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, header+events, readFile(t, back), "the whole file came back byte for byte")
}

// TestImportKilledThenRetried kills an import at random points (one event
// per transaction, so most kills leave part of the session) and runs it
// again each time, after releasing the dead import's lease: every retry
// resumes from what the killed one stored,
// and the last one leaves the session whole, byte for byte.
func TestImportKilledThenRetried(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "weir.yaml"), "sessions:\n  store: sqlite:sessions.db\n")
	for i := range 3 {
		r := runHost(t, dir, "", "run", "--route", "offline", "--session", "src", fmt.Sprintf("turn %d", i))
		require.Equal(t, 0, r.code, r.stderr)
	}
	src := filepath.Join(dir, "src.jsonl")
	r := runHost(t, dir, "", "export", "src", "--to", src)
	require.Equal(t, 0, r.code, r.stderr)
	seed := time.Now().UnixNano()
	t.Logf("kill timing seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 26))
	resumed := 0
	for trial := range 6 {
		cmd := exec.Command(hostBin, "import", "src", "--from", src, "--id", "dst", "--batch", "1")
		cmd.Dir, cmd.Env = dir, hostEnv()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		time.Sleep(time.Duration(rng.Int64N(int64(400 * time.Millisecond))))
		cmd.Process.Kill()
		cmd.Wait()
		// The killed import's lease would hold the session for 30 s: the
		// operator, who knows it is dead, releases it.
		rel := runHost(t, dir, "", "sessions", "release", "dst")
		if rel.code != 0 {
			require.Contains(t, rel.stderr, "session not found", "trial %d: killed before it created the session", trial)
		}
		if strings.Contains(out.String(), "resuming the copy") {
			resumed++
		}
		require.NotContains(t, out.String(), "refusing", "trial %d: a killed copy leaves a prefix of the source", trial)
	}
	r = runHost(t, dir, "", "import", "src", "--from", src, "--id", "dst", "--batch", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "header and events read back byte for byte")
	back := filepath.Join(dir, "back.jsonl")
	r = runHost(t, dir, "", "export", "dst", "--to", back)
	require.Equal(t, 0, r.code, r.stderr)
	a, b := readFile(t, src), readFile(t, back)
	require.Equal(t, a[strings.IndexByte(a, '\n'):], b[strings.IndexByte(b, '\n'):], "the session is whole after the retries")
	t.Logf("%d of 6 killed imports had resumed an earlier one", resumed)
}

// TestSessionsInTheFileStore: show, release and delete follow the file
// store's lock, which lasts as long as its writer: while this process
// holds a session's lock, show names the process, release is refused
// naming it, and delete is refused; once it closed, the session is free,
// release has nothing to do and delete removes the file.
func TestSessionsInTheFileStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sessions := filepath.Join(dir, ".weir", "sessions")
	ctx := context.Background()
	w, err := file.Dir(sessions).Open(ctx, "demo-f", store.OpenOptions{Create: true}, nil)
	require.NoError(t, err)
	defer w.Close()
	require.NoError(t, w.Append(ctx, storetest.Synthetic(t, 3)))
	pid := strconv.Itoa(os.Getpid())

	r := runHost(t, dir, "", "sessions", "show", "demo-f")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^events +3$`, r.stdout)
	require.Regexp(t, `(?m)^writer +(pid `+pid+`|a process of this machine)$`, r.stdout)
	require.Regexp(t, `(?m)^lease left +until its writer closes the session or its process exits$`, r.stdout)
	require.NotContains(t, r.stdout, "epoch", "the file store has no epochs")
	r = runHost(t, dir, "", "sessions", "release", "demo-f")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "a file's lock cannot be released from outside and never outlives its writer")
	r = runHost(t, dir, "", "sessions", "delete", "demo-f")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "another writer holds it")
	require.FileExists(t, filepath.Join(sessions, "demo-f.jsonl"))

	require.NoError(t, w.Close())
	r = runHost(t, dir, "", "sessions", "show", "demo-f")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^writer +-$`, r.stdout)
	require.Regexp(t, `(?m)^lease left +free$`, r.stdout)
	r = runHost(t, dir, "", "sessions", "release", "demo-f")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "no writer held its lease")
	r = runHost(t, dir, "", "sessions", "delete", "demo-f")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "deleted demo-f\n", r.stdout)
	require.NoFileExists(t, filepath.Join(sessions, "demo-f.jsonl"))
	r = runHost(t, dir, "", "sessions", "show", "demo-f")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "session not found")
}
