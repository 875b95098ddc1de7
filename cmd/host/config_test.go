package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/eval"
)

// configRun runs "host ARGS" in-process in dir, with a user config folder
// of its own and the given WEIR_ variables.
func configRun(t *testing.T, dir string, envs map[string]string, args ...string) result {
	t.Helper()
	t.Chdir(dir)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "user-config"))
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "WEIR_") {
			t.Setenv(name, "")
		}
	}
	for k, v := range envs {
		t.Setenv(k, v)
	}
	var out, errb bytes.Buffer
	code := run(&env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}, args)
	return result{out.String(), errb.String(), code}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// row finds the table row of key and returns its value and source cells.
func row(t *testing.T, table, key string) (string, string) {
	t.Helper()
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == key {
			return f[1], strings.Join(f[2:], " ")
		}
	}
	require.Failf(t, "no row", "key %s in:\n%s", key, table)
	return "", ""
}

func TestConfigTable(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "weir.yaml"), "models:\n  deepseek:\n    maxTokens: 4096\nplugins:\n  - name: token-meter\n    enabled: false\n")
	r := configRun(t, dir, map[string]string{"WEIR_LOG_LEVEL": "debug", "WEIR_LONG": "1"}, "config")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
	file := filepath.Join(dir, "weir.yaml")
	require.True(t, strings.HasPrefix(r.stdout, "configuration file: "+file+"\n"), r.stdout)
	require.Contains(t, r.stdout, "KEY")

	cases := []struct{ key, value, source string }{
		{"model", "deepseek", "default"},
		{"models.deepseek.maxTokens", "4096", file},
		{"models.deepseek.contextWindow", "128000", "default"},
		{"log.level", "debug", "$WEIR_LOG_LEVEL"},
		{"log.format", "text", "default"},
		{"plugins[2].enabled", "false", file + " (plugins[0].enabled)"},
		{"plugins[1].config", "{}", "default"},
		{"sandbox.callTimeout.prompt", "2s", "default"},
		{"sessions.dir", ".weir/sessions", "default"},
	}
	for _, c := range cases {
		v, s := row(t, r.stdout, c.key)
		require.Equal(t, c.value, v, c.key)
		require.Equal(t, c.source, s, c.key)
	}
}

func TestConfigJSON(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "conf", "custom.yaml"), `
model: offline
plugins:
  - name: compaction-basic
    config:
      thresholdRatio: 0.7
`)
	r := configRun(t, dir, map[string]string{"WEIR_MODELS__OFFLINE__MAXTOKENS": "512"}, "config", "--json", "--config", "conf/custom.yaml")
	require.Equal(t, 0, r.code, r.stderr)

	var doc struct {
		File     *string  `json:"file"`
		Searched []string `json:"searched"`
		Entries  []struct {
			Key    string         `json:"key"`
			Value  jsontext.Value `json:"value"`
			Source struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
				Key  string `json:"key"`
			} `json:"source"`
		} `json:"entries"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc, json.RejectUnknownMembers(true)))
	file := filepath.Join(dir, "conf", "custom.yaml")
	require.NotNil(t, doc.File)
	require.Equal(t, file, *doc.File)
	require.Equal(t, []string{}, doc.Searched)

	by := map[string]int{}
	for i, e := range doc.Entries {
		require.NotEmpty(t, e.Key)
		require.Contains(t, []string{"default", "file", "env", "flag"}, e.Source.Kind, e.Key)
		by[e.Key] = i
	}
	get := func(key string) (string, string, string) {
		i, ok := by[key]
		require.True(t, ok, key)
		e := doc.Entries[i]
		return string(e.Value), e.Source.Kind, e.Source.Name
	}
	v, kind, name := get("model")
	require.Equal(t, `"offline"`, v)
	require.Equal(t, "file", kind)
	require.Equal(t, file, name)
	v, kind, name = get("models.offline.maxTokens")
	require.Equal(t, "512", v)
	require.Equal(t, "env", kind)
	require.Equal(t, "WEIR_MODELS__OFFLINE__MAXTOKENS", name)
	v, kind, _ = get("plugins[1].config")
	require.JSONEq(t, `{"thresholdRatio":0.7}`, v)
	require.Equal(t, "file", kind)
	v, kind, _ = get("plugins[0].enabled")
	require.Equal(t, "true", v)
	require.Equal(t, "default", kind)
	v, _, _ = get("sandbox.stepBudget")
	require.Equal(t, `"2m30s"`, v)

	// With no file, "file" is null and "searched" lists the candidates.
	empty := t.TempDir()
	r = configRun(t, empty, nil, "config", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	doc.File, doc.Searched = nil, nil
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.Nil(t, doc.File)
	require.Equal(t, []string{filepath.Join(empty, "weir.yaml"), filepath.Join(empty, "user-config", "weir", "weir.yaml")}, doc.Searched)
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "weir.yaml"), "model: gpt\nplugins:\n  - name: token-meter\n    rol: x\n")
	r := configRun(t, dir, map[string]string{"WEIR_MODELS__DEEPSEEK__CONTEXTWINDOW": "-1"}, "config")
	require.Equal(t, 1, r.code)
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "weir config: the configuration has 3 problems:\n")
	require.Contains(t, r.stderr, `  plugins[0].rol: unknown key (did you mean "role"?)`)
	require.Contains(t, r.stderr, `  model: "gpt" is not a configured route`)
	require.Contains(t, r.stderr, "  models.deepseek.contextWindow: must be a positive number of tokens, got -1; give the model's context window (e.g. 128000), or 0 for a known model's (from $WEIR_MODELS__DEEPSEEK__CONTEXTWINDOW)")

	r = configRun(t, dir, nil, "config", "--json", "--config", "absent.yaml")
	require.Equal(t, 1, r.code)
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, filepath.Join(dir, "absent.yaml")+": the configuration file does not exist")

	r = configRun(t, dir, nil, "config", "extra")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `unexpected argument "extra"`)

	r = configRun(t, dir, nil, "help")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stdout, "  config ")
}

// docBlock returns the first fenced block of kind (yaml, json) after the
// heading in docs/config.md.
func docBlock(t *testing.T, heading, kind string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "config.md"))
	require.NoError(t, err)
	doc := string(raw)
	i := strings.Index(doc, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, heading)
	doc = doc[i:]
	start := strings.Index(doc, "```"+kind+"\n")
	require.GreaterOrEqual(t, start, 0)
	doc = doc[start+len(kind)+4:]
	return doc[:strings.Index(doc, "```")]
}

