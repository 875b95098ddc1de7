package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/surface/jsonl"
)

func TestTermSafe(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, multi, line string }{
		{"plain", "hello, 世界", "hello, 世界", "hello, 世界"},
		{"right-to-left override", "abc\u202eevil", `abc\u202eevil`, `abc\u202eevil`},
		{"isolates", "\u2066a\u2067b\u2068c\u2069", `\u2066a\u2067b\u2068c\u2069`, `\u2066a\u2067b\u2068c\u2069`},
		{"marks", "\u200e\u200f\u061c", `\u200e\u200f\u061c`, `\u200e\u200f\u061c`},
		{"embeddings", "\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`, `\u202a\u202b\u202c\u202d`},
		{"ANSI colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`, `\x1b[31mred\x1b[0m`},
		{"NUL", "a\x00b", `a\x00b`, `a\x00b`},
		{"C1 CSI as a character", "a\u009b31m", `a\u009b31m`, `a\u009b31m`},
		{"C1 CSI as a raw byte", "a\x9b31m", `a\x9b31m`, `a\x9b31m`},
		{"carriage return and bell", "over\rwrite\a", `over\x0dwrite\x07`, `over\x0dwrite\x07`},
		{"DEL", "a\x7f", `a\x7f`, `a\x7f`},
		{"newline and tab", "a\n\tb", "a\n\tb", `a\n\tb`},
		{"invalid UTF-8", "a\xff\xfeb", `a\xff\xfeb`, `a\xff\xfeb`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.multi, termSafe(c.in))
			require.Equal(t, c.line, termLine(c.in))
		})
	}
}

func TestParseArgs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		args    []string
		pos     []string
		json    bool
		out     string
		wantErr string
	}{
		{"flags first", []string{"--json", "--out", "f", "a"}, []string{"a"}, true, "f", ""},
		{"flags after", []string{"a", "--json", "b", "--out", "f"}, []string{"a", "b"}, true, "f", ""},
		{"double dash ends flags", []string{"a", "--", "--json", "-x"}, []string{"a", "--json", "-x"}, false, "", ""},
		{"double dash as a flag value", []string{"--out", "--", "a"}, []string{"a"}, false, "--", ""},
		{"double dash after a bool flag", []string{"--json", "--", "--out"}, []string{"--out"}, true, "", ""},
		{"single dash is positional", []string{"-", "--json"}, []string{"-"}, true, "", ""},
		{"unknown flag", []string{"a", "--bogus"}, nil, false, "", "unknown flag --bogus"},
		{"unknown flag, one dash", []string{"a", "-bogus=1"}, nil, false, "", "unknown flag -bogus"},
		{"missing value", []string{"a", "--out"}, nil, false, "", "flag needs an argument: -out"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			asJSON := fs.Bool("json", false, "")
			out := fs.String("out", "", "")
			pos, err := parseArgs(fs, c.args)
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				var ue *usageError
				require.ErrorAs(t, err, &ue)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.pos, pos)
			require.Equal(t, c.json, *asJSON)
			require.Equal(t, c.out, *out)
		})
	}
}

func TestHelpAndUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"no command", nil, 0, []string{"Commands:", "replay FILE", "run [PROMPT...]", "migrate IN [OUT]"}, ""},
		{"help", []string{"help"}, 0, []string{"Commands:", "request FILE --at SEQ"}, ""},
		{"help of a command", []string{"help", "replay"}, 0, []string{"Usage: weir replay [flags] FILE", "-json"}, ""},
		{"-h of a command", []string{"run", "-h"}, 0, []string{"Usage: weir run [flags] [PROMPT...]", "-api-key-env", "-session"}, ""},
		{"--help after an argument", []string{"inspect", "x.jsonl", "--help"}, 0, []string{"Usage: weir inspect [flags] FILE"}, ""},
		{"help of a subcommand", []string{"plugins", "verify", "-h"}, 0, []string{"Usage: weir plugins [flags] list | verify [--name NAME] FILE.wasm"}, ""},
		{"unknown flag named as typed", []string{"replay", "x", "--jsn"}, 2, nil, "unknown flag --jsn"},
		{"log levels in help", []string{"run", "-h"}, 0, []string{"trace, debug, info, warn, error, off"}, ""},
		{"help of an unknown command", []string{"help", "nope"}, 2, nil, `unknown command "nope"`},
		{"stray argument to demo", []string{"demo", "extra", "--out", "f.jsonl"}, 2, nil, `unexpected argument "extra"`},
		{"stray argument to plugins list", []string{"plugins", "list", "extra"}, 2, nil, `unexpected argument "extra"`},
		{"stray argument to replay", []string{"replay", "a", "b"}, 2, nil, "usage: weir replay"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runHost(t, dir, "", c.args...)
			require.Equal(t, c.code, r.code, r.stderr)
			for _, s := range c.stdout {
				require.Contains(t, r.stdout, s)
			}
			if c.stderr != "" {
				require.Contains(t, r.stderr, c.stderr)
				require.Empty(t, r.stdout)
			}
		})
	}
	_, err := os.Stat(filepath.Join(dir, "f.jsonl"))
	require.True(t, os.IsNotExist(err), "a refused demo writes nothing")

	// compact lists only the flags it honours.
	r := runHost(t, dir, "", "compact", "-h")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stdout, "-route")
	require.NotContains(t, r.stdout, "-session")
	require.NotContains(t, r.stdout, "-system")
}

