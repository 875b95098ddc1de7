package plugin

import (
	"context"
	"os"
	"path/filepath"
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