// TestConfigJSONDocExample: the "host config --json" example of
// docs/config.md is what the command prints for the documented file.
func TestConfigJSONDocExample(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "weir.yaml"), docBlock(t, "## A file", "yaml"))
	writeFile(t, filepath.Join(dir, "prompts", "base.md"), "You are a careful assistant.\n")
	writeFile(t, filepath.Join(dir, "plugins", "my-meter.wasm"), "\x00asm\x01\x00\x00\x00")
	example := docBlock(t, "## `weir config --json`", "json")
	example = strings.ReplaceAll(example, "/home/me/proj", dir)
	example = strings.ReplaceAll(example, "/home/me/.config", filepath.Join(testHome, ".config"))
	r := runHostEnv(t, dir, "", []string{"WEIR_LOG_LEVEL=debug"}, "config", "--json")
	require.Equal(t, 0, r.code, r.stderr)

	var want, got configJSON
	require.NoError(t, json.Unmarshal([]byte(example), &want))
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Equal(t, want.File, got.File)
	require.Equal(t, want.Searched, got.Searched)
	at := map[string]int{}
	for i, e := range got.Entries {
		at[e.Key] = i
	}
	last := -1
	for _, w := range want.Entries {
		i, ok := at[w.Key]
		require.True(t, ok, w.Key)
		g := got.Entries[i]
		require.Equal(t, w.Source, g.Source, w.Key)
		wv, _ := json.Marshal(w.Value)
		gv, _ := json.Marshal(g.Value)
		require.JSONEq(t, string(wv), string(gv), w.Key)
		require.Greater(t, i, last, "%s is listed in the output's order", w.Key)
		last = i
	}
}

