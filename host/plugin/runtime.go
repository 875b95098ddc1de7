package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

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
	sealer   *sealer // the cache directory's entry seals; nil without one
	cfg      runtimeConfig
	log      hclog.Logger
	wasiSigs map[string]api.FunctionDefinition

	mu       sync.Mutex
	compiled map[[32]byte]*compileEntry
	sums     map[sumKey]*sumEntry // the hashes of module slices being loaded (moduleSum)
	plugins  map[*Plugin]struct{}
	closed   bool

	// Compilations run in their own goroutines (see runCompile); Close
	// cancels them and waits for them before closing the cache they write.
	compiling     sync.WaitGroup
	closing       context.Context
	cancelClosing context.CancelFunc
	// compileSlot is held by the compilation of a module not known to
	// the disk cache (see compile).
	compileSlot chan struct{}

	// interp is the interpreter runtime of WithInterpreterFirst, made by
	// the first load that uses it (see interpreter).
	interpOnce sync.Once
	interp     wazero.Runtime
	interpErr  error
	// interpMods are the modules the interpreter compiled, by SHA-256,
	// shared by the plugins loaded from one module (the first-party
	// module under its three names) until each has moved to the compiled
	// module; under mu.
	interpMods map[[32]byte]*interpModule
	// upgrading counts the plugins served by the interpreter that wait
	// for their compilation (see Plugin.upgrade); Close lets them finish.
	upgrading counter
	// finishing is closed when Close starts: compilations waiting to
	// start (see Load) start at once.
	finishing chan struct{}
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
// compilation cache (in memory unless WithCacheDir names a directory), and
// the WASI and weir host modules. It reads no environment variable.
func NewRuntime(ctx context.Context, opts ...RuntimeOption) (*Runtime, error) {
	cfg := defaultRuntimeConfig()
	for _, o := range opts {
		o(&cfg)
	}
	pages := cfg.memoryLimit / 65536
	if pages < 1 || pages > 65536 {
		return nil, fmt.Errorf("plugin runtime: memory limit %d bytes is outside 64 KiB .. 4 GiB", cfg.memoryLimit)
	}
	rc := sandboxed(wazero.NewRuntimeConfig(), pages) // compiler engine where supported, interpreter elsewhere
	var cache wazero.CompilationCache
	if err := CheckCacheDir(cfg.cacheDir); err != nil {
		// Code another user could have planted is never loaded.
		cfg.logger.Named("plugin").Warn("ignoring the compilation cache; compiling in memory", "error", err)
		cfg.cacheDir = ""
	}
	var key []byte
	if cfg.cacheDir != "" {
		k, err := cacheKey(cfg.cacheDir)
		if err != nil {
			cfg.logger.Named("plugin").Warn("ignoring the compilation cache; compiling in memory", "error", err)
			cfg.cacheDir = ""
		}
		key = k
	}
	var seals *sealer
	if cfg.cacheDir != "" {
		if err := os.MkdirAll(cfg.cacheDir, 0o700); err != nil {
			return nil, fmt.Errorf("plugin runtime: compilation cache %s: %w", cfg.cacheDir, err)
		}
		c, err := wazero.NewCompilationCacheWithDir(cfg.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("plugin runtime: compilation cache %s: %w", cfg.cacheDir, err)
		}
		cache = c
		seals = newSealer(cfg.cacheDir, key, cfg.logger.Named("plugin"))
		seals.check() // before wazero reads an entry
	} else {
		cache = wazero.NewCompilationCache()
	}
	rc = rc.WithCompilationCache(cache)

	wz, err := newWazero(ctx, rc)
	if err != nil {
		return nil, fmt.Errorf("plugin runtime: %w", err)
	}
	r := &Runtime{
		wz:       wz,
		cache:    cache,
		sealer:   seals,
		cfg:      cfg,
		log:      cfg.logger.Named("plugin"),
		compiled: map[[32]byte]*compileEntry{},
		sums:     map[sumKey]*sumEntry{},
		plugins:  map[*Plugin]struct{}{},

		compileSlot: make(chan struct{}, 1),
		finishing:   make(chan struct{}),
	}
	r.closing, r.cancelClosing = context.WithCancel(context.Background())
	r.wasiSigs = r.wz.Module(wasiModule).ExportedFunctionDefinitions()
	return r, nil
}

// sandboxed sets what every plugin runtime enforces: calls stop when
// their context ends, and memory is capped at pages.
func sandboxed(rc wazero.RuntimeConfig, pages uint64) wazero.RuntimeConfig {
	return rc.WithCloseOnContextDone(true).WithMemoryLimitPages(uint32(pages))
}

// newWazero makes a wazero runtime with the host modules plugins import:
// WASI preview 1 and the weir module.
func newWazero(ctx context.Context, rc wazero.RuntimeConfig) (wazero.Runtime, error) {
	wz := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, wz); err != nil {
		_ = wz.Close(ctx)
		return nil, fmt.Errorf("WASI: %w", err)
	}
	if err := instantiateHostModule(ctx, wz); err != nil {
		_ = wz.Close(ctx)
		return nil, fmt.Errorf("weir host module: %w", err)
	}
	return wz, nil
}

