//go:build unix

package v2

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConvertFileRefusesWhatIsNotARegularFile: migrate's input is opened
// without blocking on a named pipe and without reading a device.
func TestConvertFileRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.jsonl")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	sub := filepath.Join(dir, "folder.jsonl")
	require.NoError(t, os.Mkdir(sub, 0o755))
	for _, c := range []struct{ path, kind string }{
		{fifo, "a named pipe"}, {sub, "a directory"}, {"/dev/zero", "a character device"},
	} {
		done := make(chan error, 1)
		go func() { done <- ConvertFile(c.path, filepath.Join(dir, "out.jsonl")) }()
		select {
		case err := <-done:
			require.EqualError(t, err, c.path+" is not a regular file ("+c.kind+"); a format-v2 session log is a regular file")
		case <-time.After(10 * time.Second):
			t.Fatalf("ConvertFile(%s) did not return", c.path)
		}
		require.NoFileExists(t, filepath.Join(dir, "out.jsonl"))
	}
}
