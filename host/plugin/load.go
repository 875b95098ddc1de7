package plugin

import (
	"context"
	"crypto/sha256"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/weirhost/weir/host/plugin/internal/wasmparse"
	"github.com/weirhost/weir/sdk/abi"
)

// wasiAllowed are the wasi_snapshot_preview1 functions a Go wasip1 guest may
// import: what Go's runtime and syscall package use, without the socket
// functions. With no preopened directories, no arguments and no
// environment, the file functions only reach stdin, stdout and stderr.
var wasiAllowed = map[string]bool{
	"args_get": true, "args_sizes_get": true, "environ_get": true, "environ_sizes_get": true,
	"clock_time_get": true, "random_get": true, "poll_oneoff": true, "sched_yield": true,
	"proc_exit": true, "fd_write": true, "fd_read": true, "fd_close": true, "fd_seek": true,
	"fd_sync": true, "fd_pread": true, "fd_pwrite": true, "fd_readdir": true,
	"fd_fdstat_get": true, "fd_fdstat_set_flags": true, "fd_fdstat_set_rights": true,
	"fd_filestat_get": true, "fd_filestat_set_size": true,
	"fd_prestat_get": true, "fd_prestat_dir_name": true,
	"path_open": true, "path_create_directory": true, "path_filestat_get": true,
	"path_filestat_set_times": true, "path_link": true, "path_readlink": true,
	"path_remove_directory": true, "path_rename": true, "path_symlink": true,
	"path_unlink_file": true,
}

// requiredExports are the function exports of the ABI and their signatures.
var requiredExports = map[string]wasmparse.FuncType{
	abi.ExportVersion:    {Results: []wasmparse.ValueType{i32}},
	abi.ExportInput:      {Params: []wasmparse.ValueType{i32}, Results: []wasmparse.ValueType{i32}},
	abi.ExportCall:       {Params: []wasmparse.ValueType{i32, i32}, Results: []wasmparse.ValueType{i64}},
	abi.ExportInitialize: {},
}

