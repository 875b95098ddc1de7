//go:build unix

package builtin

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/surface"
)

// run runs a tool call and fails the test, rather than hanging it, when the
// call does not return.
func run(t *testing.T, tl host.Tool, ctx context.Context, args string) (string, error) {
	t.Helper()
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := tl.Run(ctx, args)
		done <- result{surface.TextOf(out), err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s %s did not return", tl.Name(), args)
		return "", nil
	}
}

// confinedTree builds base/root (the working directory) and base/outside
// (a secret next to it) with links of every kind, and a named pipe.
func confinedTree(t *testing.T) (root, outside string) {
	base := t.TempDir()
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "sub"), outside} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	files := map[string]string{
		filepath.Join(root, "a.txt"):        "hello",
		filepath.Join(root, "sub", "b.txt"): "inner",
		filepath.Join(outside, "secret"):    "SECRET",
	}
	for p, s := range files {
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	}
	links := map[string]string{
		"in-file":          "a.txt",
		"in-dir":           "sub",
		"sub/in-up":        "../a.txt",
		"in-abs":           filepath.Join(root, "a.txt"),
		"out-file-rel":     "../outside/secret",
		"out-file-abs":     filepath.Join(outside, "secret"),
		"out-dir-rel":      "../outside",
		"out-dir-abs":      outside,
		"sub/out-deep-rel": "../../outside/secret",
		"loop":             "loop",
	}
	for name, target := range links {
		require.NoError(t, os.Symlink(target, filepath.Join(root, name)))
	}
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	return root, outside
}

func TestFileToolsAreConfinedToTheRoot(t *testing.T) {
	root, outside := confinedTree(t)
	tools := Tools(root, nil)
	const (
		absolute = "is absolute"
		leaves   = "leaves the working directory"
		viaLink  = "leads outside the working directory through a symbolic link"
	)
	cases := []struct {
		name, tool, path, want, err string
	}{
		// Escapes by spelling.
		{"dot-dot", "read_file", "../outside/secret", "", leaves},
		{"dot-dot inside first", "read_file", "sub/../../outside/secret", "", leaves},
		{"dot-dot dir", "list_files", "..", "", leaves},
		{"absolute outside", "read_file", filepath.Join(outside, "secret"), "", absolute},
		{"absolute inside", "read_file", filepath.Join(root, "a.txt"), "", absolute},
		{"absolute dir", "list_files", "/", "", absolute},
		// Escapes through links.
		{"link to file, relative", "read_file", "out-file-rel", "", viaLink},
		{"link to file, absolute", "read_file", "out-file-abs", "", viaLink},
		{"link to file, from a subfolder", "read_file", "sub/out-deep-rel", "", viaLink},
		{"link to dir, relative, read", "read_file", "out-dir-rel/secret", "", viaLink},
		{"link to dir, absolute, read", "read_file", "out-dir-abs/secret", "", viaLink},
		{"link to dir, relative, list", "list_files", "out-dir-rel", "", viaLink},
		{"link to dir, absolute, list", "list_files", "out-dir-abs", "", viaLink},
		{"link to file, list", "list_files", "out-file-rel", "", viaLink},
		// An absolute link is refused even when it points inside.
		{"absolute link inside", "read_file", "in-abs", "", viaLink},
		{"link loop", "read_file", "loop", "", "loop"},
		// Relative links that stay inside work.
		{"link inside to file", "read_file", "in-file", "hello", ""},
		{"link inside through a dir", "read_file", "in-dir/b.txt", "inner", ""},
		{"link inside climbing back", "read_file", "sub/in-up", "hello", ""},
		{"link inside to dir, list", "list_files", "in-dir", "b.txt\nin-up\nout-deep-rel", ""},
		{"plain file", "read_file", "sub/b.txt", "inner", ""},
		// Not a regular file / not a directory.
		{"named pipe, read", "read_file", "fifo", "", `"fifo" is not a regular file (a named pipe)`},
		{"named pipe, list", "list_files", "fifo", "", `"fifo" is not a directory (a named pipe)`},
		{"directory, read", "read_file", "sub", "", `"sub" is not a regular file (a directory)`},
		{"file, list", "list_files", "a.txt", "", `"a.txt" is not a directory (a regular file)`},
		{"missing", "read_file", "nope", "", "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := run(t, tool(t, tools, c.tool), context.Background(), `{"path":"`+c.path+`"}`)
			require.NotContains(t, out, "SECRET")
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				require.NotContains(t, err.Error(), "SECRET")
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, out)
		})
	}
}

func TestReadFileRefusesADevice(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero:", err)
	}
	// A root that holds devices: the type check refuses them, so nothing
	// is read from /dev/zero, which would never end.
	_, err := run(t, tool(t, Tools("/dev", nil), "read_file"), context.Background(), `{"path":"zero"}`)
	require.ErrorContains(t, err, `"zero" is not a regular file (a character device)`)
}

func TestFileToolsHonourCancellation(t *testing.T) {
	root, _ := confinedTree(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range []string{"read_file", "list_files"} {
		_, err := run(t, tool(t, Tools(root, nil), name), ctx, `{"path":"in-file"}`)
		require.ErrorIs(t, err, context.Canceled, name)
	}
}
