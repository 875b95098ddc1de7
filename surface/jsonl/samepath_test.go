package jsonl

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A file deleted or replaced between its open and its lock is not taken:
// the lock would guard a file no one reads.
func TestSamePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	require.NoError(t, os.WriteFile(path, []byte("x\n"), 0o644))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, samePath(f, path))

	require.NoError(t, os.Remove(path))
	require.ErrorIs(t, samePath(f, path), fs.ErrNotExist, "deleted")

	require.NoError(t, os.WriteFile(path, []byte("y\n"), 0o644))
	err = samePath(f, path)
	require.ErrorIs(t, err, fs.ErrNotExist, "replaced by another file")
	require.Contains(t, err.Error(), "deleted or replaced while it was being opened")
}
