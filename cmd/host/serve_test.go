package cli

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/eval"
)

func TestServeRefusesWhatItShouldNot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	demo := filepath.Join(repoRoot(t), "examples", "sessions", "demo.jsonl")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve"}, "usage: weir serve"},
		{[]string{"serve", "--addr", "0.0.0.0:0", demo}, "needs --public"},
		{[]string{"serve", "--addr", "192.0.2.1:0", demo}, "not a loopback address"},
		{[]string{"serve", "--token", "x", demo}, "--token is for a --public address"},
		{[]string{"serve", "--addr", "nope", demo}, "is not HOST:PORT"},
		{[]string{"serve", "--dir", filepath.Join(dir, "missing")}, "is not a folder"},
		{[]string{"serve", "--models", "0", demo}, "at least one session's model is kept"},
	} {
		r := runHost(t, dir, "", c.args...)
		require.Equal(t, 2, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, c.args)
	}
	r := runHost(t, dir, "", "serve", filepath.Join(dir, "missing.jsonl"))
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "missing.jsonl")
}

// TestServeShowsWhatRequestPrints runs host serve on the demo session and
// compares the request bodies it serves with host request --at.
func TestServeShowsWhatRequestPrints(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	demo := filepath.Join(repoRoot(t), "examples", "sessions", "demo.jsonl")
	require.NoError(t, ownDir(repoRoot(t), dir))
	cmd := exec.Command(hostBin, "serve", "--addr", "127.0.0.1:0", demo)
	cmd.Dir = dir
	cmd.Env = hostEnv()
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, stderr.String())
	require.Contains(t, line, "Weir inspector (read-only) at http://127.0.0.1:")
	base := strings.TrimSuffix(strings.TrimSpace(line[strings.Index(line, "http://"):]), "/")

	get := func(path string) (int, string) {
		res, err := http.Get(base + path)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}
	code, page := get("/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, "session-demo-1")
	for i, seq := range []string{"6", "12", "17", "25", "31", "36", "48"} {
		want := runHost(t, dir, "", "request", demo, "--at", seq)
		require.Equal(t, 0, want.code, want.stderr)
		code, body := get("/api/s/demo.jsonl/requests/" + string(rune('1'+i)) + "/body")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, want.stdout, body, "request at seq %s", seq)
	}
	code, _ = get("/s/demo.jsonl/")
	require.Equal(t, http.StatusOK, code)
	code, page = get("/s/demo.jsonl/requests?n=1")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, "time to first token 0 ms")
	require.NotContains(t, page, `class="cost"`, "no prices configured: no cost")

	// Ctrl-C ends it cleanly.
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-exited:
		require.NoError(t, err, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("host serve did not stop on SIGINT")
	}
	_, err = os.Stat(filepath.Join(dir, "demo.jsonl"))
	require.ErrorIs(t, err, os.ErrNotExist, "serve writes nothing")
}

// TestServePrices: --prices, else eval.prices when the configuration sets
// it (a key left out keeps eval's default), else no prices: no cost shown.
func TestServePrices(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	priced := file("priced.yaml", "eval:\n  prices:\n    cacheMiss: 3\n    output: 15\n")
	plain := file("plain.yaml", "log:\n  level: warn\n")
	e := &env{stdout: io.Discard, stderr: io.Discard}
	for _, c := range []struct {
		name, flag, config string
		want               *eval.Prices
	}{
		{"configured", "", priced, &eval.Prices{CacheHit: eval.DeepSeekPrices.CacheHit, CacheMiss: 3, Output: 15}},
		{"not configured", "", plain, nil},
		{"flag over configuration", "hit=0.5,miss=1,output=2", priced, &eval.Prices{CacheHit: 0.5, CacheMiss: 1, Output: 2}},
	} {
		p, err := servePrices(e, c.flag, c.config)
		require.NoError(t, err, c.name)
		require.Equal(t, c.want, p, c.name)
	}
	_, err := servePrices(e, "hit=x", plain)
	var ue *usageError
	require.ErrorAs(t, err, &ue)
	require.Contains(t, err.Error(), "--prices")
}