func TestFlagsAfterArguments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	// The flag after the prompt is a flag, not part of the prompt.
	r := runHost(t, dir, "", "run", "what files are here?", "--model", tourModel(t), "--session", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "→ list_files")
	r = runHost(t, dir, "", "transcript", file, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var tr transcriptJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &tr))
	require.Equal(t, "what files are here?", tr.Entries[0].Text)
	// "--" makes the rest of the line the prompt.
	r = runHost(t, dir, "", "run", "--model", tourModel(t), "--session", file, "--", "--what", "time?")
	require.Equal(t, 0, r.code, r.stderr)
	r = runHost(t, dir, "", "transcript", "--json", file)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &tr))
	require.Contains(t, r.stdout, `"--what time?"`)
}

// TestDemoSampleIsFresh: the committed sample log is exactly what
// "demo --fixed-clock" writes today, from any folder.
func TestDemoSampleIsFresh(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "demo.jsonl")
	r := runHost(t, dir, "", "demo", "--fixed-clock", "--out", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "error:", "every scripted tool call succeeds")
	fresh, err := os.ReadFile(file)
	require.NoError(t, err)
	committed, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "sessions", "demo.jsonl"))
	require.NoError(t, err)
	// Compare line by line, so a stale sample names its first changed event
	// rather than printing the whole log.
	fl, cl := strings.Split(string(fresh), "\n"), strings.Split(string(committed), "\n")
	for i := range min(len(fl), len(cl)) {
		require.Equal(t, fl[i], cl[i], "examples/sessions/demo.jsonl line %d is stale: regenerate it with "+
			"go run ./cmd/weir demo --fixed-clock --out examples/sessions/demo.jsonl (after removing it)", i+1)
	}
	require.Equal(t, len(fl), len(cl), "examples/sessions/demo.jsonl has another number of lines than a fresh demo")
	requireREADMEQuotesTheDemo(t, r.stdout)
	require.NotContains(t, string(fresh), dir, "no machine path enters the log")
	again := runHost(t, dir, "", "demo", "--fixed-clock", "--out", file)
	require.Equal(t, 1, again.code)
	require.Contains(t, again.stderr, "already exists, and the demo writes a new session")
	require.NotContains(t, string(fresh), `"isError":true`)

	// The README's tour is an excerpt of what the demo prints.
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	require.NoError(t, err)
	tour := string(readme)[strings.Index(string(readme), "## A 30-second tour"):]
	tour = tour[strings.Index(tour, "```\n")+4:]
	tour = tour[:strings.Index(tour, "```")]
	require.NotEmpty(t, tour)
	require.Contains(t, r.stdout, tour, "the README tour is stale: paste the demo's output")
}