// Load validates, compiles and starts the plugin module wasm under name.
// Validation happens before compilation, so a refused module costs little:
// the imports and exports are checked, then the code section is walked
// against the module limits (WithModuleLimits), and the compilation is
// bounded by the compile deadline (WithCompileDeadline). With a cache
// directory, a module that passed the walk and compiled is recorded there
// and not walked again under the same limits (see checked.go).
// The first instance is started, version-checked, initialised with the
// configuration (WithConfig) and asked to describe itself; a failure of any
// of these fails the load.
// With WithInterpreterFirst, a module the cache directory is not known to
// hold is compiled by wazero's interpreter instead, and the compiler's
// compilation runs in the background once the plugin has served its first
// call (see WithInterpreterFirst).
func (r *Runtime) Load(ctx context.Context, name string, wasm []byte, opts ...Option) (*Plugin, error) {
	cfg := defaultPluginConfig()
	for _, o := range opts {
		o(&cfg)
	}
	p := &Plugin{name: name, rt: r, cfg: cfg, log: r.log.Named(name).With("plugin", name)}
	p.pool = newPool(cfg.maxInstances, p.stale)
	invalid := func(detail string, err error) error {
		return p.fail("load", ErrInvalidModule, detail, err)
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, p.fail("load", ErrClosed, "runtime is closed", nil)
	}
	mod, err := wasmparse.Parse(wasm)
	if err != nil {
		return nil, invalid("not a valid WebAssembly module: "+err.Error(), err)
	}
	if problems := r.check(mod); len(problems) > 0 {
		return nil, invalid(strings.Join(problems, "; "), nil)
	}
	sum := r.moduleSum(wasm)
	defer r.releaseSum(wasm)
	p.sum = sum
	record := r.checkedPath(sum)
	checked := isChecked(record) // passed before under these limits and rules: see checked.go
	if !checked {
		if _, err := mod.CheckCode(wasmparse.CodeLimits(r.cfg.moduleLimits)); err != nil { // see CheckModule
			return nil, invalid("module rejected: "+err.Error(), err)
		}
	}
	var onCompile func()
	if hook := r.cfg.compileHook; hook != nil && !checked {
		onCompile = func() { hook(name) }
	}
	interp := r.cfg.interpFirst && !checked
	if interp {
		// Served by the interpreter now; compiled after the load (below).
		wz, err := r.interpreter(ctx)
		if err != nil {
			return nil, err
		}
		if onCompile != nil {
			onCompile()
		}
		mod, err := r.interpCompile(ctx, wz, sum, wasm)
		if err != nil {
			return nil, invalid("compile: "+err.Error(), err)
		}
		p.code = &code{wz: wz, mod: mod, interp: true}
		p.called, p.compiled = make(chan struct{}), make(chan struct{})
	}
	// compileNow compiles the module with the compiler and makes it the
	// plugin's code.
	compileNow := func() error {
		compiled, err := r.compile(ctx, sum, wasm, checked, onCompile)
		if err != nil {
			var late *compileDeadlineError
			switch {
			case errors.Is(err, ErrClosed):
				return p.fail("load", ErrClosed, "runtime is closed", nil)
			case errors.As(err, &late):
				return p.fail("load", ErrInvalidModule, "module rejected: "+err.Error(), ErrDeadline)
			}
			return invalid("compile: "+err.Error(), err)
		}
		p.code = &code{wz: r.wz, mod: compiled}
		if !checked {
			r.markChecked(record)
		}
		return nil
	}
	if !interp {
		if err := compileNow(); err != nil {
			return nil, err
		}
	}
	// An interpreter module no instance uses any more is closed (an
	// instance that started is closed by the pool).
	discardInterp := func() {
		if interp {
			r.interpRelease(sum)
		}
	}

	in, err := p.pool.get(ctx, p.start)
	if err != nil && interp && errors.Is(err, ErrDeadline) {
		// The start deadline is set for compiled code; on a busy machine
		// the interpreter can take longer to start the guest's runtime.
		// Such a load compiles now instead, as without the interpreter.
		p.log.Debug("first instance exceeded its start deadline on the interpreter; compiling now")
		discardInterp()
		interp, onCompile = false, nil
		p.called, p.compiled = nil, nil
		if err := compileNow(); err != nil {
			return nil, err
		}
		in, err = p.pool.get(ctx, p.start)
	}
	if err != nil {
		discardInterp()
		return nil, relabel(err, "load")
	}
	var desc abi.Description
	fail, discard := in.call(ctx, nil, abi.MethodDescribe, (&abi.DescribeRequest{}).Encode, desc.Decode)
	if fail != nil {
		p.pool.put(in, true)
		discardInterp()
		return nil, relabel(fail, "load")
	}
	if len(desc.Kinds) == 0 {
		p.pool.put(in, true)
		discardInterp()
		return nil, invalid("module describes no provider kind", nil)
	}
	p.desc = desc
	p.pool.put(in, discard)

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		p.pool.close()
		discardInterp()
		return nil, p.fail("load", ErrClosed, "runtime is closed", nil)
	}
	r.plugins[p] = struct{}{}
	if interp {
		// The compilation starts once the module has shown it works and
		// has served its first call (or compileDelay after the load, or
		// when the runtime closes), so that it does not take the CPU from
		// the first calls. r.mu is held: startCompile takes it, so start
		// it from the goroutine.
		r.upgrading.add()
		go func() {
			t := time.NewTimer(compileDelay)
			select {
			case <-p.called:
			case <-t.C:
			case <-r.finishing:
			}
			t.Stop()
			e, err := r.startCompile(ctx, sum, wasm, false, true, nil)
			if err != nil {
				r.upgrading.finish()
				return
			}
			p.upgrade(e, record)
		}()
	}
	p.log.Debug("loaded", "kinds", kindNames(desc.Kinds), "version", desc.Version, "sdk", desc.Sdk)
	return p, nil
}

