package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/wasmbuild"
	"github.com/weirhost/weir/surface"
)

// hostBin is the command every test runs: this test binary (TestMain).
var hostBin string

// testHome is the home folder of every command the tests run: its config
// and cache folders are empty unless a test writes there.
var testHome string

// wazeroCache is the plugin compilation cache the commands share: the one
// CI names in WEIR_WAZERO_CACHE, else one of the test run's own, removed
// with it.
var wazeroCache string

// testRunsDir holds one folder per test run of this package, named after
// the process that made it. A run that was killed (go test's timeout, a
// Ctrl-C) cannot remove its own; the next run removes every folder whose
// process is gone, so a killed run leaves nothing behind for long.
var testRunsDir = filepath.Join(os.TempDir(), "weir-cli-tests")

// runDir makes this run's folder under testRunsDir after removing those of
// runs whose process no longer exists.
func runDir() (string, error) {
	if err := os.MkdirAll(testRunsDir, 0o755); err != nil {
		return "", err
	}
	entries, _ := os.ReadDir(testRunsDir)
	for _, e := range entries {
		pid, _, ok := strings.Cut(e.Name(), "-")
		if n, err := strconv.Atoi(pid); ok && err == nil && !processAlive(n) {
			os.RemoveAll(filepath.Join(testRunsDir, e.Name()))
		}
	}
	return os.MkdirTemp(testRunsDir, strconv.Itoa(os.Getpid())+"-")
}

// processAlive reports whether a process with that id exists.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// asCLI is the variable that makes the test binary run the command line
// instead of the tests: the commands the tests run are this binary, linked
// once by go test, not a second build of cmd/weir.
const asCLI = "WEIR_CLI_TEST_AS_COMMAND"

