// Package plugintest runs Weir plugins under the real host sandbox inside
// go test, so plugin authors meet the runtime's limits (deadlines, memory
// cap, output cap, import allow-list) in their own tests.
//
//	func TestRender(t *testing.T) {
//		p := plugintest.Load(t, ".", plugin.WithConfig([]byte(`{"style":"terse"}`)))
//		got, err := p.RenderPrompt(context.Background(), nil, &abi.RenderRequest{...})
//		...
//	}
//
// Load builds the plugin package with sdk/wasmbuild (cached by content
// hash, so an unchanged plugin is not rebuilt) and loads it into one runtime
// shared by the whole test binary. The runtime compiles with wazero's disk
// cache (CacheDir: WEIR_WAZERO_CACHE, else the user cache dir), so CI can
// share both caches between packages. Set WEIR_PLUGIN_LOG=debug (or info, warn) to see
// plugin logs and guest output on stderr.
package plugintest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/wasmbuild"
)

var (
	rtOnce sync.Once
	rt     *plugin.Runtime
	rtErr  error
)

// Runtime returns the runtime shared by the test binary. It is never closed.
func Runtime(tb testing.TB) *plugin.Runtime {
	tb.Helper()
	rtOnce.Do(func() {
		rt, rtErr = plugin.NewRuntime(context.Background(), plugin.WithLogger(Logger()), plugin.WithCacheDir(CacheDir()))
	})
	if rtErr != nil {
		tb.Fatalf("plugintest: runtime: %v", rtErr)
	}
	return rt
}

// CacheEnv names the environment variable that sets CacheDir.
const CacheEnv = "WEIR_WAZERO_CACHE"

// CacheDir is the compilation cache directory of the shared runtime, for
// tests that make runtimes of their own: $WEIR_WAZERO_CACHE, else
// os.UserCacheDir()/weir/wazero, else "" (memory only). The plugin
// runtime itself reads no environment: this test helper does.
func CacheDir() string {
	if dir := os.Getenv(CacheEnv); dir != "" {
		return dir
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "weir", "wazero")
	}
	return ""
}

// Logger is the logger of the shared runtime: silent unless WEIR_PLUGIN_LOG
// names a level.
func Logger() hclog.Logger {
	level := os.Getenv("WEIR_PLUGIN_LOG")
	if level == "" {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Name: "weir", Level: hclog.LevelFromString(level), Output: os.Stderr})
}

// BuildDirs builds the plugin packages in dirs (in parallel, cached by
// content hash) and returns each module's bytes, keyed by the directory as
// given. It suits TestMain, which has no testing.TB.
func BuildDirs(ctx context.Context, dirs ...string) (map[string][]byte, error) {
	c := wasmbuild.Cache{}
	paths, err := c.Build(ctx, dirs...)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(dirs))
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out[dirs[i]] = b
	}
	return out, nil
}

// Build builds the plugin package in dir and returns the module bytes.
func Build(tb testing.TB, dir string) []byte {
	tb.Helper()
	mods, err := BuildDirs(context.Background(), dir)
	if err != nil {
		tb.Fatalf("plugintest: %v", err)
	}
	return mods[dir]
}

// Load builds the plugin in dir and loads it into the shared runtime under
// the directory's base name. The plugin is closed when the test ends.
func Load(tb testing.TB, dir string, opts ...plugin.Option) *plugin.Plugin {
	tb.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return LoadBytes(tb, filepath.Base(abs), Build(tb, dir), opts...)
}

// LoadBytes loads module bytes into the shared runtime under name; the
// plugin is closed when the test ends.
func LoadBytes(tb testing.TB, name string, wasm []byte, opts ...plugin.Option) *plugin.Plugin {
	tb.Helper()
	p, err := Runtime(tb).Load(context.Background(), name, wasm, opts...)
	if err != nil {
		tb.Fatalf("plugintest: %v", err)
	}
	tb.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}
