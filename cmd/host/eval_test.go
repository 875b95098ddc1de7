package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/eval"

	"github.com/weirhost/weir/sdk/wasmbuild"
)

// host eval on the demo: the baseline reproduces every request, a set
// with a low threshold compacts more, the chart is written, the session
// file is untouched, and usage mistakes exit 2.
func TestEvalCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "demo.jsonl")
	orig, err := os.ReadFile(filepath.Join(repoRoot(t), "examples/sessions/demo.jsonl"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, orig, 0o644))
	low := filepath.Join(dir, "low.yaml")
	require.NoError(t, os.WriteFile(low, []byte("plugins:\n  - name: compaction-basic\n    config:\n      headroomTokens: 1024\n      thresholdRatio: 0.04\n      retainRatio: 0.01\n"), 0o644))
	chart := filepath.Join(dir, "chart.svg")

	r := runHost(t, dir, "", "eval", file, "--set", "baseline=", "--set", "low="+low, "--json", "--chart", chart, "--probe", "embed/")
	require.Equal(t, 0, r.code, r.stderr)
	var out evalJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	require.Equal(t, 7, out.Recorded)
	require.Len(t, out.Sets, 2)
	base, lo := out.Sets[0], out.Sets[1]
	require.True(t, base.Baseline)
	require.Equal(t, 7, base.Totals.Reproduced)
	require.False(t, lo.Baseline)
	require.Greater(t, lo.Totals.Compactions, base.Totals.Compactions)
	require.Positive(t, lo.Totals.Summaries.Offline)
	require.Equal(t, 6, base.Probes[0].LastVisible)
	require.Less(t, lo.Probes[0].LastVisible, 6)
	svg, err := os.ReadFile(chart)
	require.NoError(t, err)
	require.Contains(t, string(svg), "<svg")

	// The sets replay at once (--jobs defaults to the CPUs Go uses); one
	// at a time, they report the same.
	one := runHost(t, dir, "", "eval", file, "--set", "baseline=", "--set", "low="+low, "--json", "--probe", "embed/", "--jobs", "1")
	require.Equal(t, 0, one.code, one.stderr)
	var oneOut evalJSON
	require.NoError(t, json.Unmarshal([]byte(one.stdout), &oneOut))
	for i := range out.Sets {
		out.Sets[i].Totals.PluginMs, oneOut.Sets[i].Totals.PluginMs = 0, 0 // times
		out.Sets[i].Totals.LoadMs, oneOut.Sets[i].Totals.LoadMs = 0, 0
	}
	require.Equal(t, out.Sets, oneOut.Sets)

	// A set whose plugin does not load fails the command with its name,
	// whichever set is running beside it.
	broken := filepath.Join(dir, "broken.yaml")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "garbage.wasm"), []byte("not a module"), 0o644))
	require.NoError(t, os.WriteFile(broken, []byte("plugins:\n  - name: garbage\n    path: garbage.wasm\n    role: compaction\n"), 0o644))
	bad := runHost(t, dir, "", "eval", file, "--set", "baseline=", "--set", "broken="+broken, "--jobs", "2")
	require.Equal(t, 1, bad.code, bad.stderr)
	require.Contains(t, bad.stderr, `set "broken"`)
	require.Empty(t, bad.stdout)

	// --tokenizer changes the counting, not the baseline.
	tok := runHost(t, dir, "", "eval", file, "--tokenizer", "deepseek-v3", "--json")
	require.Equal(t, 0, tok.code, tok.stderr)
	var tokOut evalJSON
	require.NoError(t, json.Unmarshal([]byte(tok.stdout), &tokOut))
	require.Equal(t, "deepseek-v3", tokOut.Sets[0].Tokenizer)
	require.Equal(t, 7, tokOut.Sets[0].Totals.Reproduced)
	require.Equal(t, base.Totals.Compactions, tokOut.Sets[0].Totals.Compactions)
	require.Equal(t, base.Totals.Summaries, tokOut.Sets[0].Totals.Summaries)
	require.NotEqual(t, base.Totals.InputTokens, tokOut.Sets[0].Totals.InputTokens)

	text := runHost(t, dir, "", "eval", file)
	require.Equal(t, 0, text.code, text.stderr)
	for _, s := range []string{"recorded replies are taken as fixed", "reproduced byte for byte", "7/7", "prefix breaks", "est. cost $", "per request"} {
		require.Contains(t, text.stdout, s)
	}
	after, err := os.ReadFile(file)
	require.NoError(t, err)
	require.True(t, bytes.Equal(orig, after), "eval changed the session file")

	for _, bad := range [][]string{
		{"eval"},
		{"eval", file, "--set", "noequals"},
		{"eval", file, "--chart", "x.gif"},
		{"eval", file, "--prices", "hit=x"},
		{"eval", file, "--tokenizer", "nope"},
		{"eval", file, "--jobs", "0"},
		{"eval", file, "--chart", filepath.Join(dir, "missing", "chart.svg")},
	} {
		r := runHost(t, dir, "", bad...)
		require.Equal(t, 2, r.code, "%v: %s", bad, r.stderr)
	}
}

