package guesttest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// host is the state of Main: the host command and the folders every
// command shares.
var host struct {
	bin, home, wazeroCache string
}

// Main builds the host command into a temporary folder, runs the tests and
// removes the folder. A test package that runs sessions calls it from its
// TestMain.
func Main(m *testing.M) {
	os.Exit(run(m))
}

// runsDir holds one folder per test binary run, named after its process.
// A run that was killed (go test's timeout, a Ctrl-C) cannot remove its
// own, which holds the built command; the next run removes every folder
// whose process is gone, so a killed run leaves nothing behind for long.
var runsDir = filepath.Join(os.TempDir(), "weir-guesttest")

// runDir makes this run's folder under runsDir after removing those of
// runs whose process no longer exists.
func runDir() (string, error) {
	if err := os.MkdirAll(runsDir, 0o755); err != nil {
		return "", err
	}
	entries, _ := os.ReadDir(runsDir)
	for _, e := range entries {
		pid, _, ok := strings.Cut(e.Name(), "-")
		if n, err := strconv.Atoi(pid); ok && err == nil && !processAlive(n) {
			os.RemoveAll(filepath.Join(runsDir, e.Name()))
		}
	}
	return os.MkdirTemp(runsDir, strconv.Itoa(os.Getpid())+"-")
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

func run(m *testing.M) int {
	dir, err := runDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		os.RemoveAll(dir)
		os.Remove(runsDir) // only when no other run is using it
	}()
	host.bin = filepath.Join(dir, "weir")
	host.home = filepath.Join(dir, "home")
	host.wazeroCache = os.Getenv("WEIR_WAZERO_CACHE")
	if host.wazeroCache == "" {
		host.wazeroCache = filepath.Join(dir, "wazero-cache")
		os.Setenv("WEIR_WAZERO_CACHE", host.wazeroCache) // in-process loads too
	}
	if err := os.MkdirAll(host.home, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Stripped (-s -w): a third quicker to link, and the test binary's
	// packages come from the build cache as they are.
	cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", host.bin, "./cmd/weir")
	cmd.Dir = moduleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "guesttest: build the weir command: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// moduleRoot is RepoRoot without a testing.TB.
func moduleRoot() string {
	wd, _ := os.Getwd()
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return wd
		}
	}
}

// Result is a finished host command.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Host runs the host command in dir (a test's own folder) with an
// environment of nothing of the user's.
func Host(t *testing.T, dir string, args ...string) Result {
	t.Helper()
	if host.bin == "" {
		t.Fatal("guesttest: the package's TestMain must call guesttest.Main")
	}
	cmd := exec.Command(host.bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"TMPDIR=" + os.TempDir(),
		"HOME=" + host.home,
		"XDG_CONFIG_HOME=" + filepath.Join(host.home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(host.home, ".cache"),
		"WEIR_WAZERO_CACHE=" + host.wazeroCache,
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return Result{out.String(), errb.String(), code}
}

// Event is one line of a session log.
type Event struct {
	Type      string          `json:"type"`
	Seq       int64           `json:"seq"`
	Data      json.RawMessage `json:"data"`
	SurfaceOp json.RawMessage `json:"surfaceOp"`
	Sources   []int64         `json:"sourceEventSeqs"`
}

// ReadLog reads the events of a session file (the header line is skipped).
func ReadLog(t *testing.T, file string) []Event {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	var evs []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), "log line %s", sc.Text())
		if e.Type != "session" {
			evs = append(evs, e)
		}
	}
	require.NoError(t, sc.Err())
	return evs
}

type source struct {
	Kind         string `json:"kind"`
	Plugin       string `json:"plugin"`
	CompactionID string `json:"compactionId"`
}

type block struct {
	Type       string `json:"type"`
	Text       string `json:"text"`
	ID         string `json:"id"`
	ToolCallID string `json:"toolCallId"`
}

type message struct {
	Role    string  `json:"role"`
	Source  source  `json:"source"`
	Content []block `json:"content"`
}

// Plugins names the example modules a session loads.
type Plugins struct {
	Prompt, Compaction []byte
}

// Footer is the line the prompt examples are configured to add.
const Footer = "Answer in plain words."

