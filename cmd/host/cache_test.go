package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// cacheEntries are the files of the cache folder's wazero folders.
func cacheEntries(t *testing.T, cache string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(cache, "wazero-*", "*"))
	require.NoError(t, err)
	return files
}

// TestCorruptCacheEntryIsRecompiled: a few flipped bytes in the compiled
// code of the first-party module do not fail host run: the entry is
// dropped with a warning and compiled again, and the next run is quiet.
func TestCorruptCacheEntryIsRecompiled(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	env := []string{"WEIR_WAZERO_CACHE=" + cache}
	r := runHostEnv(t, dir, "", env, "run", "--model", tourModel(t), "hello")
	require.Equal(t, 0, r.code, r.stderr)
	entries := cacheEntries(t, cache)
	require.Len(t, entries, 1, "the first run compiled the module into the cache")
	b, err := os.ReadFile(entries[0])
	require.NoError(t, err)
	for i := len(b) / 2; i < len(b)/2+8; i++ {
		b[i] ^= 0xff
	}
	require.NoError(t, os.WriteFile(entries[0], b, 0o600))

	r = runHostEnv(t, dir, "", env, "run", "--model", tourModel(t), "hello")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "the compilation cache held an entry wazero cannot read; dropped the cached native code and compiling again")
	require.Contains(t, r.stderr, "checksum mismatch")
	require.Contains(t, r.stdout, "I am the offline model", "the turn ran")
	fresh, err := os.ReadFile(entries[0])
	require.NoError(t, err, "compiled again into the cache")
	require.NotEqual(t, b, fresh)

	r = runHostEnv(t, dir, "", env, "run", "--model", tourModel(t), "hello")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stderr, "compilation cache")
}

// TestGroupWritableCacheIsIgnored: a cache folder others may write is not
// read or written; the run compiles in memory and says why.
func TestGroupWritableCacheIsIgnored(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	require.NoError(t, os.Chmod(cache, 0o775))
	env := []string{"WEIR_WAZERO_CACHE=" + cache}
	r := runHostEnv(t, dir, "", env, "run", "--model", tourModel(t), "hello")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "ignoring the compilation cache; compiling in memory")
	require.Contains(t, r.stderr, "is writable by its group or by others (mode -rwxrwxr-x)")
	require.Contains(t, r.stderr, "compiling plugins (no compilation cache)")
	require.Contains(t, r.stdout, "I am the offline model", "the turn ran")
	left, err := os.ReadDir(cache)
	require.NoError(t, err)
	require.Empty(t, left, "nothing is written to an untrusted folder")
}