// moduleSum returns the SHA-256 of wasm. Loads that overlap in time and
// are handed the same slice (the first-party module under its three
// names, loaded in parallel) hash it once: the caller may not change the
// bytes while a load of them runs, so what the first of them hashed is
// what the others read. A load that starts after all of them ended hashes
// again. Each call is paired with a releaseSum.
func (r *Runtime) moduleSum(wasm []byte) [32]byte {
	k := sumKey{unsafe.SliceData(wasm), len(wasm)}
	r.mu.Lock()
	e, ok := r.sums[k]
	if !ok {
		e = &sumEntry{done: make(chan struct{})}
		r.sums[k] = e
	}
	e.users++
	r.mu.Unlock()
	if ok {
		<-e.done
		return e.sum
	}
	e.sum = sha256.Sum256(wasm)
	close(e.done)
	return e.sum
}

// releaseSum ends a moduleSum of wasm.
func (r *Runtime) releaseSum(wasm []byte) {
	k := sumKey{unsafe.SliceData(wasm), len(wasm)}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.sums[k]; e != nil {
		if e.users--; e.users == 0 {
			delete(r.sums, k)
		}
	}
}

// sumKey names a module slice by its address and length (see moduleSum).
type sumKey struct {
	data *byte
	n    int
}

// sumEntry is the hash of a module slice while loads of it overlap.
type sumEntry struct {
	done  chan struct{}
	sum   [32]byte
	users int
}

// compileDelay is how long after its load the compilation of a plugin
// served by the interpreter starts at the latest (see Load).
const compileDelay = time.Second

// relabel prefixes the operation of a plugin error with the load.
func relabel(err error, op string) error {
	var pe *Error
	if errors.As(err, &pe) {
		cp := *pe
		cp.Op = op + ": " + pe.Op
		cp.Replaced = false
		return &cp
	}
	return err
}

// check validates imports and exports; it returns one line per problem.
func (r *Runtime) check(mod *wasmparse.Module) []string {
	var problems []string
	for _, imp := range mod.Imports {
		where := strconv.Quote(imp.Module) + "." + strconv.Quote(imp.Name)
		if imp.Kind != wasmparse.KindFunc {
			problems = append(problems, "module imports "+imp.Kind.String()+" "+where+", which is not allowed")
			continue
		}
		switch imp.Module {
		case wasiModule:
			if strings.HasPrefix(imp.Name, "sock_") {
				problems = append(problems, "module imports "+where+", which is not allowed (plugins have no network)")
				continue
			}
			def, ok := r.wasiSigs[imp.Name]
			if !wasiAllowed[imp.Name] || !ok {
				problems = append(problems, "module imports "+where+", which is not allowed")
				continue
			}
			want := wasmparse.FuncType{Params: parseTypes(def.ParamTypes()), Results: parseTypes(def.ResultTypes())}
			if !imp.Type.Equal(want) {
				problems = append(problems, "module imports "+where+" with signature "+imp.Type.String()+", want "+want.String())
			}
		case abi.ImportModule:
			want, ok := hostImports[imp.Name]
			if !ok {
				problems = append(problems, "module imports "+where+", which the host does not provide")
				continue
			}
			if !imp.Type.Equal(want) {
				problems = append(problems, "module imports "+where+" with signature "+imp.Type.String()+", want "+want.String())
			}
		default:
			problems = append(problems, "module imports "+where+", which is not allowed")
		}
	}
	names := make([]string, 0, len(requiredExports))
	for n := range requiredExports {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		want := requiredExports[n]
		e, ok := mod.Export(n)
		switch {
		case !ok:
			problems = append(problems, "module does not export function "+strconv.Quote(n))
		case e.Kind != wasmparse.KindFunc:
			problems = append(problems, "module exports "+strconv.Quote(n)+" as a "+e.Kind.String()+", want a function")
		case !e.Type.Equal(want):
			problems = append(problems, "module exports "+strconv.Quote(n)+" with signature "+e.Type.String()+", want "+want.String())
		}
	}
	if e, ok := mod.Export(abi.ExportMemory); !ok || e.Kind != wasmparse.KindMemory {
		problems = append(problems, "module does not export its memory as "+strconv.Quote(abi.ExportMemory))
	}
	return dedupe(problems)
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	out := s[:0]
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

func kindNames(ks []abi.Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = k.String()
	}
	return strings.Join(s, ",")
}
