package plugin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/sdk/abi"
)

func TestWasiAllowListExistsInWazero(t *testing.T) {
	r, err := NewRuntime(context.Background(), WithCacheDir(""))
	require.NoError(t, err)
	defer r.Close(context.Background())
	for name := range wasiAllowed {
		require.Contains(t, r.wasiSigs, name, "allowed WASI function %s is not provided", name)
	}
	for name := range r.wasiSigs {
		if len(name) > 5 && name[:5] == "sock_" {
			require.False(t, wasiAllowed[name], name)
		}
	}
}

func TestHostImportsCoverTheABI(t *testing.T) {
	require.Len(t, hostImports, len(abi.Imports))
	for _, name := range abi.Imports {
		require.Contains(t, hostImports, name)
	}
}

func TestCacheDirSelection(t *testing.T) {
	// Without WithCacheDir the cache is in memory, whatever the
	// environment says.
	t.Setenv("WEIR_WAZERO_CACHE", t.TempDir())
	r, err := NewRuntime(context.Background())
	require.NoError(t, err)
	require.Equal(t, "", r.CacheDir())
	require.NoError(t, r.Close(context.Background()))
	entries, err := os.ReadDir(os.Getenv("WEIR_WAZERO_CACHE"))
	require.NoError(t, err)
	require.Empty(t, entries)

	dir := filepath.Join(t.TempDir(), "made")
	r, err = NewRuntime(context.Background(), WithCacheDir(dir))
	require.NoError(t, err)
	require.Equal(t, dir, r.CacheDir())
	require.DirExists(t, dir)
	require.NoError(t, r.Close(context.Background()))
	require.NoError(t, r.Close(context.Background()), "Close is idempotent")
	_, err = r.Load(context.Background(), "late", []byte("\x00asm\x01\x00\x00\x00"))
	require.ErrorIs(t, err, ErrClosed)
	require.EqualError(t, err, `plugin "late": load: runtime is closed`)
}

func TestMemoryLimitValidation(t *testing.T) {
	_, err := NewRuntime(context.Background(), WithCacheDir(""), WithMemoryLimit(1000))
	require.EqualError(t, err, "plugin runtime: memory limit 1000 bytes is outside 64 KiB .. 4 GiB")
}

func TestModuleSumSharedWhileLoadsOverlap(t *testing.T) {
	r, err := NewRuntime(context.Background(), WithCacheDir(""))
	require.NoError(t, err)
	defer r.Close(context.Background())
	wasm := bytes.Repeat([]byte("module bytes "), 1000)
	first := sha256.Sum256(wasm)

	// Overlapping calls on one slice share the first call's hash.
	var wg sync.WaitGroup
	sums := make([][32]byte, 8)
	for i := range sums {
		wg.Go(func() { sums[i] = r.moduleSum(wasm) })
	}
	wg.Wait()
	for _, s := range sums {
		require.Equal(t, first, s)
	}
	wasm[0] = 'M' // only to show which call hashed: a caller may not do this during a load
	require.Equal(t, first, r.moduleSum(wasm), "a load that overlaps the others takes their hash")
	for range len(sums) + 1 {
		r.releaseSum(wasm)
	}
	require.Empty(t, r.sums, "the entry is dropped when the last overlapping load ends")

	// A load after all of them ended hashes the bytes it is given.
	require.Equal(t, sha256.Sum256(wasm), r.moduleSum(wasm))
	r.releaseSum(wasm)
	// Another slice of the same bytes is another key.
	other := bytes.Clone(wasm[:len(wasm)-1])
	require.Equal(t, sha256.Sum256(other), r.moduleSum(other))
	r.releaseSum(other)
	require.Empty(t, r.sums)
}