func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		os.Exit(Main())
	}
	dir, err := runDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hostBin = filepath.Join(dir, "weir")
	testHome = filepath.Join(dir, "home")
	wazeroCache = os.Getenv("WEIR_WAZERO_CACHE")
	if wazeroCache == "" {
		wazeroCache = filepath.Join(dir, "wazero-cache")
	}
	// In-process commands compile into the same cache, never the user's.
	os.Setenv("WEIR_WAZERO_CACHE", wazeroCache)
	code := 1
	if err := linkSelf(hostBin); err != nil {
		fmt.Fprintf(os.Stderr, "the command the tests run: %v\n", err)
	} else if err := os.MkdirAll(testHome, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else if err := warmCache(dir); err != nil {
		fmt.Fprintf(os.Stderr, "compiling the first-party plugins into the shared cache: %v\n", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Remove(testRunsDir) // only when no other run is using it
	os.Exit(code)
}

// warmCache runs one offline turn in a scratch folder under dir, so that
// the shared compilation cache holds the first-party module before the
// tests start: parallel tests then read it instead of each compiling it.
func warmCache(dir string) error {
	scratch := filepath.Join(dir, "warm")
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	cmd := exec.Command(hostBin, "run", "--route", "offline", "hello")
	cmd.Dir = scratch
	cmd.Env = hostEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// warmCacheCopy is a compilation cache of the test's own holding the
// compiled modules of the shared one (hard links, with their seals and the
// key that vouches for them) and nothing else: no meter states, so a test
// sees exactly what its command writes there, without compiling again.
func warmCacheCopy(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "cache")
	require.NoError(t, filepath.WalkDir(wazeroCache, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(wazeroCache, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel == "meter-state" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		return linkOrCopy(path, filepath.Join(dst, rel))
	}))
	require.NoError(t, linkOrCopy(plugin.CacheKeyPath(wazeroCache), plugin.CacheKeyPath(dst)))
	return dst
}

// linkOrCopy hard-links src at dst, copying it (with its mode) where the
// folders are on different file systems.
func linkOrCopy(src, dst string) error {
	if os.Link(src, dst) == nil {
		return nil
	}
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, fi.Mode().Perm())
}

// linkSelf puts this test binary at path, hard-linked (copied where the
// folders are on different file systems), so that the commands run under
// the name "weir" and from outside go's build folder, as an installed
// binary does: os.Args[0] names the program in messages, and a binary in
// go's build folder is taken for one "go run" built (demo.go).
func linkSelf(path string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return linkOrCopy(self, path)
}

// hostEnv is the whole environment of a command the tests run: nothing of
// the user's (no HOME, XDG_*, WEIR_* or API keys of theirs), so a weir.yaml
// in their config folder, their variables or their caches never change a
// result. extra adds NAME=value entries.
func hostEnv(extra ...string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"TMPDIR=" + os.TempDir(),
		"HOME=" + testHome,
		"XDG_CONFIG_HOME=" + filepath.Join(testHome, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(testHome, ".cache"),
		"WEIR_WAZERO_CACHE=" + wazeroCache,
		asCLI + "=1",
	}
	return append(env, extra...)
}

type result struct {
	stdout, stderr string
	code           int
}

// runHost runs the built command in dir, a test's own folder, with stdin
// and the hermetic environment.
func runHost(t *testing.T, dir, stdin string, args ...string) result {
	t.Helper()
	return runHostEnv(t, dir, stdin, nil, args...)
}

// runHostEnv is runHost with extra environment entries.
func runHostEnv(t *testing.T, dir, stdin string, extra []string, args ...string) result {
	t.Helper()
	require.NoError(t, ownDir(repoRoot(t), dir))
	cmd := exec.Command(hostBin, args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = hostEnv(extra...)
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

// ownDir refuses a working folder inside the repository (root), where a
// weir.yaml would change what a command does.
func ownDir(root, dir string) error {
	if dir == "" {
		return fmt.Errorf("a command needs a folder of the test's own")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(root, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("commands never run inside the repository (%s): a weir.yaml there would change them", dir)
	}
	return nil
}

// repoRoot is the module root, where the examples live.
func repoRoot(t *testing.T) string {
	wd, err := os.Getwd()
	require.NoError(t, err)
	return filepath.Join(wd, "..", "..")
}

// tourModel is the --model value of the offline tour script.
func tourModel(t *testing.T) string {
	return "offline:" + filepath.Join(repoRoot(t), "examples/offline/tour.json")
}

// TestHarnessIsHermetic: a weir.yaml in the user's config folders and
// WEIR_ variables of the user's change nothing the tests see, and the
// harness refuses to run a command in the repository.
func TestHarnessIsHermetic(t *testing.T) {
	user := t.TempDir()
	hostile := "model: nope\nlog:\n  level: trace\n"
	writeFile(t, filepath.Join(user, "xdg", "weir", "weir.yaml"), hostile)
	writeFile(t, filepath.Join(user, ".config", "weir", "weir.yaml"), hostile)
	writeFile(t, filepath.Join(user, "Library", "Application Support", "weir", "weir.yaml"), hostile)
	t.Setenv("HOME", user)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(user, "xdg"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(user, "cache"))
	t.Setenv("WEIR_MODEL", "nope")
	t.Setenv("WEIR_LOG__LEVEL", "trace")

	dir := t.TempDir()
	r := runHost(t, dir, "", "config", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var doc configJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.Nil(t, doc.File, "no configuration file is found")
	require.Equal(t, []string{filepath.Join(dir, "weir.yaml"), filepath.Join(testHome, ".config", "weir", "weir.yaml")}, doc.Searched)
	for _, e := range doc.Entries {
		require.Equal(t, "default", string(e.Source.Kind), e.Key)
	}
	r = runHost(t, dir, "", "run", "--route", "offline", "hello")
	require.Equal(t, 0, r.code, r.stderr)
	_, err := os.Stat(filepath.Join(user, "cache"))
	require.ErrorIs(t, err, fs.ErrNotExist, "the user's cache folder is left alone")

	// A weir.yaml in the repository root cannot reach a command: the
	// harness never runs one there.
	require.Error(t, ownDir(repoRoot(t), repoRoot(t)))
	require.Error(t, ownDir(repoRoot(t), filepath.Join(repoRoot(t), "cmd", "host")))
	require.NoError(t, ownDir(repoRoot(t), dir))
}

func TestDemoCompletesAndItsSessionReplays(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "demo.jsonl")
	r := runHost(t, dir, "", "demo", "--out", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "prompt changed (node 0 replaced: seq 2 → 22, 156 chars)")
	require.Contains(t, r.stdout, "→ list_files")
	require.Contains(t, r.stdout, "← embed/ offline/ prompt-plugin/ pruner/ sessions/", "the scripted tool call succeeds")
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
	r := runHost(t, t.TempDir(), "", "replay", filepath.Join(repoRoot(t), "examples/sessions/demo.jsonl"), "--json")
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
	r := runHost(t, dir, "", "run", "--model", tourModel(t), "--session", file, "what files are here?")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "→ list_files")
	// Find the settlement seqs from replay and ask for each request.
	r = runHost(t, dir, "", "replay", file)
	require.Equal(t, 0, r.code, r.stderr)
	req := runHost(t, dir, "", "request", file, "--at", "6")
	require.Equal(t, 0, req.code, req.stderr)
	require.True(t, strings.HasSuffix(req.stdout, "}\n"), "the output ends with a newline")
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
	script := tourModel(t)
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
		{"replay without file", []string{"replay"}, 2, "usage: weir replay"},
		{"missing file", []string{"replay", filepath.Join(dir, "nope.jsonl")}, 1, "no such file"},
		{"invalid event", []string{"replay", bad}, 1, "seq 0"},
		{"request without --at", []string{"request", bad}, 2, "usage: weir request"},
		{"run without key", []string{"run", "--session", filepath.Join(dir, "s.jsonl"), "hi"}, 1, `weir run --route offline "hello"`},
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
	script := tourModel(t)
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
	// The checkpoint is found by its bracket and names the configured plugin.
	require.Equal(t, "compaction-basic", in.Compactions[1].Plugin)
	require.Equal(t, in.Surface[1].Seq, in.Compactions[1].Checkpoint)
	text := runHost(t, dir, "", "inspect", file)
	require.Contains(t, text.stdout, fmt.Sprintf("checkpoint seq %d by \"compaction-basic\"", in.Compactions[1].Checkpoint))
	requireLogMatchesSchemas(t, file)
}

// buildGuest builds a guest module of this repository into dir.
//
// The module comes from sdk/wasmbuild's content-keyed cache (the folder
// $WEIR_WASMBUILD_CACHE names, which CI keeps), so a run compiles a guest
// only when its sources or the Go version changed: a cold wasip1 build of
// the standard library is minutes on a loaded machine.
func buildGuest(t *testing.T, pkg, dir string) string {
	paths, err := (&wasmbuild.Cache{}).Build(context.Background(), filepath.Join(repoRoot(t), filepath.FromSlash(pkg)))
	require.NoError(t, err)
	b, err := os.ReadFile(paths[0])
	require.NoError(t, err)
	out := filepath.Join(dir, filepath.Base(pkg)+".wasm")
	require.NoError(t, os.WriteFile(out, b, 0o644))
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
	require.Equal(t, pluginLimits(config.Default()), v.Limits.All, "verify prints the limits table of docs/authors.md")
	require.Equal(t, int64(48), v.Limits.SoftMemoryMiB)
	writeFile(t, filepath.Join(dir, "big.yaml"), "sandbox:\n  memoryLimitMiB: 128\n")
	r = runHost(t, dir, "", "plugins", "verify", "--config", filepath.Join(dir, "big.yaml"), good)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "  linear memory (hard cap): 128 MiB (sandbox.memoryLimitMiB)\n")
	require.Contains(t, r.stdout, "  soft memory limit (3/4 of the hard cap): 96 MiB (sandbox.memoryLimitMiB)\n", "the soft limit scales")
	require.Contains(t, r.stdout, "  deadline: compaction.* (time inside summarize not counted): 120s (sandbox.callTimeout.compaction)\n")

	// The first-party module holds three plugins: it loads under one of
	// their names, and under its file's name it says which they are.
	firstParty := filepath.Join(repoRoot(t), "plugins", "firstparty", "firstparty.wasm")
	r = runHost(t, dir, "", "plugins", "verify", "--json", "--name", "token-meter", firstParty)
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v))
	require.Equal(t, "token-meter", v.Name)
	require.Equal(t, []string{"token-meter"}, v.Roles)
	r = runHost(t, dir, "", "plugins", "verify", firstParty)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, `this module holds the plugins "system-prompt", "compaction-basic", "token-meter"; init names "firstparty"`)
	r = runHost(t, dir, "", "plugins", "list", "--name", "x")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "--name is an option of plugins verify")

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
	script := tourModel(t)
	var shown strings.Builder
	for _, q := range []string{"what files are here?", "thanks", "and again"} {
		r := runHost(t, dir, "", "run", "--config", conf, "--model", script, "--session", file, q)
		require.Equal(t, 0, r.code, r.stderr)
		shown.WriteString(r.stdout)
	}
	// The pruner's work shows, naming it, though it opens no bracket.
	require.Regexp(t, `· prune: 1 tool results \(\d+ bytes\) by "pruner"`, shown.String())
	require.Regexp(t, `· tool result of call \S+ rewritten \(seq \d+ → \d+, \d+ → \d+ chars\) by "pruner"`, shown.String())
	require.NotContains(t, shown.String(), "compaction-basic")
	text := runHost(t, dir, "", "inspect", file)
	require.Equal(t, 0, text.code, text.stderr)
	require.Contains(t, text.stdout, "Tool-result rewrites (1)")
	var in inspectJSON
	require.NoError(t, json.Unmarshal([]byte(runHost(t, dir, "", "inspect", "--json", file).stdout), &in))
	require.Len(t, in.Rewrites, 1)
	require.Less(t, in.Rewrites[0].CharsAfter, in.Rewrites[0].CharsBefore)
	out := runHost(t, dir, "", "replay", "--json", file)
	require.Equal(t, 0, out.code, out.stderr)
	var rep replayJSON
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &rep))
	require.Equal(t, "system", rep.Messages[0].Role, "node 0 is still the system prompt")
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"type":"compaction/prune"`, "the pruner rewrote the old tool result")
	require.Regexp(t, `"type":"plugin/state","seq":\d+,"time":\d+,"data":\{"plugin":"pruner","module":"[0-9a-f]{64}","state":"`, string(raw),
		"the pruner's state is in the log, for the next host run")
	requireLogMatchesSchemas(t, file)
	require.GreaterOrEqual(t, rep.ReplaceGeneration, uint64(1))
}

