package wasmbuild

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Two builds of the same sources give the same bytes.
func TestBuildIsReproducible(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.wasm"), filepath.Join(dir, "b.wasm")
	require.NoError(t, Build(ctx, "testdata/echo", a))
	require.NoError(t, Build(ctx, "testdata/echo", b))
	ab, err := os.ReadFile(a)
	require.NoError(t, err)
	bb, err := os.ReadFile(b)
	require.NoError(t, err)
	require.Equal(t, []byte("\x00asm"), ab[:4])
	require.True(t, bytes.Equal(ab, bb), "two builds differ")
}

// With WEIR_LONG=1 the second build also runs with an empty Go build cache,
// so nothing is reused between the two.
func TestBuildIsReproducibleFromScratch(t *testing.T) {
	if os.Getenv("WEIR_LONG") == "" {
		t.Skip("set WEIR_LONG=1 to rebuild the standard library from an empty GOCACHE")
	}
	ctx := context.Background()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.wasm"), filepath.Join(dir, "b.wasm")
	require.NoError(t, Build(ctx, "testdata/echo", a))
	t.Setenv("GOCACHE", t.TempDir())
	require.NoError(t, Build(ctx, "testdata/echo", b))
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	require.True(t, bytes.Equal(ab, bb), "builds with different caches differ")
}

func TestBuildErrorsNameThePackage(t *testing.T) {
	err := Build(context.Background(), "testdata/missing", filepath.Join(t.TempDir(), "x.wasm"))
	require.ErrorContains(t, err, "build testdata/missing")
	_, err = Keys(context.Background(), ".")
	require.EqualError(t, err, "wasmbuild: "+mustAbs(t, ".")+" is package wasmbuild, want a main package")
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	require.NoError(t, err)
	return a
}

// The cache key follows the sources of the package and its dependencies,
// and a cached module is not rebuilt.
func TestCache(t *testing.T) {
	ctx := context.Background()
	pkg, err := os.MkdirTemp("testdata", "tmp-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(pkg) })
	src, err := os.ReadFile("testdata/echo/main.go")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "main.go"), src, 0o644))

	keys, err := Keys(ctx, "testdata/echo", pkg)
	require.NoError(t, err)
	require.NotEqual(t, keys[0], keys[1], "the package path is part of the output (file names in the line table)")
	same, err := Keys(ctx, pkg)
	require.NoError(t, err)
	require.Equal(t, keys[1], same[0], "unchanged sources, unchanged key")
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "main.go"), append(src, "\n// changed\n"...), 0o644))
	changed, err := Keys(ctx, pkg)
	require.NoError(t, err)
	require.NotEqual(t, keys[1], changed[0], "a changed source file changes the key")

	c := Cache{Dir: t.TempDir()}
	paths, err := c.Build(ctx, "testdata/echo", "testdata/echo")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(c.Dir, keys[0]+".wasm"), paths[0])
	require.Equal(t, paths[0], paths[1], "a directory named twice is one module")
	paths = paths[:1]
	info, err := os.Stat(paths[0])
	require.NoError(t, err)
	time.Sleep(10 * time.Millisecond)
	again, err := c.Build(ctx, "testdata/echo")
	require.NoError(t, err)
	require.Equal(t, paths, again)
	info2, err := os.Stat(again[0])
	require.NoError(t, err)
	require.Equal(t, info.ModTime(), info2.ModTime(), "a cached module is not rebuilt")
	leftovers, err := filepath.Glob(filepath.Join(c.Dir, "*.tmp"))
	require.NoError(t, err)
	require.Empty(t, leftovers)
}

func TestEnvPinsTheTarget(t *testing.T) {
	t.Setenv("GOOS", "windows")
	t.Setenv("GOFLAGS", "-race")
	env := Env()
	var goos, flags []string
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, "GOOS="):
			goos = append(goos, kv)
		case strings.HasPrefix(kv, "GOFLAGS="):
			flags = append(flags, kv)
		}
	}
	require.Equal(t, []string{"GOOS=wasip1"}, goos)
	require.Equal(t, []string{"GOFLAGS="}, flags)
}

// A build waits while another process holds the cache directory, until
// its context ends, and does not rebuild a module that process put there
// meanwhile.
func TestCacheBuildWaitsForAnotherBuilder(t *testing.T) {
	ctx := context.Background()
	keys, err := Keys(ctx, "testdata/echo")
	require.NoError(t, err)
	c := Cache{Dir: t.TempDir()}
	unlock, err := lockDir(ctx, c.Dir)
	require.NoError(t, err)
	type result struct {
		paths []string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		paths, err := c.Build(ctx, "testdata/echo")
		done <- result{paths, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("Build returned while the directory was locked: %v %v", r.paths, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	// A build whose context ends while it waits gives up and says why.
	ended, cancel := context.WithCancel(ctx)
	cancel()
	_, err = lockDir(ended, c.Dir)
	require.ErrorContains(t, err, "waiting for another process's build")
	require.ErrorIs(t, err, context.Canceled)
	// The other builder's module, under the key Build is waiting to build.
	theirs := []byte("\x00asm\x01\x00\x00\x00")
	want := filepath.Join(c.Dir, keys[0]+".wasm")
	require.NoError(t, os.WriteFile(want, theirs, 0o644))
	unlock()
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, []string{want}, r.paths)
	got, err := os.ReadFile(want)
	require.NoError(t, err)
	require.Equal(t, theirs, got, "a module built while Build waited is not built again")
}
