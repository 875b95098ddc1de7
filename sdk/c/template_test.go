package c_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/sdk/internal/guesttest"
)

// The template, copied to a folder outside the repository, builds with
// the command of its README alone (make, naming the SDK's folder), passes
// plugins verify and renders a session's prompt.
func TestTemplate(t *testing.T) {
	guesttest.BuildC(t, "examples/prompt") // skips or fails when the toolchain is missing
	if _, err := exec.LookPath("make"); err != nil {
		guesttest.Missing(t, "make", "apt-get install make")
	}
	sdk := filepath.Join(guesttest.RepoRoot(t), "sdk", "c")
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join(sdk, "template"))))
	cmd := exec.Command("make", "WEIR_SDK="+filepath.Join(sdk, "weir"))
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make\n%s", out)
	guesttest.Template(t, dir)
}
