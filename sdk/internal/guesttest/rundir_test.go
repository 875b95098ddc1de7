package guesttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunDirRemovesKilledRuns: a run's folder (which holds the built
// command) that its killed process left behind is removed by the next
// run; the folder of a run whose process is alive is kept.
func TestRunDirRemovesKilledRuns(t *testing.T) {
	prev := runsDir
	runsDir = t.TempDir()
	t.Cleanup(func() { runsDir = prev })

	gone := exec.Command(os.Args[0], "-test.run=^$")
	require.NoError(t, gone.Run())
	dead := filepath.Join(runsDir, strconv.Itoa(gone.Process.Pid)+"-1")
	live := filepath.Join(runsDir, strconv.Itoa(os.Getppid())+"-2")
	for _, d := range []string{dead, live} {
		require.NoError(t, os.MkdirAll(filepath.Join(d, "home"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "weir"), []byte("a built command"), 0o755))
	}

	dir, err := runDir()
	require.NoError(t, err)
	require.Equal(t, runsDir, filepath.Dir(dir))
	require.Regexp(t, "^"+strconv.Itoa(os.Getpid())+"-", filepath.Base(dir))
	_, err = os.Stat(dead)
	require.True(t, os.IsNotExist(err), "the killed run's folder is removed: %v", err)
	require.DirExists(t, live, "a running run's folder is kept")
}
