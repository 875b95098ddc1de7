package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
)

// The docs-quote tests hold every example output of README.md and docs/
// to what the commands print. An example that cannot be shown exactly
// (times, random names, long arrays) says it is an excerpt, writes "…"
// for what it leaves out, and is tested with requireExcerpt. The others:
// the README's demo tour and trailer (TestDemoSampleIsFresh), replay
// --json (TestReplayJSONDocExample), config --json
// (TestConfigJSONDocExample), examples/eval/README.md
// (TestEvalExampleIsCurrent), the demo's folders
// (TestDemoWorkspaceAsDocumented). Quotes of what the library does are
// held where it is: docs/embedding.md's span tree
// (host.TestSpanTreeAsDocumented), docs/authors.md's event examples
// (examples/pruner's TestAuthorsDocEventExamples), docs/stores.md's SQL
// schema (TestSchemaAsDocumented of host/store/sqlite and
// host/store/postgres).

// readDoc is a file of the repository, read before a test changes folder.
func readDoc(t *testing.T, rel string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	require.NoError(t, err)
	return string(raw)
}

// fenceAfter is the body of the first fenced block (```lang) after the
// first occurrence of marker in doc.
func fenceAfter(t *testing.T, doc, marker, lang string) string {
	t.Helper()
	i := strings.Index(doc, marker)
	require.GreaterOrEqual(t, i, 0, "the doc has %q", marker)
	rest := doc[i:]
	open := "```" + lang + "\n"
	j := strings.Index(rest, open)
	require.GreaterOrEqual(t, j, 0, "a ```%s block follows %q", lang, marker)
	rest = rest[j+len(open):]
	return rest[:strings.Index(rest, "```")]
}

// requireExcerpt holds got to the doc's excerpt want: every member want
// has, got has, with a value that matches; want's array elements are a
// subsequence of got's, matched in order; a string with "…" matches a
// string holding its other parts in order; anything else is equal.
func requireExcerpt(t *testing.T, want, got any, at string) {
	t.Helper()
	require.True(t, excerptOf(want, got), "%s: the doc shows %v, the command printed %v", at, want, got)
}

func excerptOf(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if gv, ok := g[k]; !ok || !excerptOf(v, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok {
			return false
		}
		i := 0
		for _, v := range w {
			for i < len(g) && !excerptOf(v, g[i]) {
				i++
			}
			if i == len(g) {
				return false
			}
			i++
		}
		return true
	case string:
		g, ok := got.(string)
		if !ok {
			return false
		}
		if !strings.Contains(w, "…") {
			return w == g
		}
		parts := strings.Split(w, "…")
		if !strings.HasPrefix(g, parts[0]) || !strings.HasSuffix(g, parts[len(parts)-1]) {
			return false
		}
		for _, p := range parts {
			k := strings.Index(g, p)
			if k < 0 {
				return false
			}
			g = g[k+len(p):]
		}
		return true
	}
	return want == got
}

func TestRequireExcerpt(t *testing.T) {
	t.Parallel()
	got := map[string]any{"a": "hello world", "n": 3.0, "l": []any{1.0, 2.0, 3.0}, "extra": true}
	cases := []struct {
		want any
		ok   bool
	}{
		{map[string]any{"a": "hello world"}, true},
		{map[string]any{"a": "hel…rld", "l": []any{1.0, 3.0}}, true},
		{map[string]any{"a": "…world"}, true},
		{map[string]any{"a": "world…"}, false},
		{map[string]any{"l": []any{3.0, 1.0}}, false},
		{map[string]any{"n": 4.0}, false},
		{map[string]any{"missing": 1.0}, false},
	}
	for i, c := range cases {
		require.Equal(t, c.ok, excerptOf(c.want, got), "case %d", i)
	}
}

// TestConfigErrorsDocExample: docs/config.md's Errors example is what
// "weir config" prints for the file and the variable it names.
func TestConfigErrorsDocExample(t *testing.T) {
	doc := readDoc(t, "docs/config.md")
	want := fenceAfter(t, doc, "\n## Errors\n", "")
	file := fenceAfter(t, doc, "for this file, with `WEIR_MODELS__DEEPSEEK__CONTEXTWINDOW=-1` set:", "yaml")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "weir.yaml"), file)
	r := configRun(t, dir, map[string]string{"WEIR_MODELS__DEEPSEEK__CONTEXTWINDOW": "-1"}, "config")
	require.Equal(t, 1, r.code)
	require.Equal(t, strings.ReplaceAll(want, "/home/me/proj", dir), r.stderr)
}

