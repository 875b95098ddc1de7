package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPublishNoReplace(t *testing.T) {
	dir := t.TempDir()
	tmp, path := filepath.Join(dir, ".tmp"), filepath.Join(dir, "out")
	require.NoError(t, os.WriteFile(tmp, []byte("first"), 0o644))
	require.NoError(t, PublishNoReplace(tmp, path))
	require.NoError(t, SyncDir(dir))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "first", string(got))
	_, err = os.Stat(tmp)
	require.ErrorIs(t, err, fs.ErrNotExist, "the temporary name is gone")

	require.NoError(t, os.WriteFile(tmp, []byte("second"), 0o644))
	require.ErrorIs(t, PublishNoReplace(tmp, path), fs.ErrExist)
	got, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "first", string(got), "an existing file is never replaced")

	require.Error(t, SyncDir(filepath.Join(dir, "missing")))
}