func TestJSONLogsStayOnStderr(t *testing.T) {
	dir := t.TempDir()
	script := tourModel(t)
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

// TestCompactionBudgetByConfiguration: a compaction plugin that calls
// summarize in a loop, loaded and bounded by weir.yaml alone, makes exactly
// the configured number of model calls in one "host compact"; the command
// fails naming the key, the failure and every call are in the log, and the
// session goes on.
func TestCompactionBudgetByConfiguration(t *testing.T) {
	srv := llmtest.NewServer(t)
	dir := t.TempDir()
	// The host/provider tests' guest module, summarize-loop among them.
	loop := buildGuest(t, "./host/provider/testdata/guests", dir)
	conf := filepath.Join(dir, "looper.yaml") // for compact only: run uses the defaults
	writeFile(t, conf, `sandbox:
  compaction:
    maxSummarizeCalls: 3
plugins:
  - name: compaction-basic
    enabled: false
  - name: summarize-loop
    path: `+loop+`
    role: compaction
    config: {"calls": 1000, "ignoreErrors": true}
`)
	file := filepath.Join(dir, "s.jsonl")
	srv.Push(llmtest.TextReply(20, 3, "Hello."))
	r := runHost(t, dir, "", "run", "--base-url", srv.URL(), "--provider", "test", "--model", "m", "--session", file, "hi")
	require.Equal(t, 0, r.code, r.stderr)
	before := len(srv.Requests())
	for range 3 { // a fourth call would find no reply and still be counted
		srv.Push(llmtest.TextReply(20, 3, "A summary."))
	}
	r = runHost(t, dir, "", "compact", "--config", conf, "--base-url", srv.URL(), "--provider", "test", "--model", "m", file)
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "sandbox.compaction.maxSummarizeCalls")
	require.Equal(t, 3, len(srv.Requests())-before, "model calls the compaction made")

	out := runHost(t, dir, "", "inspect", "--json", file)
	require.Equal(t, 0, out.code, out.stderr)
	var in inspectJSON
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &in))
	require.Len(t, in.Failures, 1)
	require.Equal(t, "summarize-loop", in.Failures[0].Plugin)
	require.Len(t, in.Calls, 1)
	require.Equal(t, "summarize-loop", in.Calls[0].Plugin)
	require.Equal(t, 3, in.Calls[0].Calls)
	require.Equal(t, "system", in.Surface[0].Role, "node 0 is still the system prompt")
	types := requireLogMatchesSchemas(t, file)
	require.Positive(t, types["plugin/failure"])
	require.Positive(t, types["plugin/call"])

	srv.Push(llmtest.TextReply(20, 3, "Still here."))
	r = runHost(t, dir, "", "run", "--base-url", srv.URL(), "--provider", "test", "--model", "m", "--session", file, "again")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Still here.")
}

