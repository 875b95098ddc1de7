package plugin

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

const wasiModule = wasi_snapshot_preview1.ModuleName

// Runtime is the process-wide plugin runtime. Create one per process and
// share it between plugins; it is safe for concurrent use.
type Runtime struct {
	wz       wazero.Runtime
	cache    wazero.CompilationCache
	cfg      runtimeConfig
	log      hclog.Logger
	wasiSigs map[string]api.FunctionDefinition

	mu       sync.Mutex
	compiled map[[32]byte]*compileEntry
	plugins  map[*Plugin]struct{}
	closed   bool
}

// compileEntry shares one compilation among concurrent loads of the same
// module bytes.
type compileEntry struct {
	done chan struct{}
	mod  wazero.CompiledModule
	err  error
}

// NewRuntime creates the runtime: a wazero runtime with the compiler engine
// where the platform supports it, CloseOnContextDone, the memory cap, the
// compilation cache, and the WASI and weir host modules.
func NewRuntime(ctx context.Context, opts ...RuntimeOption) (*Runtime, error) {
	cfg := defaultRuntimeConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if !cfg.cacheSet {
		cfg.cacheDir = DefaultCacheDir()
	}
	pages := cfg.memoryLimit / 65536
	if pages < 1 || pages > 65536 {
		return nil, fmt.Errorf("plugin runtime: memory limit %d bytes is outside 64 KiB .. 4 GiB", cfg.memoryLimit)
	}
	rc := wazero.NewRuntimeConfig(). // compiler engine where supported, interpreter elsewhere
						WithCloseOnContextDone(true).
						WithMemoryLimitPages(uint32(pages))
	var cache wazero.CompilationCache
	if cfg.cacheDir != "" {
		if err := os.MkdirAll(cfg.cacheDir, 0o755); err != nil {
			return nil, fmt.Errorf("plugin runtime: compilation cache %s: %w", cfg.cacheDir, err)
		}
		c, err := wazero.NewCompilationCacheWithDir(cfg.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("plugin runtime: compilation cache %s: %w", cfg.cacheDir, err)
		}
		cache = c
	} else {
		cache = wazero.NewCompilationCache()
	}
	rc = rc.WithCompilationCache(cache)

	r := &Runtime{
		wz:       wazero.NewRuntimeWithConfig(ctx, rc),
		cache:    cache,
		cfg:      cfg,
		log:      cfg.logger.Named("plugin"),
		compiled: map[[32]byte]*compileEntry{},
		plugins:  map[*Plugin]struct{}{},
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r.wz); err != nil {
		_ = r.wz.Close(ctx)
		return nil, fmt.Errorf("plugin runtime: WASI: %w", err)
	}
	r.wasiSigs = r.wz.Module(wasiModule).ExportedFunctionDefinitions()
	if err := instantiateHostModule(ctx, r.wz); err != nil {
		_ = r.wz.Close(ctx)
		return nil, fmt.Errorf("plugin runtime: weir host module: %w", err)
	}
	return r, nil
}

// DefaultCacheDir is the compilation cache directory used when no option
// sets one: $WEIR_WAZERO_CACHE, else os.UserCacheDir()/weir/wazero, else ""
// (memory only).
func DefaultCacheDir() string {
	if dir := os.Getenv(CacheEnv); dir != "" {
		return dir
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "weir", "wazero")
	}
	return ""
}

// CacheDir returns the compilation cache directory in use ("" for memory).
func (r *Runtime) CacheDir() string { return r.cfg.cacheDir }

// compile returns the compiled module of wasm, compiling it at most once per
// process (and at most once per machine with the disk cache).
func (r *Runtime) compile(ctx context.Context, wasm []byte) (wazero.CompiledModule, error) {
	key := sha256.Sum256(wasm)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	e, ok := r.compiled[key]
	if !ok {
		e = &compileEntry{done: make(chan struct{})}
		r.compiled[key] = e
	}
	r.mu.Unlock()
	if ok {
		select {
		case <-e.done:
			return e.mod, e.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	cctx := experimental.WithCompilationWorkers(ctx, max(1, r.cfg.workers))
	e.mod, e.err = r.wz.CompileModule(cctx, wasm)
	if e.err != nil {
		r.mu.Lock()
		delete(r.compiled, key) // let a later load retry
		r.mu.Unlock()
	}
	close(e.done)
	return e.mod, e.err
}

// Close closes every plugin and the runtime. The disk cache stays.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	plugins := make([]*Plugin, 0, len(r.plugins))
	for p := range r.plugins {
		plugins = append(plugins, p)
	}
	r.mu.Unlock()
	var errs []error
	for _, p := range plugins {
		errs = append(errs, p.Close(ctx))
	}
	errs = append(errs, r.wz.Close(ctx), r.cache.Close(ctx))
	return errors.Join(errs...)
}