// TestDemoSessionNamesDoNotCollide: demos started together get files of
// their own.
func TestDemoSessionNamesDoNotCollide(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var wg sync.WaitGroup
	type outcome struct {
		out, errb bytes.Buffer
		err       error
	}
	runs := make([]*outcome, 2)
	for i := range runs {
		o := &outcome{}
		runs[i] = o
		cmd := exec.Command(hostBin, "demo")
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, hostEnv(), &o.out, &o.errb
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.err = cmd.Run()
		}()
	}
	wg.Wait()
	for _, o := range runs {
		require.NoError(t, o.err, o.errb.String())
		require.Regexp(t, `Done in [0-9.]+m?s: `, o.out.String())
	}
	files, err := filepath.Glob(filepath.Join(dir, ".weir", "sessions", "demo-*.jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 2)
	for _, f := range files {
		r := runHost(t, dir, "", "replay", f)
		require.Equal(t, 0, r.code, r.stderr)
	}
}

// TestCompileNotice: a cold compilation cache is announced on stderr, also
// when it holds only what another wazero version left there; a warm one is
// not.
func TestCompileNotice(t *testing.T) {
	t.Parallel()
	dir := tinyPluginDir(t) // a module that compiles at once
	cache := filepath.Join(dir, "cache")
	writeFile(t, filepath.Join(cache, "wazero-v0.0.1-amd64-linux", "0123abcd"), "stale")
	env := []string{"WEIR_WAZERO_CACHE=" + cache}
	r := runHostEnv(t, dir, "", env, "run", "--route", "offline", "hello")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "compiling plugins (first run only)")
	require.NotContains(t, r.stdout, "compiling")
	r = runHostEnv(t, dir, "", env, "run", "--route", "offline", "hello")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stderr, "compiling plugins")
}

// TestPluginLoadErrorIsTheFirstConfigured: plugins load together, and a
// failed load reports the first failing plugin in the configuration's
// order, not the first to fail: "slow" fails only after it compiled and
// described itself, "fast" fails at once on its bytes.
func TestPluginLoadErrorIsTheFirstConfigured(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.wasm")
	writeFile(t, junk, "\x00asm\x01\x00\x00\x00\xff not a module")
	meter := buildGuest(t, "./plugins/token-meter/standalone", dir)
	writeFile(t, filepath.Join(dir, "weir.yaml"), "plugins:\n"+
		"  - name: slow\n    path: "+meter+"\n    role: compaction\n"+
		"  - name: fast\n    path: "+junk+"\n    role: compaction\n")
	for range 2 {
		r := runHost(t, dir, "", "run", "--route", "offline", "hello")
		require.Equal(t, 1, r.code, r.stderr)
		require.Contains(t, r.stderr, `plugin "slow" is configured as a compaction provider`)
		require.NotContains(t, r.stderr, `"fast"`)
	}
}

// TestOfflineRouteAnywhere: the default offline route's script ships in
// the binary.
func TestOfflineRouteAnywhere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := runHost(t, dir, "", "run", "--route", "offline", "--session", filepath.Join(dir, "s.jsonl"), "what files are here?")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "→ list_files")
	require.Contains(t, r.stderr, "turn 1: completed")
	// A script file that does exist is still read from disk.
	writeFile(t, filepath.Join(dir, "examples", "offline", "tour.json"), `{"replies":[{"text":"from the file"}]}`)
	r = runHost(t, dir, "", "run", "--route", "offline", "--session", filepath.Join(dir, "t.jsonl"), "hi")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "from the file")
}

func TestMessagesNameTheCause(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	v2log := filepath.Join(dir, "old.jsonl")
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "surface", "v2", "testdata", "session.v2.jsonl"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(v2log, raw, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "outdir"), 0o755))
	cases := []struct {
		name  string
		env   []string
		args  []string
		code  int
		want  []string
		avoid string
	}{
		{"unknown route flag", nil, []string{"run", "--route", "nope", "--base-url", "http://localhost:1", "hi"}, 2,
			[]string{`model: "nope" is not a configured route`, "(from flag --route)"}, "from flag --base-url"},
		{"unknown route variable", []string{"WEIR_MODEL=nope"}, []string{"run", "--api-key-env", "K", "hi"}, 1,
			[]string{`model: "nope" is not a configured route`, "(from $WEIR_MODEL)"}, "from flag --api-key-env"},
		{"v2 session given to run", nil, []string{"run", "--route", "offline", "--session", v2log, "hi"}, 1,
			[]string{"format-v2 session log", `weir migrate ` + v2log}, ""},
		{"migrate onto a folder", nil, []string{"migrate", "--force", v2log, filepath.Join(dir, "outdir")}, 1,
			[]string{"is a folder, not a file"}, ""},
		{"migrate onto an existing file", nil, []string{"migrate", v2log, v2log + ".keep"}, 1,
			[]string{"already exists; pass --force"}, "overwrite option"},
	}
	require.NoError(t, os.WriteFile(v2log+".keep", []byte("keep"), 0o644))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runHostEnv(t, dir, "", c.env, c.args...)
			require.Equal(t, c.code, r.code, r.stderr)
			for _, w := range c.want {
				require.Contains(t, r.stderr, w)
			}
			if c.avoid != "" {
				require.NotContains(t, r.stderr, c.avoid)
			}
		})
	}
	kept, err := os.ReadFile(v2log + ".keep")
	require.NoError(t, err)
	require.Equal(t, "keep", string(kept))
}

