package assemblyscript_test

import (
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

	guesttest.Template(t, dir)
}