// host snapshot writes a snapshot; --check passes on it and fails, with a
// diff, once what the model sees changed.
func TestSnapshotCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "demo.jsonl")
	orig, err := os.ReadFile(filepath.Join(repoRoot(t), "examples/sessions/demo.jsonl"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, orig, 0o644))
	snap := filepath.Join(dir, "snap")
	r := runHost(t, dir, "", "snapshot", file, snap)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "8 requests, 2 prompt versions, 1 header pin written")
	r = runHost(t, dir, "", "snapshot", "--check", file, snap)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "unchanged")

	changed := bytes.ReplaceAll(orig, []byte("The current date and time (UTC)."), []byte("The current time."))
	require.NoError(t, os.WriteFile(file, changed, 0o644))
	r = runHost(t, dir, "", "snapshot", "--check", file, snap)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stdout, `-           "description": "The current date and time (UTC).",`)
	require.Contains(t, r.stdout, `+           "description": "The current time.",`)
	require.Contains(t, r.stderr, "what the model sees changed")

	r = runHost(t, dir, "", "snapshot", file)
	require.Equal(t, 2, r.code)
}

// The walk-through in examples/eval shows the output of its command: run
// it the same way (the same relative paths, in a folder of the test's own)
// and compare, all but the timings.
func TestEvalExampleIsCurrent(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	dir := t.TempDir()
	for _, f := range []string{"examples/sessions/demo.jsonl", "examples/eval/compaction-basic.yaml", "examples/eval/pruner.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	paths, err := (&wasmbuild.Cache{}).Build(context.Background(), filepath.Join(root, "examples/pruner"))
	require.NoError(t, err)
	wasm, err := os.ReadFile(paths[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "examples/eval/pruner.wasm"), wasm, 0o644))

	readme, err := os.ReadFile(filepath.Join(root, "examples/eval/README.md"))
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(readme), "## Output\n\n```\n")
	require.True(t, ok, "the README has no output block")
	want, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)

	r := runHost(t, dir, "", "eval", "examples/sessions/demo.jsonl",
		"--set", "compaction-basic=examples/eval/compaction-basic.yaml",
		"--set", "pruner=examples/eval/pruner.yaml",
		"--probe", "embed/", "--chart", "examples/eval/demo.svg")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, untimed(want), untimed(r.stdout), "examples/eval/README.md shows another output: rerun its command and update it")
	chart, err := os.ReadFile(filepath.Join(dir, "examples/eval/demo.svg"))
	require.NoError(t, err)
	shown, err := os.ReadFile(filepath.Join(root, "examples/eval/demo.svg"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(shown, chart), "examples/eval/demo.svg is not the chart its command draws: rerun the command")
}

// untimed drops the lines that hold timings.
func untimed(s string) string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if strings.Contains(line, "plugin time") || strings.HasPrefix(line, "replayed in") {
			continue
		}
		out = append(out, strings.TrimRight(line, " "))
	}
	return strings.Join(out, "\n")
}

// TestEvalPricesFromConfiguration: eval.prices in weir.yaml sets the price
// table; --prices overrides it; a negative price is a configuration error.
func TestEvalPricesFromConfiguration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(repoRoot(t), "examples/sessions/demo.jsonl")
	conf := filepath.Join(dir, "prices.yaml")
	writeFile(t, conf, "eval:\n  prices:\n    cacheHit: 1\n    cacheMiss: 2\n    output: 3\n")
	prices := func(args ...string) eval.Prices {
		r := runHost(t, dir, "", append([]string{"eval", file, "--json"}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		var out evalJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
		return out.Prices
	}
	require.Equal(t, eval.DeepSeekPrices, prices())
	require.Equal(t, eval.Prices{CacheHit: 1, CacheMiss: 2, Output: 3}, prices("--config", conf))
	require.Equal(t, eval.Prices{CacheHit: 1, CacheMiss: 2, Output: 9}, prices("--config", conf, "--prices", "hit=1,miss=2,output=9"))

	writeFile(t, conf, "eval:\n  prices:\n    output: -1\n")
	r := runHost(t, dir, "", "eval", file, "--config", conf)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "eval.prices.output")
}

// Eval writes nothing outside its output: not the session file, and not
// the meter's state cache beside the compiled plugins (its entry for the
// session is the recorded run's).
func TestEvalWritesNoMeterState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cache := warmCacheCopy(t)
	file := filepath.Join(dir, "demo.jsonl")
	orig, err := os.ReadFile(filepath.Join(repoRoot(t), "examples/sessions/demo.jsonl"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, orig, 0o644))
	r := runHostEnv(t, dir, "", []string{"WEIR_WAZERO_CACHE=" + cache}, "eval", file)
	require.Equal(t, 0, r.code, r.stderr)
	_, err = os.Stat(filepath.Join(cache, "meter-state"))
	require.True(t, os.IsNotExist(err), "eval wrote the meter state cache: %v", err)
	after, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, string(orig), string(after))
}

// TestEvalHeaderNamesTheChosenTokenizer: the report's header names the
// tokenizer as --tokenizer did, the encoding's own name beside it when
// that differs, and the recorded route's counter as it is named when no
// --tokenizer was given.
func TestEvalHeaderNamesTheChosenTokenizer(t *testing.T) {
	t.Parallel()
	cases := []struct{ chosen, counter, want string }{
		{"o200k", "o200k_base", "tokenizer o200k (o200k_base) · context window 8192 ·"},
		{"cl100k", "cl100k_base", "tokenizer cl100k (cl100k_base) · context window 8192 ·"},
		{"deepseek-v3", "deepseek-v3", "tokenizer deepseek-v3 · context window 8192 ·"},
		{"", "heuristic", "tokenizer heuristic · context window 8192 ·"},
	}
	for _, c := range cases {
		var out bytes.Buffer
		printEval(&out, "s.jsonl", c.chosen, &eval.Recording{}, []*eval.Result{{Set: "baseline", Tokenizer: c.counter, Window: 8192}}, eval.DeepSeekPrices)
		require.Contains(t, out.String(), "\n"+c.want, c.chosen)
	}
}