// TestRunJSONDocExample: docs/cli.md's "run --json" excerpt is part of
// what the command prints on the offline route in a fresh folder, and the
// turn's line on standard error is as the doc's local-server example
// says.
func TestRunJSONDocExample(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, "docs/cli.md")
	var want any
	require.NoError(t, json.Unmarshal([]byte(fenceAfter(t, doc, "`run --json` on the offline route", "json")), &want))
	r := runHost(t, t.TempDir(), "", "run", "--route", "offline", "--json", "hello")
	require.Equal(t, 0, r.code, r.stderr)
	var got any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	requireExcerpt(t, want, got, "run --json")
	require.ElementsMatch(t, keys(want), keys(got), "the excerpt shows every member")

	m := regexp.MustCompile(`"(turn 1: completed · session [^"]*)…"`).FindStringSubmatch(doc)
	require.NotNil(t, m, "docs/cli.md quotes run's turn line")
	require.Regexp(t, `(?m)^`+regexp.QuoteMeta(m[1])+`\d{8}-\d{6}-[0-9a-f]{6}\.jsonl$`, r.stderr, "the turn's line names the session file")
}

func keys(v any) []string {
	var out []string
	for k := range v.(map[string]any) {
		out = append(out, k)
	}
	return out
}

// TestRouteErrorDocQuote: the message docs/cli.md quotes for a route that
// is not configured is the one run prints.
func TestRouteErrorDocQuote(t *testing.T) {
	doc := readDoc(t, "docs/cli.md")
	flat := strings.Join(strings.Fields(doc), " ") // the quote may wrap
	m := regexp.MustCompile("\\(`(model: \"nope\" is not a configured route[^`]*)`\\)").FindStringSubmatch(flat)
	require.NotNil(t, m, "docs/cli.md quotes the message")
	r := configRun(t, t.TempDir(), nil, "run", "--route", "nope", "hi")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "  "+m[1]+"\n")
}

// TestDryRunJSONDocExample: docs/eval.md's "compact --dry-run --json"
// excerpt is part of what the command prints for the shipped demo.
func TestDryRunJSONDocExample(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, "docs/eval.md")
	var want any
	require.NoError(t, json.Unmarshal([]byte(fenceAfter(t, doc, "For the shipped demo session, `weir compact --dry-run --json --route offline", "json")), &want))
	demo := filepath.Join(repoRoot(t), "examples", "sessions", "demo.jsonl")
	r := runHost(t, t.TempDir(), "", "compact", "--dry-run", "--json", "--route", "offline", demo)
	require.Equal(t, 0, r.code, r.stderr)
	var got any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	requireExcerpt(t, want, got, "compact --dry-run --json")
}

// TestSnapshotLayoutDocExample: the files docs/eval.md shows for a
// snapshot folder are files of the demo's pinned snapshot.
func TestSnapshotLayoutDocExample(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, "docs/eval.md")
	block := fenceAfter(t, doc, "### The format", "")
	dir := filepath.Join(repoRoot(t), "examples", "sessions", "snapshots", "demo")
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		name, ok := strings.CutPrefix(strings.Fields(line)[0], "DIR/")
		require.True(t, ok, line)
		_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name)))
		require.NoError(t, err, "the demo's snapshot has %s", name)
		n++
	}
	require.Equal(t, 4, n)
}

// TestPluginsListJSONDocExample: docs/cli.md's "plugins list --json"
// excerpt is part of what the command prints for the configuration it
// describes.
func TestPluginsListJSONDocExample(t *testing.T) {
	doc := readDoc(t, "docs/cli.md")
	dir := t.TempDir()
	example := fenceAfter(t, doc, "`plugins list --json`: one object per configured plugin", "json")
	var want any
	require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(example, "/home/me/proj", dir)), &want))
	writeFile(t, filepath.Join(dir, "weir.yaml"), "plugins:\n  - name: token-meter\n    enabled: false\n"+
		"  - name: my-meter\n    role: token-meter\n    path: plugins/my-meter.wasm\n")
	writeFile(t, filepath.Join(dir, "plugins", "my-meter.wasm"), "\x00asm\x01\x00\x00\x00")
	r := configRun(t, dir, nil, "plugins", "list", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var got any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	requireExcerpt(t, want, got, "plugins list --json")
}
