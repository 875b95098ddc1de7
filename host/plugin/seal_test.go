package plugin_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host/plugin"
)

// sealedEntries are the entries (not seals or temporary files) of dir's
// wazero folders.
func sealedEntries(t *testing.T, dir string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
	require.NoError(t, err)
	var out []string
	for _, p := range all {
		if regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(filepath.Base(p)) {
			out = append(out, p)
		}
	}
	return out
}

// compileInto loads wasm with a runtime on the cache directory dir and
// returns what the runtime logged. The stub modules fail at start, after
// their compilation.
func compileInto(t *testing.T, dir string, wasm []byte) string {
	t.Helper()
	ctx := context.Background()
	var logs bytes.Buffer
	rt, err := plugin.NewRuntime(ctx, plugin.WithCacheDir(dir),
		plugin.WithLogger(hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})))
	require.NoError(t, err)
	_, err = rt.Load(ctx, "stub", wasm)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "module rejected")
	require.NoError(t, rt.Close(ctx))
	return logs.String()
}

// TestCacheEntriesAreSealed: every entry the runtime compiles into its
// cache directory is sealed with the key beside the folder (0600, made on
// first use), and a later runtime reads it without a warning. An entry
// whose bytes or seal are not this key's — another module's valid entry
// renamed into place, that entry with its own cache's seal, an entry with
// no seal, bytes flipped in place — is dropped with a warning and
// compiled again; nothing of it is kept.
func TestCacheEntriesAreSealed(t *testing.T) {
	mine, other := abiModule(nestedBlocks(3)), abiModule(nestedBlocks(3), nestedBlocks(3), nestedBlocks(3))
	cases := []struct {
		name   string
		tamper func(t *testing.T, entry, foreign string)
		reason string
	}{
		{"another module's entry under this name", func(t *testing.T, entry, foreign string) {
			copyFile(t, foreign, entry)
		}, "does not hold the bytes that were sealed"},
		{"another module's entry with its cache's seal", func(t *testing.T, entry, foreign string) {
			copyFile(t, foreign, entry)
			copyFile(t, foreign+".seal", entry+".seal")
		}, "has a seal made under another key"},
		{"an entry with no seal", func(t *testing.T, entry, foreign string) {
			require.NoError(t, os.Remove(entry+".seal"))
		}, "has no seal"},
		{"flipped bytes", func(t *testing.T, entry, foreign string) {
			b, err := os.ReadFile(entry)
			require.NoError(t, err)
			b[len(b)/2] ^= 0xff
			require.NoError(t, os.WriteFile(entry, b, 0o600))
		}, "does not hold the bytes that were sealed"},
		{"an entry others may write", func(t *testing.T, entry, foreign string) {
			require.NoError(t, os.Chmod(entry, 0o666))
		}, "writable by its group or by others"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			require.Empty(t, compileInto(t, dir, mine))
			key, err := os.Stat(plugin.CacheKeyPath(dir))
			require.NoError(t, err, "the key is made on first use")
			require.Equal(t, os.FileMode(0o600), key.Mode().Perm())
			entries := sealedEntries(t, dir)
			require.Len(t, entries, 1)
			require.FileExists(t, entries[0]+".seal")
			genuine, err := os.ReadFile(entries[0])
			require.NoError(t, err)
			require.Empty(t, compileInto(t, dir, mine), "a sealed entry is read quietly")

			foreignDir := filepath.Join(t.TempDir(), "foreign")
			compileInto(t, foreignDir, other)
			foreign := sealedEntries(t, foreignDir)
			require.Len(t, foreign, 1)

			fb, err := os.ReadFile(foreign[0])
			require.NoError(t, err)
			require.NotEqual(t, genuine, fb, "the other module's code differs")
			c.tamper(t, entries[0], foreign[0])
			logs := compileInto(t, dir, mine)
			require.Contains(t, logs, "dropped compilation cache entries that are not sealed with this user's cache key")
			require.Contains(t, logs, c.reason)
			again, err := os.ReadFile(entries[0])
			require.NoError(t, err, "compiled again into the cache")
			require.Equal(t, genuine, again, "the entry holds this module's code again")
			require.Empty(t, compileInto(t, dir, mine), "and is sealed again")
		})
	}
}

// TestCacheKeyRules: a key file others may read, or of the wrong size,
// makes the runtime ignore the cache (it compiles in memory and says
// why); CheckCacheDir names the same rule.
func TestCacheKeyRules(t *testing.T) {
	cases := []struct {
		name  string
		write func(path string) error
		rule  string
	}{
		{"readable by others", func(p string) error {
			if err := os.WriteFile(p, bytes.Repeat([]byte{1}, 32), 0o600); err != nil {
				return err
			}
			return os.Chmod(p, 0o644)
		}, "may be read or written by its group or by others (mode -rw-r--r--; it must be 0600)"},
		{"short", func(p string) error { return os.WriteFile(p, []byte("short"), 0o600) }, "holds 5 bytes, not 32"},
		{"a symbolic link", func(p string) error { return os.Symlink("/dev/null", p) }, "is not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			require.NoError(t, c.write(plugin.CacheKeyPath(dir)))
			err := plugin.CheckCacheDir(dir)
			require.ErrorContains(t, err, c.rule)
			var logs bytes.Buffer
			rt, err := plugin.NewRuntime(context.Background(), plugin.WithCacheDir(dir),
				plugin.WithLogger(hclog.New(&hclog.LoggerOptions{Output: &logs})))
			require.NoError(t, err)
			defer rt.Close(context.Background())
			require.Equal(t, "", rt.CacheDir(), "the cache is ignored")
			require.Contains(t, logs.String(), "ignoring the compilation cache; compiling in memory")
			require.Contains(t, logs.String(), c.rule)
			require.NoDirExists(t, dir, "nothing is written")
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o600))
}
