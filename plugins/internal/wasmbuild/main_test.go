package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The command builds each plugin directory into <name>/<name>.wasm and
// -check catches stale, missing and stray modules. The plugins tree is a
// temporary directory under testdata, inside the module so it can import
// the SDK.
func TestBuildAndCheck(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, os.MkdirAll("testdata", 0o755))
	root, err := os.MkdirTemp("testdata", "plugins-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(root) })
	src, err := os.ReadFile("../../../sdk/wasmbuild/testdata/echo/main.go")
	require.NoError(t, err)
	for _, dir := range []string{"echo", "internal/helper", "empty", "lib/standalone"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, dir), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "echo", "main.go"), src, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "internal", "helper", "main.go"), src, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "lib", "lib.go"), []byte("package lib\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "lib", "standalone", "main.go"), src, 0o644))

	names, err := pluginDirs(root)
	require.NoError(t, err)
	require.Equal(t, []string{"echo"}, names,
		"internal and empty directories, a plugin's own package and the main packages below it are not modules")

	require.NoError(t, run(ctx, root, false, nil))
	built := filepath.Join(root, "echo", "echo.wasm")
	require.FileExists(t, built)
	require.NoError(t, run(ctx, root, true, nil), "a fresh build passes the check")

	good, err := os.ReadFile(built)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(built, append(good, 0), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "empty", "empty.wasm"), []byte("old"), 0o644))
	err = run(ctx, root, true, nil)
	require.ErrorContains(t, err, "2 problem(s)")
	require.ErrorContains(t, err, built+": stale: committed")
	require.ErrorContains(t, err, filepath.Join(root, "empty", "empty.wasm")+": no plugin sources build it")

	require.NoError(t, os.Remove(built))
	err = run(ctx, root, true, []string{"echo"})
	require.ErrorContains(t, err, built+": missing (run go generate ./plugins)")

	require.EqualError(t, run(ctx, root, false, []string{"nope"}), `no plugin "nope" under `+root)
}