// Session runs an offline session of three turns and a manual compaction
// with the example plugins loaded through weir.yaml alone, under configured names that differ from
// the names the modules describe, and checks what the host recorded: the
// plugin's prompt at node 0, admitted compaction brackets whose checkpoint
// names the configured plugin, shrinks the surface and keeps tool calls
// with their results, no plugin failures, and a log that replays.
func Session(t *testing.T, p Plugins) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, b, 0o644))
		return path
	}
	promptPath := write("prompt.wasm", p.Prompt)
	compactionPath := write("compaction.wasm", p.Compaction)
	conf := write("weir.yaml", []byte(`plugins:
  - name: system-prompt
    enabled: false
  - name: house-prompt
    path: `+promptPath+`
    role: system-prompt
    config: {"footer": "`+Footer+`"}
  - name: compaction-basic
    enabled: false
  - name: house-compactor
    path: `+compactionPath+`
    role: compaction
    config: {"maxNodes": 4}
`))
	// Give list_files a long answer, worth compacting.
	for i := range 12 {
		write(fmt.Sprintf("a-file-with-a-rather-long-descriptive-name-%02d.txt", i), nil)
	}
	r := Host(t, dir, "plugins", "list", "--config", conf)
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "house-prompt")
	require.Contains(t, r.Stdout, "house-compactor")

	file := filepath.Join(dir, "s.jsonl")
	model := "offline:" + filepath.Join(RepoRoot(t), "examples", "offline", "tour.json")
	for _, q := range []string{"what files are here?", "thanks", "and again"} {
		r := Host(t, dir, "run", "--config", conf, "--model", model, "--session", file, q)
		require.Equal(t, 0, r.Code, r.Stderr)
	}
	// A manual compaction between turns.
	r = Host(t, dir, "compact", "--config", conf, "--model", model, file)
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "surface: 5 nodes → 3 nodes")

	evs := ReadLog(t, file)
	bySeq := map[int64]Event{}
	for _, e := range evs {
		bySeq[e.Seq] = e
		require.NotEqual(t, "plugin/failure", e.Type, "no plugin failed: %s", e.Data)
	}

	// The prompt: the plugin's rendering, attributed to its configured name.
	var sys struct {
		Message message `json:"message"`
	}
	var sysSeq int64 = -1
	for _, e := range evs {
		if e.Type == "system/message" {
			require.NoError(t, json.Unmarshal(e.Data, &sys))
			sysSeq = e.Seq
			break
		}
	}
	require.GreaterOrEqual(t, sysSeq, int64(0), "a system prompt was recorded")
	require.Equal(t, source{Kind: "plugin", Plugin: "house-prompt"}, sys.Message.Source)
	require.Len(t, sys.Message.Content, 1)
	prompt := sys.Message.Content[0].Text
	// The configured footer, then the date the host passes in its host data.
	require.Regexp(t, regexp.MustCompile(`\n\n`+regexp.QuoteMeta(Footer)+`\n\nToday's date: \d{4}-\d{2}-\d{2}\.$`), prompt)
	require.NotEqual(t, Footer, prompt, "the host's sections come first")

	// The compactions: whole brackets, in order, in one batch each.
	brackets := 0
	for i, e := range evs {
		if e.Type != "compaction/start" {
			continue
		}
		brackets++
		require.Less(t, i+3, len(evs))
		sum, cp, end := evs[i+1], evs[i+2], evs[i+3]
		require.Equal(t, []string{"compaction/summary", "user/message", "compaction/end"}, []string{sum.Type, cp.Type, end.Type})
		var start, summary, fin struct {
			ID       string  `json:"compactionId"`
			Shadowed []int64 `json:"shadowedSeqs"`
		}
		require.NoError(t, json.Unmarshal(e.Data, &start))
		require.NoError(t, json.Unmarshal(sum.Data, &summary))
		require.NoError(t, json.Unmarshal(end.Data, &fin))
		require.NotEmpty(t, start.ID)
		require.Equal(t, start.ID, summary.ID)
		require.Equal(t, start.ID, fin.ID)

		var m message
		require.NoError(t, json.Unmarshal(cp.Data, &m))
		require.Equal(t, "user", m.Role)
		require.Equal(t, source{Kind: "plugin", Plugin: "house-compactor", CompactionID: start.ID}, m.Source)
		var op struct {
			Op    string `json:"op"`
			Start int64  `json:"startSeq"`
			End   int64  `json:"endSeq"`
		}
		require.NoError(t, json.Unmarshal(cp.SurfaceOp, &op))
		require.Equal(t, "replace", op.Op)
		require.Equal(t, append([]int64{e.Seq, sum.Seq}, summary.Shadowed...), cp.Sources,
			"the checkpoint cites the bracket and every node it shadows")
		require.Equal(t, summary.Shadowed[0], op.Start)
		require.Equal(t, summary.Shadowed[len(summary.Shadowed)-1], op.End)
		require.NotContains(t, summary.Shadowed, sysSeq, "node 0 is never shadowed")

		// It shrinks the surface: the checkpoint is smaller than what it
		// replaces.
		var shadowedBytes int
		for _, s := range summary.Shadowed {
			shadowedBytes += len(bySeq[s].Data)
		}
		require.Less(t, len(cp.Data), shadowedBytes)
	}
	require.GreaterOrEqual(t, brackets, 2, "the plugin compacted before a step and on request")
	var last, lastTurnEnd int
	for i, e := range evs {
		switch e.Type {
		case "compaction/start":
			last = i
		case "turn/end":
			lastTurnEnd = i
		}
	}
	require.Greater(t, last, lastTurnEnd, "the manual compaction came after the last turn")
	require.JSONEq(t, `0`, string(mustField(t, evs[last].Data, "turn")), "between turns")

	// The log replays, with the plugin's prompt at node 0 and every tool
	// result after the call it answers.
	out := Host(t, dir, "replay", "--json", file)
	require.Equal(t, 0, out.Code, out.Stderr)
	var rep struct {
		Nodes    []int64   `json:"nodes"`
		Messages []message `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(out.Stdout), &rep))
	require.Equal(t, sysSeq, rep.Nodes[0], "node 0 is the plugin's system prompt")
	require.Equal(t, "system", rep.Messages[0].Role)
	require.Equal(t, prompt, rep.Messages[0].Content[0].Text)
	require.Contains(t, rep.Messages[1].Content[0].Text, "Summary of the earlier conversation:", "the checkpoint follows the prompt")
	calls := map[string]bool{}
	for _, m := range rep.Messages {
		for _, b := range m.Content {
			switch b.Type {
			case "tool-call":
				calls[b.ID] = true
			case "tool-result":
				require.True(t, calls[b.ToolCallID], "tool result %s follows its call", b.ToolCallID)
			}
		}
	}

	out = Host(t, dir, "inspect", "--json", file)
	require.Equal(t, 0, out.Code, out.Stderr)
	var in struct {
		Compactions []struct {
			Plugin string `json:"plugin"`
		} `json:"compactions"`
	}
	require.NoError(t, json.Unmarshal([]byte(out.Stdout), &in))
	require.Len(t, in.Compactions, brackets)
	for _, c := range in.Compactions {
		require.Equal(t, "house-compactor", c.Plugin)
	}
}

// mustField returns a member of a JSON object.
func mustField(t *testing.T, data []byte, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &m))
	v, ok := m[key]
	require.True(t, ok, "%s has no %q", data, key)
	return v
}

// Template checks a template project built in dir (a folder outside the
// repository): its plugin.wasm passes plugins verify, and a session
// loading it as the system-prompt provider "my-prompt" with the footer
// "Be brief." renders a prompt ending with the footer.
func Template(t *testing.T, dir string) {
	r := Host(t, dir, "plugins", "verify", "plugin.wasm")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "ok: the module passes load-time validation")

	conf := filepath.Join(dir, "weir.yaml")
	require.NoError(t, os.WriteFile(conf, []byte(`plugins:
  - name: system-prompt
    enabled: false
  - name: my-prompt
    path: ./plugin.wasm
    role: system-prompt
    config: {"footer": "Be brief."}
`), 0o644))
	file := filepath.Join(dir, "s.jsonl")
	model := "offline:" + filepath.Join(RepoRoot(t), "examples", "offline", "tour.json")
	r = Host(t, dir, "run", "--config", conf, "--model", model, "--session", file, "hello")
	require.Equal(t, 0, r.Code, r.Stderr)

	var prompt string
	for _, e := range ReadLog(t, file) {
		require.NotEqual(t, "plugin/failure", e.Type, "no plugin failed: %s", e.Data)
		if e.Type == "system/message" && prompt == "" {
			var d struct {
				Message struct {
					Source  map[string]string `json:"source"`
					Content []struct{ Text string }
				} `json:"message"`
			}
			require.NoError(t, json.Unmarshal(e.Data, &d))
			require.Equal(t, "my-prompt", d.Message.Source["plugin"])
			require.Len(t, d.Message.Content, 1)
			prompt = d.Message.Content[0].Text
		}
	}
	require.True(t, strings.HasSuffix(prompt, "\n\nBe brief."), "the template's prompt ends with the configured footer: %q", prompt)
}