// TestPromptPluginByConfigurationAlone: examples/prompt-plugin, swapped in
// by weir.yaml, gets its instructions from prompt.data (a file) and the
// date from the host, and renders both into the session's system prompt.
func TestPromptPluginByConfigurationAlone(t *testing.T) {
	dir := t.TempDir()
	wasm := buildGuest(t, "./examples/prompt-plugin", dir)
	writeFile(t, filepath.Join(dir, "AGENTS.md"), "## Style\nUse tabs.\n\n## Release process\nTag it.\n")
	conf := filepath.Join(dir, "weir.yaml")
	writeFile(t, conf, `prompt:
  data:
    - key: instructions
      file: AGENTS.md
plugins:
  - name: system-prompt
    enabled: false
  - name: prompt-plugin
    path: `+wasm+`
    role: system-prompt
    config:
      title: Project instructions
      skipHeadings: [Release process]
      maxBytes: 16384
`)
	file := filepath.Join(dir, "s.jsonl")
	before := time.Now()
	r := runHost(t, dir, "", "run", "--model", tourModel(t), "--session", file, "hello")
	require.Equal(t, 0, r.code, r.stderr)
	after := time.Now()

	out := runHost(t, dir, "", "replay", "--json", file)
	require.Equal(t, 0, out.code, out.stderr)
	var rep replayJSON
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &rep))
	require.Equal(t, "system", rep.Messages[0].Role)
	prompt := surface.TextOf(rep.Messages[0].Content)
	require.Contains(t, prompt, "# Project instructions\n\n## Style\nUse tabs.")
	require.NotContains(t, prompt, "Tag it.", "skipHeadings applies")
	dated := false
	for _, d := range []time.Time{before, after} {
		dated = dated || strings.HasSuffix(prompt, "Today is "+d.Format("Monday, 2 January 2006")+".")
	}
	require.True(t, dated, "the prompt ends with the host's date: %q", prompt)
	requireLogMatchesSchemas(t, file)

	// A user key cannot shadow one the host provides.
	writeFile(t, conf, "prompt:\n  data:\n    - key: date\n      text: 2020-01-01\n")
	r = runHost(t, dir, "", "config", "--config", conf)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, `prompt.data[0].key: "date" is provided by the host`)
}

