package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
)

// hostBin is the command built once for every test.
var hostBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "weir-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hostBin = filepath.Join(dir, "host")
	out, err := exec.Command("go", "build", "-o", hostBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build host: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// runHost runs the built command in dir with stdin.
func runHost(t *testing.T, dir, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(hostBin, args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "DEEPSEEK_API_KEY=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{out.String(), errb.String(), code}
}

// repoRoot is the module root, where the examples live.
func repoRoot(t *testing.T) string {
	wd, err := os.Getwd()
	require.NoError(t, err)
	return filepath.Join(wd, "..", "..")
}

func TestDemoCompletesAndItsSessionReplays(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "demo.jsonl")
	r := runHost(t, repoRoot(t), "", "demo", "--out", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "prompt changed: node 0 replaced")
	require.Contains(t, r.stdout, "→ list_files")
	require.Contains(t, r.stdout, "Session file: "+file)
	require.Contains(t, r.stdout, "compaction receipt: tokens")

	r = runHost(t, dir, "", "replay", "--json", file)
	require.Equal(t, 0, r.code, r.stderr)
	var out replayJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	require.NotEmpty(t, out.Nodes)
	require.Equal(t, uint64(2), out.ReplaceGeneration, "one prompt change, one compaction")
	require.Equal(t, "system", out.Messages[0].Role)
	require.Contains(t, out.Messages[0].Content[0].Text, "pirate")
	require.Contains(t, out.Messages[1].Content[0].Text, "<compacted-summary>", "the checkpoint follows node 0")
}

func TestReplayJSONShape(t *testing.T) {
	r := runHost(t, repoRoot(t), "", "replay", "--json", "examples/sessions/demo.jsonl")
	require.Equal(t, 0, r.code, r.stderr)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &m))
	for _, k := range []string{"session", "version", "events", "nodes", "replaceGeneration", "contentGeneration", "messages"} {
		require.Contains(t, m, k)
	}
	msgs := m["messages"].([]any)
	for _, x := range msgs {
		msg := x.(map[string]any)
		require.Contains(t, msg, "role")
		require.Contains(t, msg, "content")
	}
}

func TestRequestPrintsTheSentBody(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	r := runHost(t, dir, "", "run", "--model", "offline:"+filepath.Join(repoRoot(t), "examples/offline/tour.json"), "--session", file, "what files are here?")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "→ list_files")
	// Find the settlement seqs from replay and ask for each request.
	r = runHost(t, dir, "", "replay", file)
	require.Equal(t, 0, r.code, r.stderr)
	req := runHost(t, dir, "", "request", file, "--at", "6")
	require.Equal(t, 0, req.code, req.stderr)
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(req.stdout), &body))
	require.Equal(t, "tour.json", body["model"])
	require.Equal(t, true, body["stream"])
	first := body["messages"].([]any)[0].(map[string]any)
	require.Equal(t, "system", first["role"])
}

func TestRunResumesASession(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	script := "offline:" + filepath.Join(repoRoot(t), "examples/offline/tour.json")
	require.Equal(t, 0, runHost(t, dir, "", "run", "--model", script, "--session", file, "hello").code)
	r := runHost(t, dir, "what time is it?", "run", "--model", script, "--session", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "turn 2: completed")
	tr := runHost(t, dir, "", "transcript", file)
	require.Equal(t, 0, tr.code, tr.stderr)
	require.Contains(t, tr.stdout, "user: hello")
	require.Contains(t, tr.stdout, "user: what time is it?")
	require.NotContains(t, tr.stdout, "system")
}

func TestErrorsAndExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(`{"type":"session","version":3,"id":"x","createdAt":1,"isSeeded":false}`+"\n"+
		`{"type":"user/message","seq":0,"time":1,"data":{"id":"u","role":"user","source":{"kind":"user"},"content":[]}}`+"\n"), 0o644))
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown command", []string{"frobnicate"}, 2, "unknown command"},
		{"replay without file", []string{"replay"}, 2, "usage: host replay"},
		{"missing file", []string{"replay", filepath.Join(dir, "nope.jsonl")}, 1, "no such file"},
		{"invalid event", []string{"replay", bad}, 1, "seq 0"},
		{"request without --at", []string{"request", bad}, 2, "usage: host request"},
		{"run without key", []string{"run", "--session", filepath.Join(dir, "s.jsonl"), "hi"}, 1, "offline:examples/offline/tour.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runHost(t, dir, "", c.args...)
			require.Equal(t, c.code, r.code, r.stderr)
			require.Contains(t, r.stderr, c.want)
			require.Empty(t, r.stdout)
		})
	}
}

func TestTokensCommand(t *testing.T) {
	text := "Weir counts exactly: 你好，世界 — 12345 {\"json\": true}\n"
	r := runHost(t, t.TempDir(), text, "tokens", "--ids")
	require.Equal(t, 0, r.code, r.stderr)
	var ids []int
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &ids))
	require.NotEmpty(t, ids)
	count := runHost(t, t.TempDir(), text, "tokens")
	require.Equal(t, fmt.Sprintf("%d\n", len(ids)), count.stdout)
	h := runHost(t, t.TempDir(), text, "tokens", "--tokenizer", "heuristic")
	require.Equal(t, 0, h.code)
	require.NotEqual(t, count.stdout, h.stdout, "the heuristic differs from the real tokenizer on mixed text")
	bad := runHost(t, t.TempDir(), text, "tokens", "--tokenizer", "nope")
	require.Equal(t, 2, bad.code)
	require.Contains(t, bad.stderr, "unknown tokenizer")
}

