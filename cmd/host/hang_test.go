package main

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

// hermeticRun runs the built host in dir with HOME and the XDG directories
// inside the test's temporary directory, so only dir's weir.yaml
// configures it. It fails the test if the process outlives hangBound.
func hermeticRun(t *testing.T, dir string, args ...string) result {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(hostBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_DATA_HOME="+filepath.Join(home, "data"), "XDG_STATE_HOME="+filepath.Join(home, "state"),
		"WEIR_TEST_KEY=sk-hang-test-secret-0123456789")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(hangBound):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("host %s still running after %s: it hangs\nstderr: %s", strings.Join(args, " "), hangBound, errb.String())
	}
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
// ends: the default response size cap ends the run with
// RESPONSE_TOO_LARGE, not retried, and the session stays usable.
func TestRunStopsAnEndlessReply(t *testing.T) {
	srv := llmtest.NewServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	srv.Push(llmtest.Reply{Chunks: []string{llmtest.Text(strings.Repeat("x", 8<<10))}, End: llmtest.EndRepeat})

	r := hermeticRun(t, dir, runArgs(srv.URL(), "--session", file, "hi")...)
	require.NotEqual(t, 0, r.code, "stderr: %s", r.stderr)
	require.Contains(t, r.stderr, "RESPONSE_TOO_LARGE")
	require.Contains(t, r.stderr, "maxResponseMiB")
	require.Len(t, srv.Requests(), 1, "a response over the cap is not retried")
	requireResumable(t, srv, dir, file)
}
