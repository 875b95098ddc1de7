package assemblyscript_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/sdk/internal/guesttest"
)

// The template, copied to a folder outside the repository, builds with
// the commands of its README alone (the SDK installed from its folder as
// an npm package), passes plugins verify and renders a session's prompt.
func TestTemplate(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		guesttest.Missing(t, "npm", "install Node.js 20")
	}
	sdk := filepath.Join(guesttest.RepoRoot(t), "sdk", "assemblyscript")
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join(sdk, "template"))))
	_, err := os.Stat(filepath.Join(dir, "node_modules"))
	require.ErrorIs(t, err, fs.ErrNotExist, "the template holds no installed packages")

	npm := func(args ...string) {
		cmd := exec.Command("npm", append(args, "--no-audit", "--no-fund", "--prefer-offline")...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "npm %s\n%s", strings.Join(args, " "), out)
	}
	npm("install", "--save-dev", sdk)
	npm("run", "build")

	r := guesttest.Host(t, dir, "plugins", "verify", "plugin.wasm")
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
	model := "offline:" + filepath.Join(guesttest.RepoRoot(t), "examples", "offline", "tour.json")
	r = guesttest.Host(t, dir, "run", "--config", conf, "--model", model, "--session", file, "hello")
	require.Equal(t, 0, r.Code, r.Stderr)

	var prompt string
	for _, e := range guesttest.ReadLog(t, file) {
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