func TestCompactCommand(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	script := "offline:" + filepath.Join(repoRoot(t), "examples/offline/tour.json")
	require.Equal(t, 0, runHost(t, dir, "", "run", "--model", script, "--session", file, "hello").code)
	small := runHost(t, dir, "", "compact", "--model", script, file)
	require.Equal(t, 1, small.code)
	require.Contains(t, small.stderr, "summary is not smaller")
	for _, q := range []string{"what files are here?", "and the time?", "hello again", "one more time?", "thanks"} {
		require.Equal(t, 0, runHost(t, dir, "", "run", "--model", script, "--session", file, q).code)
	}
	r := runHost(t, dir, "", "compact", "--model", script, file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "compaction receipt")
	out := runHost(t, dir, "", "inspect", "--json", file)
	var in inspectJSON
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &in))
	require.Len(t, in.Compactions, 2)
	require.NotEmpty(t, in.Compactions[0].Error)
	require.Empty(t, in.Compactions[1].Error)
	require.Equal(t, "system", in.Surface[0].Role, "node 0 is still the system prompt")
}

// buildGuest builds a guest module of this repository into dir.
func buildGuest(t *testing.T, pkg, dir string) string {
	out := filepath.Join(dir, filepath.Base(pkg)+".wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", out, pkg)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	return out
}

func TestPluginsCommand(t *testing.T) {
	dir := t.TempDir()
	r := runHost(t, dir, "", "plugins", "list", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var list []pluginJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	require.Len(t, list, 3)

	good := buildGuest(t, "./host/plugin/testdata/benign", dir)
	r = runHost(t, dir, "", "plugins", "verify", "--json", good)
	require.Equal(t, 0, r.code, r.stderr)
	var v verifyJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v))
	require.Equal(t, "benign", v.Name)
	require.ElementsMatch(t, []string{"system-prompt", "compaction", "token-meter"}, v.Roles)
	require.NotEmpty(t, v.Imports)
	require.Contains(t, strings.Join(v.Exports, "\n"), "memory")

	bad := buildGuest(t, "./host/plugin/testdata/hostile/import-socket", dir)
	r = runHost(t, dir, "", "plugins", "verify", bad)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "sock_accept")
	require.Contains(t, r.stderr, "not allowed")
}

func TestThirdPartyCompactionBySwapInConfig(t *testing.T) {
	dir := t.TempDir()
	pruner := buildGuest(t, "./examples/pruner", dir)
	conf := filepath.Join(dir, "weir.yaml")
	require.NoError(t, os.WriteFile(conf, []byte(`plugins:
  - name: compaction-basic
    enabled: false
  - name: pruner
    path: `+pruner+`
    role: compaction
    config:
      minBytes: 10
      keepRecent: 0
      triggerRatio: 0.001
      maxPerCall: 8
`), 0o644))
	r := runHost(t, dir, "", "plugins", "list", "--config", conf)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "pruner")
	require.Regexp(t, `compaction-basic\s+compaction\s+disabled`, r.stdout)

	// Give list_files a result worth pruning.
	for i := range 12 {
		name := fmt.Sprintf("a-file-with-a-rather-long-descriptive-name-%02d.txt", i)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
	}
	file := filepath.Join(dir, "s.jsonl")
	script := "offline:" + filepath.Join(repoRoot(t), "examples/offline/tour.json")
	for _, q := range []string{"what files are here?", "thanks", "and again"} {
		r := runHost(t, dir, "", "run", "--config", conf, "--model", script, "--session", file, q)
		require.Equal(t, 0, r.code, r.stderr)
	}
	out := runHost(t, dir, "", "replay", "--json", file)
	require.Equal(t, 0, out.code, out.stderr)
	var rep replayJSON
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &rep))
	require.Equal(t, "system", rep.Messages[0].Role, "node 0 is still the system prompt")
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"type":"compaction/prune"`, "the pruner rewrote the old tool result")
	require.GreaterOrEqual(t, rep.ReplaceGeneration, uint64(1))
}

func TestJSONLogsStayOnStderr(t *testing.T) {
	dir := t.TempDir()
	script := "offline:" + filepath.Join(repoRoot(t), "examples/offline/tour.json")
	r := runHost(t, dir, "", "run", "--log-level", "debug", "--log-format", "json", "--model", script,
		"--session", filepath.Join(dir, "s.jsonl"), "hello")
	require.Equal(t, 0, r.code, r.stderr)
	logs := 0
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(line, "{") {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &m), line)
			require.Contains(t, m, "@level")
			logs++
		}
	}
	require.Positive(t, logs, "debug logs were written")
	require.NotContains(t, r.stdout, `"@level"`, "logs never mix into standard output")
}
