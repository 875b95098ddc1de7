package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"

	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/host/setup"
)

// cacheEnv names the environment variable that sets the plugin
// compilation cache folder (docs/cli.md).
const cacheEnv = "WEIR_WAZERO_CACHE"

// cacheDir is the folder where the host keeps compiled plugins:
// $WEIR_WAZERO_CACHE, else weir/wazero in the user cache folder, else none
// (they are compiled again in every run).
func cacheDir() string {
	if dir := os.Getenv(cacheEnv); dir != "" {
		return dir
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "weir", "wazero")
	}
	return ""
}

// newHost loads the configured plugins for route (nil: the configuration's
// selected route, which the caller opened) with the command line's cache
// folder, logger, working directory and compile notice. pluginConfig
// replaces the configuration of named plugins. Close the host when done.
func newHost(ctx context.Context, e *env, cfg *config.Config, route *setup.Route, log hclog.Logger, pluginConfig map[string][]byte) (*setup.Host, error) {
	return newHostWith(ctx, e, cfg, route, log, pluginConfig, true)
}

// newHostWith is newHost; meterState false keeps the meter's state blobs
// out of the cache folder (a command that must write nothing but its
// output); more sets further options (run's Ask).
func newHostWith(ctx context.Context, e *env, cfg *config.Config, route *setup.Route, log hclog.Logger, pluginConfig map[string][]byte, meterState bool, more ...func(*setup.Options)) (*setup.Host, error) {
	dir := cacheDir()
	trusted := dir != "" && plugin.CheckCacheDir(dir) == nil
	// The notice goes out when the first load finds its module not yet
	// compiled into the cache: a first run, a new plugin, a new version.
	announce := func(string) {
		e.compiling.Do(func() {
			if !trusted {
				fmt.Fprintln(e.stderr, "compiling plugins (no compilation cache)…")
			} else {
				fmt.Fprintln(e.stderr, "compiling plugins (first run only)…")
			}
		})
	}
	opts := &setup.Options{Route: route, CacheDir: dir, OnCompile: announce, InterpreterFirst: true,
		Logger: log, PluginConfig: pluginConfig, Workdir: workdir(), Getenv: os.Getenv}
	if trusted && meterState {
		// (An untrusted folder the runtime ignores, and says why.)
		// The meter's state blobs beside the compiled code: a resumed
		// session starts its meter from its blob instead of its log.
		opts.MeterState = &provider.DirStateCache{Dir: filepath.Join(dir, "meter-state")}
	}
	for _, f := range more {
		if f != nil {
			f(opts)
		}
	}
	return setup.New(ctx, cfg, opts)
}

// closeHost closes h, saying so first when it has to wait for plugin
// compilations a first run started (they fill the cache for the next run).
func closeHost(ctx context.Context, e *env, h *setup.Host) {
	if ctx.Err() == nil && h.Compiling() {
		fmt.Fprintln(e.stderr, "finishing the plugins' compilation for the next run…")
	}
	h.Close(ctx)
}

// workdir is the working directory, or "" when it cannot be read.
func workdir() string {
	d, _ := os.Getwd()
	return d
}