// TestInspectShowsACheckpointWithoutBracket: a log whose checkpoint no
// compaction bracket encloses (one written before brackets were required,
// or by another host) still shows the compaction, its plugin and the
// nodes it shadowed.
func TestInspectShowsACheckpointWithoutBracket(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for _, line := range strings.Split(readFile(t, filepath.Join(repoRoot(t), "examples", "sessions", "demo.jsonl")), "\n") {
		for _, typ := range []string{"start", "summary", "end"} {
			if strings.HasPrefix(line, `{"type":"compaction/`+typ+`",`) {
				// Keep the seq; drop the bracket.
				line = `{"type":"test/gap",` + line[len(`{"type":"compaction/`+typ+`",`):]
				line = line[:strings.Index(line, `"data":`)] + `"data":{},"ignorable":true}`
			}
		}
		b.WriteString(line + "\n")
	}
	file := filepath.Join(dir, "s.jsonl")
	writeFile(t, file, strings.TrimSuffix(b.String(), "\n"))
	r := runHost(t, dir, "", "inspect", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Compactions (1)\n  (no bracket)  checkpoint seq 41 by \"compaction-basic\"  11 nodes shadowed (seqs 3, 6, 11, 12, 14, 17, 23, 25, 30, 31, 33)\n")
}

// TestThirdPartyBracketShowsLikeTheBuiltIn: a compaction plugin under
// another name that brackets its work shows as compaction-basic's does,
// under its own name, in host compact and in inspect.
func TestThirdPartyBracketShowsLikeTheBuiltIn(t *testing.T) {
	dir := t.TempDir()
	wasm := buildGuest(t, "./plugins/compaction-basic/standalone", dir)
	conf := filepath.Join(dir, "weir.yaml")
	writeFile(t, conf, `plugins:
  - name: compaction-basic
    enabled: false
  - name: summarizer
    path: `+wasm+`
    role: compaction
`)
	file := filepath.Join(dir, "s.jsonl")
	script := tourModel(t)
	for _, q := range []string{"hello", "what files are here?", "and the time?", "hello again", "one more time?", "thanks"} {
		r := runHost(t, dir, "", "run", "--config", conf, "--model", script, "--session", file, q)
		require.Equal(t, 0, r.code, r.stderr)
	}
	r := runHost(t, dir, "", "compact", "--config", conf, "--model", script, file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `· compaction: \d+ nodes shadowed \(\d+ tokens\), summarized by offline/\S+\n· compaction receipt: tokens \d+ → \d+, checkpoint by "summarizer"\n`, r.stdout)
	require.NotContains(t, r.stdout, "compaction-basic")
	text := runHost(t, dir, "", "inspect", file)
	require.Regexp(t, `checkpoint seq \d+ by "summarizer"`, text.stdout)
	require.NotContains(t, text.stdout, "compaction-basic")
	requireLogMatchesSchemas(t, file)
}

// TestHostDataReachesThePromptPlugin: the built-in system-prompt plugin,
// configured to show host data, renders every key the host documents.
func TestHostDataReachesThePromptPlugin(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my-project")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	conf := filepath.Join(dir, "weir.yaml")
	writeFile(t, conf, `prompt:
  data:
    - key: team
      text: platform
plugins:
  - name: system-prompt
    config: {"data": ["date", "workdir", "route", "model", "tools", "team"]}
`)
	file := filepath.Join(dir, "s.jsonl")
	r := runHost(t, dir, "", "run", "--config", conf, "--route", "offline", "--session", file, "hello")
	require.Equal(t, 0, r.code, r.stderr)
	var rep replayJSON
	require.NoError(t, json.Unmarshal([]byte(runHost(t, dir, "", "replay", "--json", file).stdout), &rep))
	prompt := surface.TextOf(rep.Messages[0].Content)
	require.Regexp(t, `\n# Environment\ndate: \d{4}-\d{2}-\d{2}\nworkdir: my-project\nroute: offline\nmodel: offline/\S+\ntools: list_files: `, prompt)
	require.Contains(t, prompt, "\nteam: platform")
	require.NotContains(t, prompt, filepath.Dir(dir), "the working directory's name, never its path")
}
