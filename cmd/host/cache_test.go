package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cacheEntries are the entries (wazero's files, not their seals) of the
// cache folder's wazero folders.
func cacheEntries(t *testing.T, cache string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(cache, "wazero-*", "*"))
	require.NoError(t, err)
	var entries []string
	for _, f := range files {
		if !strings.Contains(filepath.Base(f), ".") {
			entries = append(entries, f)
		}
	}
	return entries
}

// TestCorruptCacheEntryIsRecompiled: a few flipped bytes in the compiled
// code of a plugin's module do not fail host run: the entry no longer
// matches its seal, so it is dropped with a warning before wazero reads it
// and compiled again, and the next run is quiet. (The module is the tiny
// one, so that the test's compilations take no time.)
func TestCorruptCacheEntryIsRecompiled(t *testing.T) {
	t.Parallel()
	dir, cache := tinyPluginDir(t), t.TempDir()
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
	require.Contains(t, r.stderr, "dropped compilation cache entries that are not sealed with this user's cache key")
	require.Contains(t, r.stderr, "does not hold the bytes that were sealed")
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
	t.Parallel()
	dir, cache := tinyPluginDir(t), t.TempDir()
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

// TestForeignCacheEntryIsRefused: another module's entry, compiled by the
// same host into another cache folder (so its wazero checksum is valid),
// copied over the entry of the configured plugin's module with its own
// seal, is not executed: its seal was made under another key, so it is
// dropped with a warning, the module compiles again and the run succeeds.
// (Both modules are tiny ones, so that the compilations take no time.)
func TestForeignCacheEntryIsRefused(t *testing.T) {
	t.Parallel()
	dir, cache, other := tinyPluginDir(t), t.TempDir(), t.TempDir()
	env := []string{"WEIR_WAZERO_CACHE=" + cache}
	r := runHostEnv(t, dir, "", env, "run", "--model", tourModel(t), "hello")
	require.Equal(t, 0, r.code, r.stderr)
	entries := cacheEntries(t, cache)
	require.Len(t, entries, 1)
	genuine, err := os.ReadFile(entries[0])
	require.NoError(t, err)

	writeFile(t, filepath.Join(dir, "foreign.wasm"), string(tinyModule("foreign")))
	r = runHostEnv(t, dir, "", []string{"WEIR_WAZERO_CACHE=" + other}, "plugins", "verify", "foreign.wasm")
	require.Equal(t, 0, r.code, r.stderr)
	foreign := cacheEntries(t, other)
	require.Len(t, foreign, 1)
	require.NotEqual(t, filepath.Base(entries[0]), filepath.Base(foreign[0]), "another module, another entry")
	for _, suffix := range []string{"", ".seal"} {
		b, err := os.ReadFile(foreign[0] + suffix)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(entries[0]+suffix, b, 0o600))
	}

	r = runHostEnv(t, dir, "", env, "run", "--model", tourModel(t), "hello")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "dropped compilation cache entries that are not sealed with this user's cache key")
	require.Contains(t, r.stderr, "has a seal made under another key")
	require.Contains(t, r.stdout, "I am the offline model", "the turn ran")
	again, err := os.ReadFile(entries[0])
	require.NoError(t, err)
	require.Equal(t, genuine, again, "the entry holds the configured module's code again")
}