// TestBadFlagValuesAreUsageMistakes: a flag value the configuration
// rejects exits 2 and points at the command's help, as an unknown flag or
// a bad --tokenizer does; the same value from a file or a variable is not
// a command-line mistake and exits 1.
func TestBadFlagValuesAreUsageMistakes(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"log level", []string{"run", "--route", "offline", "--log-level", "bogus", "hi"}, `"bogus" is not a log level`},
		{"route", []string{"run", "--route", "nope", "hi"}, `"nope" is not a configured route`},
		{"max tokens", []string{"run", "--route", "offline", "--max-tokens", "99999999", "hi"}, "must be below contextWindow"},
		{"context window", []string{"run", "--route", "offline", "--context-window", "-1", "hi"}, "must be a positive number of tokens"},
		{"compact's route", []string{"compact", "--route", "nope", "s.jsonl"}, `"nope" is not a configured route`},
		{"eval's log level", []string{"eval", "--log-level", "bogus", "s.jsonl"}, `"bogus" is not a log level`},
		{"eval's tokenizer", []string{"eval", "--tokenizer", "bogus", "s.jsonl"}, `unknown tokenizer "bogus"`},
		{"unknown flag", []string{"run", "--bogus", "hi"}, "unknown flag --bogus"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := configRun(t, t.TempDir(), nil, c.args...)
			require.Equal(t, 2, r.code, r.stderr)
			require.Contains(t, r.stderr, c.want)
			require.Contains(t, r.stderr, `run "weir `+c.args[0]+` -h" for its usage`)
			require.Empty(t, r.stdout)
		})
	}
	r := configRun(t, t.TempDir(), map[string]string{"WEIR_LOG_LEVEL": "bogus"}, "run", "--route", "offline", "hi")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, `"bogus" is not a log level`)
	require.NotContains(t, r.stderr, "for its usage")
}

// docKeyRows are the keys of docs/config.md's "## Keys" table, one list per
// row: a row naming more than one key (`eval.prices.cacheHit`, `.cacheMiss`)
// lists each, a leading dot standing for the first key's parent.
func docKeyRows(t *testing.T) [][]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "config.md"))
	require.NoError(t, err)
	doc := string(raw)
	i := strings.Index(doc, "\n## Keys\n")
	require.GreaterOrEqual(t, i, 0, "docs/config.md has a Keys section")
	var rows [][]string
	for _, line := range strings.Split(doc[i:], "\n")[5:] { // after the heading and the table's head
		if !strings.HasPrefix(line, "| `") {
			break
		}
		cell := strings.Split(line, "|")[1]
		var keys []string
		for j, part := range strings.Split(cell, "`") {
			if j%2 == 0 {
				continue
			}
			if strings.HasPrefix(part, ".") && len(keys) > 0 {
				part = keys[0][:strings.LastIndex(keys[0], ".")] + part
			}
			keys = append(keys, part)
		}
		rows = append(rows, keys)
	}
	require.NotEmpty(t, rows)
	return rows
}

// TestConfigKeysInTheTablesOrder: "config --json" lists every key in the
// order of docs/config.md's table (the first route and the first plugin
// stand for all), every key it lists has a row, and the eval.prices
// defaults it prints are the table's and host/eval's.
func TestConfigKeysInTheTablesOrder(t *testing.T) {
	rows := docKeyRows(t)
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "config.md"))
	require.NoError(t, err)
	rowOf := func(key string) int {
		best, bestLen := -1, 0
		for i, keys := range rows {
			for _, k := range keys {
				if (key == k || strings.HasPrefix(key, k+".") || strings.HasPrefix(key, k+"[")) && len(k) > bestLen {
					best, bestLen = i, len(k)
				}
			}
		}
		return best
	}
	r := configRun(t, t.TempDir(), nil, "config", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var doc configJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	routes := regexp.MustCompile(`^models\.[^.]+\.`)
	index := regexp.MustCompile(`\[\d+\]`)
	seen := map[string]bool{}
	last, lastKey := -1, ""
	prices := map[string]any{}
	for _, e := range doc.Entries {
		if strings.HasPrefix(e.Key, "eval.prices.") {
			prices[e.Key] = e.Value
		}
		key := index.ReplaceAllString(routes.ReplaceAllString(e.Key, "models.NAME."), "[i]")
		if seen[key] {
			continue
		}
		seen[key] = true
		row := rowOf(key)
		require.GreaterOrEqual(t, row, 0, "docs/config.md's table has no row for %s", e.Key)
		require.GreaterOrEqual(t, row, last, "docs/config.md's table lists %s before %s; config --json the other way", key, lastKey)
		last, lastKey = row, key
	}
	want := config.Default().Eval.Prices
	require.Equal(t, eval.Prices(want), eval.DeepSeekPrices, "the configuration's default prices are host/eval's")
	require.Equal(t, map[string]any{"eval.prices.cacheHit": want.CacheHit, "eval.prices.cacheMiss": want.CacheMiss,
		"eval.prices.output": want.Output}, prices)
	require.Contains(t, string(raw), fmt.Sprintf("DeepSeek's list prices: `%g`, `%g`, `%g`", want.CacheHit, want.CacheMiss, want.Output))
}
