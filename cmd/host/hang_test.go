package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm/llmtest"
)

// hangBound is how long a run against a server that never finishes may
// take before the test calls it a hang. It is far above the bounds the
// tests configure, so a loaded machine does not fail them, and below the
// default idle timeout, so a bound that was not applied is caught.
const hangBound = 90 * time.Second

// runArgs are the arguments of "host run" against the loopback server.
func runArgs(url string, args ...string) []string {
	return append([]string{"run", "--base-url", url, "--provider", "test", "--model", "test-model", "--api-key-env", "WEIR_TEST_KEY"}, args...)
}

// hermeticRun runs the built host in dir with the tests' hermetic
// environment (hostEnv) and the test key. It fails the test if the process
// outlives hangBound.
func hermeticRun(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := exec.Command(hostBin, args...)
	cmd.Dir = dir
	cmd.Env = hostEnv("WEIR_TEST_KEY=sk-hang-test-secret-0123456789")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	err := waitExit(t, cmd, hangBound)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// requireResumable checks that the session log replays and that a next
// run on it completes against a well-behaved server.
func requireResumable(t *testing.T, srv *llmtest.Server, dir, file string) {
	t.Helper()
	r := hermeticRun(t, dir, "replay", file)
	require.Equal(t, 0, r.code, "replay: %s", r.stderr)
	srv.Push(llmtest.TextReply(10, 2, "Back."))
	r = hermeticRun(t, dir, runArgs(srv.URL(), "--session", file, "again")...)
	require.Equal(t, 0, r.code, "resume: %s", r.stderr)
	require.Contains(t, r.stdout, "Back.")
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"reason":"resume"`)
	require.NotContains(t, string(raw), "sk-hang-test-secret", "the key never enters the log")
}

// TestRunStopsAKeepAliveServer runs against a server that answers, then
// only sends SSE keep-alive comments: the route's idleTimeout ends the
// run with TIMEOUT, naming the key, and the session stays usable.
func TestRunStopsAKeepAliveServer(t *testing.T) {
	srv := llmtest.NewServer(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "weir.yaml"), []byte("models:\n  deepseek:\n    idleTimeout: 1s\n"), 0o644))
	file := filepath.Join(dir, "s.jsonl")
	srv.Push(llmtest.Reply{Chunks: []string{llmtest.Role(), llmtest.Text("Partial")}, End: llmtest.EndKeepAlive, Tick: 50 * time.Millisecond})

	r := hermeticRun(t, dir, runArgs(srv.URL(), "--session", file, "hi")...)
	require.NotEqual(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	require.Contains(t, r.stderr, "TIMEOUT")
	require.Contains(t, r.stderr, "models.deepseek.idleTimeout")
	requireResumable(t, srv, dir, file)
}

// TestRunStopsAnEndlessReply runs against a server whose reply never
// ends: the route's response size cap ends the run with
// RESPONSE_TOO_LARGE, naming the key, not retried, and the session stays
// usable. The cap is the smallest one allowed, so the test streams 1 MiB
// rather than the default's many.
func TestRunStopsAnEndlessReply(t *testing.T) {
	srv := llmtest.NewServer(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "weir.yaml"), []byte("models:\n  deepseek:\n    maxResponseMiB: 1\n"), 0o644))
	file := filepath.Join(dir, "s.jsonl")
	srv.Push(llmtest.Reply{Chunks: []string{llmtest.Text(strings.Repeat("x", 8<<10))}, End: llmtest.EndRepeat})

	r := hermeticRun(t, dir, runArgs(srv.URL(), "--session", file, "hi")...)
	require.NotEqual(t, 0, r.code, "stderr: %s", r.stderr)
	require.Contains(t, r.stderr, "RESPONSE_TOO_LARGE")
	require.Contains(t, r.stderr, "models.deepseek.maxResponseMiB")
	require.Len(t, srv.Requests(), 1, "a response over the cap is not retried")
	requireResumable(t, srv, dir, file)
}

// TestCtrlCDuringAStreamThatNeverEnds: Ctrl-C ends a run whose server
// keeps the stream open (keep-alives only, or content without end) long
// before any configured bound would, with status 130, and the session
// resumes.
func TestCtrlCDuringAStreamThatNeverEnds(t *testing.T) {
	cases := []struct {
		name  string
		reply llmtest.Reply
	}{
		{"keep-alives", llmtest.Reply{Chunks: []string{llmtest.Role(), llmtest.Text("Partial")}, End: llmtest.EndKeepAlive, Tick: 50 * time.Millisecond}},
		{"endless content", llmtest.Reply{Chunks: []string{llmtest.Role(), llmtest.Text("Partial"), llmtest.Text(" more")}, End: llmtest.EndRepeat, Gap: 20 * time.Millisecond}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			dir := t.TempDir()
			file := filepath.Join(dir, "s.jsonl")
			srv.Push(c.reply)
			cmd := exec.Command(hostBin, runArgs(srv.URL(), "--session", file, "hi")...)
			cmd.Dir = dir
			cmd.Env = hostEnv("WEIR_TEST_KEY=sk-hang-test-secret-0123456789")
			interruptAfter(t, cmd, "Partial", hangBound)
			requireResumable(t, srv, dir, file)
		})
	}
}
