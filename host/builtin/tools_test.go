package builtin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/surface"
)

func tool(t *testing.T, tools []host.Tool, name string) host.Tool {
	for _, x := range tools {
		if x.Name() == name {
			return x
		}
	}
	t.Fatalf("no tool %q", name)
	return nil
}

func TestToolsStayInsideTheRoot(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "big.txt"), []byte(strings.Repeat("x", MaxRead+10)), 0o644))
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tools := Tools(root, func() time.Time { return at })
	ctx := context.Background()

	cases := []struct {
		tool, args, want, err string
	}{
		{"list_files", `{}`, "a.txt\nbig.txt\nsub/", ""},
		{"list_files", `{"path":"sub"}`, "", ""},
		{"read_file", `{"path":"a.txt"}`, "hello", ""},
		{"read_file", `{"path":"../x"}`, "", "leaves the working directory"},
		{"read_file", `{"path":"/etc/passwd"}`, "", "must be relative"},
		{"read_file", `not json`, "", "not a JSON object"},
		{"read_file", `{"path":"missing.txt"}`, "", "no such file"},
		{"current_time", `{}`, "2026-01-02T03:04:05Z", ""},
	}
	for _, c := range cases {
		out, err := tool(t, tools, c.tool).Run(ctx, c.args)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, "%s %s", c.tool, c.args)
			continue
		}
		require.NoError(t, err, "%s %s", c.tool, c.args)
		require.Equal(t, c.want, surface.TextOf(out), "%s %s", c.tool, c.args)
	}
	out, err := tool(t, tools, "read_file").Run(ctx, `{"path":"big.txt"}`)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(surface.TextOf(out), "[truncated at 64 KiB]"))
}

func TestListFilesIsCapped(t *testing.T) {
	root := t.TempDir()
	big := filepath.Join(root, "big")
	require.NoError(t, os.Mkdir(big, 0o755))
	for i := range MaxEntries + 5 {
		require.NoError(t, os.WriteFile(filepath.Join(big, fmt.Sprintf("f%05d", i)), nil, 0o644))
	}
	out, err := tool(t, Tools(root, nil), "list_files").Run(context.Background(), `{"path":"big"}`)
	require.NoError(t, err)
	lines := strings.Split(surface.TextOf(out), "\n")
	require.Len(t, lines, MaxEntries+1)
	require.Equal(t, "f00000", lines[0])
	require.Equal(t, fmt.Sprintf("f%05d", MaxEntries-1), lines[MaxEntries-1])
	require.Equal(t, "[5 more entries not listed]", lines[MaxEntries])
}