// CacheDir returns the compilation cache directory in use ("" for memory).
func (r *Runtime) CacheDir() string { return r.cfg.cacheDir }

// compile returns the compiled module of wasm, whose sha256 is key,
// compiling it at most once per process (and at most once per machine with
// the disk cache). A module not known to the disk cache (known false)
// waits for the compilation slot, so that such compilations run one at a
// time, each with all the workers: running them together would finish
// none sooner and would stretch each one toward its compile deadline.
// Known modules, found in the cache, are read in parallel. onCompile, if
// not nil, is called when this call starts the compilation.
func (r *Runtime) compile(ctx context.Context, key [32]byte, wasm []byte, known bool, onCompile func()) (wazero.CompiledModule, error) {
	e, err := r.startCompile(ctx, key, wasm, known, false, onCompile)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.done:
		return e.mod, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// startCompile starts the compilation of compile, or finds the one
// already running or done, and returns its entry without waiting for it.
// A closing runtime starts no compilation, except the background ones of
// plugins on the interpreter (background) until Close stops waiting for
// them.
func (r *Runtime) startCompile(ctx context.Context, key [32]byte, wasm []byte, known, background bool, onCompile func()) (*compileEntry, error) {
	r.mu.Lock()
	if r.closed && (!background || r.closing.Err() != nil) {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	e, ok := r.compiled[key]
	if !ok {
		e = &compileEntry{done: make(chan struct{})}
		r.compiled[key] = e
		r.compiling.Add(1)
		go r.runCompile(ctx, key, e, wasm, !known)
	}
	r.mu.Unlock()
	if !ok && onCompile != nil {
		onCompile()
	}
	return e, nil
}

// interpreter returns the interpreter runtime of WithInterpreterFirst,
// made on first use with the same memory cap, CloseOnContextDone and host
// modules as the compiler runtime, and no compilation cache (the
// interpreter has nothing to cache).
func (r *Runtime) interpreter(ctx context.Context) (wazero.Runtime, error) {
	r.interpOnce.Do(func() {
		wz, err := newWazero(ctx, sandboxed(wazero.NewRuntimeConfigInterpreter(), r.cfg.memoryLimit/65536))
		if err != nil {
			r.interpErr = fmt.Errorf("plugin runtime: interpreter: %w", err)
			return
		}
		r.interp = wz
	})
	return r.interp, r.interpErr
}

// compileDeadlineError is the error of a compilation that outlived the
// compile deadline.
type compileDeadlineError struct{ d time.Duration }

func (e *compileDeadlineError) Error() string {
	return "compilation did not finish within the compile deadline " + e.d.String()
}

// runCompile compiles wasm into e and closes e.done, first waiting for the
// compilation slot when slot is set (see compile). wazero's CompileModule
// notices the end of its context only between functions, and only with more
// than one compilation worker (so at least two are used); the compilation
// of one function, the decoding and the validation run to completion. So
// the compilation runs in its own goroutine and e fails at the compile
// deadline, independently of the context of the load that started it
// (other loads may wait on the same entry). At the deadline, or when the
// runtime closes, the compilation's context is cancelled, which stops the
// workers at their next function; the goroutine finishes in the background
// and a module it still produces is closed. The entry stays in the table
// until then, so a load of the same bytes fails at once rather than
// starting another compilation.
func (r *Runtime) runCompile(ctx context.Context, key [32]byte, e *compileEntry, wasm []byte, slot bool) {
	defer r.compiling.Done()
	if slot {
		select {
		case r.compileSlot <- struct{}{}:
			defer func() { <-r.compileSlot }()
		case <-r.closing.Done():
			e.err = ErrClosed
			close(e.done)
			r.forget(key)
			return
		}
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(r.closing, cancel)
	defer stop()
	cctx = experimental.WithCompilationWorkers(cctx, max(2, r.cfg.workers))
	type result struct {
		mod wazero.CompiledModule
		err error
	}
	// The deadline counts from before the compilation starts, and a result
	// that arrives after it is late even when the select below sees the
	// result first (a goroutine descheduled on a loaded machine).
	var expired <-chan time.Time
	var start time.Time
	d := r.cfg.compileDeadline
	if d > 0 {
		start = time.Now()
		t := time.NewTimer(d)
		defer t.Stop()
		expired = t.C
	}
	res := make(chan result, 1)
	go func() {
		mod, err := r.wz.CompileModule(cctx, wasm)
		if cacheFailure(err) && r.cfg.cacheDir != "" {
			// A corrupt cache entry: drop it and compile afresh (cache.go).
			r.dropCacheEntries(err)
			mod, err = r.wz.CompileModule(cctx, wasm)
		}
		if err == nil && r.sealer != nil {
			r.sealer.sealNew() // the entry wazero just wrote
		}
		res <- result{mod, err}
	}()
	var x result
	select {
	case x = <-res:
		if d == 0 || time.Since(start) < d {
			e.mod, e.err = x.mod, x.err
			if e.err != nil {
				r.forget(key) // let a later load retry
			}
			close(e.done)
			return
		}
	case <-expired:
	}
	// Late: the waiting loads fail now; the compilation, told to stop,
	// finishes in the background.
	cancel()
	e.err = &compileDeadlineError{d}
	close(e.done)
	if x.mod == nil && x.err == nil {
		x = <-res
	}
	if x.mod != nil {
		_ = x.mod.Close(context.WithoutCancel(ctx))
	}
	r.forget(key)
}

func (r *Runtime) forget(key [32]byte) {
	r.mu.Lock()
	delete(r.compiled, key)
	r.mu.Unlock()
}

// interpModule is a module compiled by the interpreter and how many
// plugins use it.
type interpModule struct {
	ready chan struct{} // closed when mod or err is set
	mod   wazero.CompiledModule
	err   error
	refs  int
}

// interpCompile returns the interpreter wz's compilation of wasm, whose
// SHA-256 is sum, compiling it at most once for the plugins that use it
// at the same time. Give it back with interpRelease.
func (r *Runtime) interpCompile(ctx context.Context, wz wazero.Runtime, sum [32]byte, wasm []byte) (wazero.CompiledModule, error) {
	r.mu.Lock()
	e, ok := r.interpMods[sum]
	if !ok {
		e = &interpModule{ready: make(chan struct{})}
		if r.interpMods == nil {
			r.interpMods = map[[32]byte]*interpModule{}
		}
		r.interpMods[sum] = e
	}
	e.refs++
	r.mu.Unlock()
	if !ok {
		e.mod, e.err = wz.CompileModule(ctx, wasm)
		close(e.ready)
	}
	select {
	case <-e.ready:
	case <-ctx.Done():
		r.interpRelease(sum)
		return nil, ctx.Err()
	}
	if e.err != nil {
		r.interpRelease(sum)
		return nil, e.err
	}
	return e.mod, nil
}

// interpRelease gives back a module of interpCompile; the last user closes
// it (safe with calls in flight on the interpreter: wazero).
func (r *Runtime) interpRelease(sum [32]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.interpMods[sum]
	if e == nil {
		return
	}
	if e.refs--; e.refs > 0 {
		return
	}
	delete(r.interpMods, sum)
	if e.mod != nil {
		_ = e.mod.Close(context.Background())
	}
}

// WaitCompiled waits until the plugins loaded on the interpreter
// (WithInterpreterFirst) so far have moved to their compiled modules, or
// their compilations failed, or ctx ends.
func (r *Runtime) WaitCompiled(ctx context.Context) error {
	select {
	case <-r.upgrading.zero():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Compiling reports whether a plugin served by the interpreter
// (WithInterpreterFirst) still waits for its compiled module, which
// Close would wait for.
func (r *Runtime) Compiling() bool {
	select {
	case <-r.upgrading.zero():
		return false
	default:
		return true
	}
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
	// Compilations of modules loaded on the interpreter finish first, so
	// that the cache holds them for the next process, unless ctx ends.
	close(r.finishing)
	upgraded := r.upgrading.zero()
	select {
	case <-upgraded:
	case <-ctx.Done():
	}
	// A compilation finishing after the cache closed would write to it.
	// Under r.mu: startCompile starts none after this (compiling.Add
	// happens before compiling.Wait).
	r.mu.Lock()
	r.cancelClosing()
	r.mu.Unlock()
	r.compiling.Wait()
	<-upgraded
	// Calls still running were cancelled with r.closing; wazero must not
	// close a module under a running call (it clears what the call reads),
	// so the runtime waits for their instances to come back, or for ctx.
	for _, p := range plugins {
		p.pool.drain(ctx)
	}
	errs = append(errs, r.wz.Close(ctx), r.cache.Close(ctx))
	r.interpOnce.Do(func() {}) // waits for one being made; no later load makes one
	if r.interp != nil {
		errs = append(errs, r.interp.Close(ctx))
	}
	return errors.Join(errs...)
}

// counter counts work in progress; zero returns a channel closed when the
// count is zero. Unlike a sync.WaitGroup, it may be waited on while work
// is added.
type counter struct {
	mu   sync.Mutex
	n    int
	done chan struct{} // closed when n reaches 0; nil while n is 0
}

func (c *counter) add() {
	c.mu.Lock()
	if c.n == 0 {
		c.done = make(chan struct{})
	}
	c.n++
	c.mu.Unlock()
}

func (c *counter) finish() {
	c.mu.Lock()
	c.n--
	if c.n == 0 {
		close(c.done)
		c.done = nil
	}
	c.mu.Unlock()
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (c *counter) zero() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		return closedChan
	}
	return c.done
}
