//go:build unix

package jsonl

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReadersRefuseWhatIsNotARegularFile: Load (every reading command goes
// through it) and Open refuse a directory, a named pipe and a device by
// their type, without blocking on the pipe or reading the device; a link to
// a regular session file still loads.
func TestReadersRefuseWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	good := writeSession(t, dir, small(t).Events(), 3)
	fifo := filepath.Join(dir, "pipe.jsonl")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	sub := filepath.Join(dir, "folder.jsonl")
	require.NoError(t, os.Mkdir(sub, 0o755))
	link := filepath.Join(dir, "link.jsonl")
	require.NoError(t, os.Symlink(filepath.Base(good), link))

	cases := []struct {
		name, path, err string
	}{
		{"named pipe", fifo, fifo + " is not a regular file (a named pipe)"},
		{"directory", sub, sub + " is not a regular file (a directory)"},
		{"device", "/dev/zero", "/dev/zero is not a regular file (a character device)"},
		{"link to a session file", link, ""},
	}
	open := map[string]func(string) error{
		"Load": func(p string) error { _, err := Load(p); return err },
		"Open": func(p string) error {
			s, _, err := Open(p)
			if err == nil {
				s.Close()
			}
			return err
		},
	}
	for _, c := range cases {
		for name, fn := range open {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				if c.path == "/dev/zero" {
					if _, err := os.Stat(c.path); err != nil {
						t.Skip("no /dev/zero:", err)
					}
				}
				done := make(chan error, 1)
				go func() { done <- fn(c.path) }()
				var err error
				select {
				case err = <-done:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s(%s) did not return", name, c.path)
				}
				if c.err == "" {
					require.NoError(t, err)
					return
				}
				require.ErrorContains(t, err, c.err)
				require.True(t, errors.Is(err, ErrNotRegular))
			})
		}
	}
}