// TestOpenAITokenizers: a route priced with o200k or cl100k is counted by
// the host's tokenizers through the token-meter plugin, not refused.
func TestOpenAITokenizers(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	dir := t.TempDir()
	for _, tok := range []string{"o200k", "cl100k"} {
		t.Run(tok, func(t *testing.T) {
			conf := filepath.Join(dir, tok+".yaml")
			writeFile(t, conf, "model: local\nmodels:\n  local:\n    provider: openai\n    model: gpt-4o\n    baseURL: "+srv.URL()+
				"\n    tokenizer: "+tok+"\n    contextWindow: 128000\n")
			srv.Push(llmtest.TextReply(20, 3, "Hi."))
			r := runHost(t, dir, "", "run", "--config", conf, "--session", filepath.Join(dir, tok+".jsonl"), "hi")
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stderr, "("+tok+"_base, ")
			require.NotContains(t, r.stderr, "no tokenizer named")
		})
	}
}

// TestLocalServerNeedsNoKey: a loopback base URL works without a key; the
// provider picks the tokenizer.
func TestLocalServerNeedsNoKey(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	dir := t.TempDir()
	cases := []struct{ provider, tokenizer string }{{"ollama", "heuristic"}, {"openai", "heuristic"}, {"deepseek", "deepseek-v3"}}
	for _, c := range cases {
		t.Run(c.provider, func(t *testing.T) {
			srv.Push(llmtest.TextReply(20, 3, "Hi ", "there."))
			r := runHost(t, dir, "", "run", "--base-url", srv.URL(), "--provider", c.provider, "--model", "llama3.2",
				"--session", filepath.Join(dir, c.provider+".jsonl"), "hi")
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stdout, "assistant: Hi there.")
			require.Contains(t, r.stderr, "("+c.tokenizer+", ")
			reqs := srv.Requests()
			require.Empty(t, reqs[len(reqs)-1].Header.Get("Authorization"), "no key is sent")
		})
	}
	// A remote base URL still needs its key.
	r := runHost(t, dir, "", "run", "--base-url", "https://api.example.com/v1", "--model", "m", "hi")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "no API key: $DEEPSEEK_API_KEY is empty")
}

// TestModelTextIsEscapedOnTheTerminal: control and bidi characters a model
// sends are shown escaped; the log keeps them as they were.
func TestModelTextIsEscapedOnTheTerminal(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	srv.Push(llmtest.TextReply(20, 3, "red \x1b[31mtext\x1b[0m ", "and \u202eesrever\u202c."))
	r := runHost(t, dir, "", "run", "--base-url", srv.URL(), "--provider", "local", "--model", "m", "--session", file, "hi")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `red \x1b[31mtext\x1b[0m and \u202eesrever\u202c.`)
	require.NotContains(t, r.stdout, "\x1b")
	require.NotContains(t, r.stdout, "\u202e")
	for _, args := range [][]string{{"replay", file}, {"transcript", file}, {"inspect", file}} {
		r := runHost(t, dir, "", args...)
		require.Equal(t, 0, r.code, r.stderr)
		require.NotContains(t, r.stdout, "\x1b", args[0])
		require.NotContains(t, r.stdout, "\u202e", args[0])
		require.Contains(t, r.stdout, `\u202e`, args[0])
	}
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(raw), `\u001b[31m`, "the log keeps the text")
}

// TestSecondInterruptQuitsAtOnce: two Ctrl-Cs in a row end the run with
// status 130, and what was written replays.
func TestSecondInterruptQuitsAtOnce(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	stall := llmtest.Stream(llmtest.Role(), llmtest.Text("Partial "))
	stall.End = llmtest.EndStall
	srv.Push(stall)
	cmd := liveCmd(t, dir, srv.URL(), "--session", file, "wait for me")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(readFile(t, file), `"type":"user/message"`) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the turn never started; stderr: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := waitExit(t, cmd, 30*time.Second)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stderr: %s", stderr.String())
	require.Equal(t, 130, ee.ExitCode(), "stderr: %s", stderr.String())
	r := runHost(t, dir, "", "replay", file)
	require.Equal(t, 0, r.code, r.stderr)
}

func readFile(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return ""
	}
	require.NoError(t, err)
	return string(b)
}

// TestExplainNamesTheCause: errors a person can act on lead with the cause
// and the fix; others pass through unchanged.
func TestExplainNamesTheCause(t *testing.T) {
	t.Parallel()
	full := fmt.Errorf("session log s.jsonl: append seq 4..6: write: %w", &os.PathError{Op: "write", Path: "s.jsonl", Err: syscall.ENOSPC})
	race := fmt.Errorf("session log s.jsonl: append seq 0..3: publish: %w: another session was created at this path; refusing to overwrite it", fs.ErrExist)
	v2 := fmt.Errorf("open: %w", &jsonl.VersionError{Path: "old.jsonl", Version: 2})
	other := errors.New("something else")
	cases := []struct {
		name string
		err  error
		lead string
		keep bool
	}{
		{"full disk", full, "the disk is full, so the session log cannot be written; free some space", true},
		{"creation race", race, "another process created the session file first", true},
		{"v2 session", v2, `old.jsonl is a format-v2 session log; convert it first with "weir migrate old.jsonl"`, false},
		{"anything else", other, "something else", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := explain(c.err)
			require.True(t, strings.HasPrefix(got.Error(), c.lead), got.Error())
			if c.keep {
				require.ErrorIs(t, got, c.err, "the original error stays in the chain")
			}
		})
	}
}

// TestTermWriter: log lines are escaped; a JSON line stays JSON and keeps
// its meaning.
func TestTermWriter(t *testing.T) {
	t.Parallel()
	var text bytes.Buffer
	_, err := termWriter{w: &text}.Write([]byte("plugin says \x1b[2J\u202eboo\n"))
	require.NoError(t, err)
	require.Equal(t, `plugin says \x1b[2J\u202eboo`+"\n", text.String())

	msg := "del\x7f c1\u009b bidi\u202e esc\x1b tab\t"
	line, err := json.Marshal(map[string]string{"@message": msg})
	require.NoError(t, err)
	var out bytes.Buffer
	_, err = termWriter{w: &out, asJSON: true}.Write(append(line, '\n'))
	require.NoError(t, err)
	require.NotContains(t, out.String(), "\u202e")
	require.NotContains(t, out.String(), "\x7f")
	var back map[string]string
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(out.Bytes()), &back), out.String())
	require.Equal(t, msg, back["@message"])
}

// requireREADMEQuotesTheDemo: the README's excerpt of "demo --fixed-clock"
// is a contiguous part of its output, and the commands the README says the
// trailer prints are the ones it prints, in order.
func requireREADMEQuotesTheDemo(t *testing.T, out string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	require.NoError(t, err)
	readme := string(raw)
	tour := readme[strings.Index(readme, "## A 30-second tour"):]
	excerpt := tour[strings.Index(tour, "```\n")+4:]
	excerpt = excerpt[:strings.Index(excerpt, "```")]
	require.Contains(t, out, excerpt, "the README's demo excerpt")

	ends := tour[strings.Index(tour, "It ends by printing"):]
	block := ends[strings.Index(ends, "```sh\n")+6:]
	block = block[:strings.Index(block, "```")]
	var documented, printed []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		documented = append(documented, strings.Fields(line)[3])
	}
	_, trailer, ok := strings.Cut(out, "Inspect it:\n")
	require.True(t, ok, "the demo prints its inspection commands")
	for _, line := range strings.Split(strings.TrimSpace(trailer), "\n") {
		f := strings.Fields(line)
		require.Equal(t, "weir", f[0], "the trailer names the program as it was invoked: %q", line)
		printed = append(printed, f[1])
	}
	require.Equal(t, documented, printed)
}
