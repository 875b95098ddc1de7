package plugin

import (
	"runtime"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/weirhost/weir/sdk/abi"
)

// Defaults of the runtime and plugin options.
const (
	DefaultMemoryLimit     = 64 << 20 // hard cap of a guest's linear memory
	DefaultSoftMemoryLimit = 48 << 20 // an instance that grew past this is replaced
	DefaultOutputLimit     = 4 << 20  // largest output frame accepted
	DefaultInputLimit      = 16 << 20 // largest request written to a guest
	DefaultStateLimit      = 1 << 20  // largest state blob a plugin may return
	DefaultMaxCalls        = 10000    // calls before an instance is replaced
	DefaultStdioLimit      = 64 << 10 // bytes of stdout and of stderr kept per call
)

// Defaults of the module limits, checked before a module is compiled (see
// ModuleLimits). The first-party plugins, Go wasip1 modules of 3.4 to 5.7
// MB, have at most 3,104 functions, 3.6 MB of code, a largest body of
// 29,238 bytes (a function of the Go runtime), a nesting depth of 549 and
// 1,286 control instructions in one function; each default is at least
// seven times that.
const (
	DefaultMaxFunctions    = 100_000
	DefaultMaxBodySize     = 1 << 20  // bytes of one function body
	DefaultMaxCodeSize     = 32 << 20 // bytes of all function bodies
	DefaultMaxNesting      = 4096     // nested block, loop, if, try in one function
	DefaultMaxControl      = 16384    // control instructions in one function
	DefaultCompileDeadline = time.Minute
)

// ModuleLimits bound what a module may contain to be compiled. wazero's
// compiler takes time quadratic in the number of blocks and branches of a
// function and in their nesting (a 300 KB function of 100,000 nested blocks
// takes minutes), so Load walks the code section first, in time linear in
// its size, and refuses a module over any limit with an error naming the
// rule. A zero field disables that rule.
type ModuleLimits struct {
	MaxFunctions int // functions the module defines (imports not counted)
	MaxBodySize  int // bytes of one function body
	MaxCodeSize  int // bytes of all function bodies together
	MaxNesting   int // depth of nested block, loop, if, try and try_table in one function
	// MaxControl bounds the control instructions of one function: block,
	// loop, if, else, try, try_table, catch, catch_all, br, br_if, br_table,
	// br_on_null, br_on_non_null.
	MaxControl int
}

// DefaultModuleLimits returns the default module limits.
func DefaultModuleLimits() ModuleLimits {
	return ModuleLimits{
		MaxFunctions: DefaultMaxFunctions,
		MaxBodySize:  DefaultMaxBodySize,
		MaxCodeSize:  DefaultMaxCodeSize,
		MaxNesting:   DefaultMaxNesting,
		MaxControl:   DefaultMaxControl,
	}
}

// Default deadlines per provider kind. The lifecycle deadline covers starting
// an instance (including the guest's runtime initialisation), init and
// describe.
var defaultDeadlines = map[abi.Kind]time.Duration{
	abi.KindUnspecified:  2 * time.Second,
	abi.KindSystemPrompt: 1 * time.Second,
	abi.KindCompaction:   2 * time.Second,
	abi.KindTokenMeter:   1 * time.Second,
}

type runtimeConfig struct {
	cacheDir        string
	memoryLimit     uint64
	workers         int
	logger          hclog.Logger
	moduleLimits    ModuleLimits
	compileDeadline time.Duration
	compileHook     func(plugin string)
	interpFirst     bool
}

// RuntimeOption configures NewRuntime.
type RuntimeOption func(*runtimeConfig)

// WithCacheDir stores compiled modules in dir (created if missing), so that
// later runtimes, in this process or another, skip compiling them; "" (the
// default) keeps them in memory only, for this runtime.
func WithCacheDir(dir string) RuntimeOption {
	return func(c *runtimeConfig) { c.cacheDir = dir }
}

// WithMemoryLimit caps every guest's linear memory (rounded down to 64 KiB
// pages; a Go guest needs at least 4 MiB to start).
func WithMemoryLimit(bytes uint64) RuntimeOption {
	return func(c *runtimeConfig) { c.memoryLimit = bytes }
}

// WithCompileWorkers sets the number of parallel compilation workers
// (default GOMAXPROCS; at least 2 are used, since wazero stops a cancelled
// compilation between functions only when it runs in parallel).
func WithCompileWorkers(n int) RuntimeOption {
	return func(c *runtimeConfig) { c.workers = n }
}

// WithLogger sets the logger; plugin output and lifecycle events are logged
// under "plugin" with the plugin's name.
func WithLogger(l hclog.Logger) RuntimeOption {
	return func(c *runtimeConfig) { c.logger = l }
}

// WithModuleLimits replaces the limits a module must satisfy to be compiled
// (default DefaultModuleLimits()).
func WithModuleLimits(l ModuleLimits) RuntimeOption {
	return func(c *runtimeConfig) { c.moduleLimits = l }
}

// WithCompileDeadline bounds the compilation of a module (default
// DefaultCompileDeadline; 0 is no deadline), counted from its start:
// modules not known to the disk cache compile one at a time, and one
// waiting for another has not started. A load whose compilation is
// not done by then fails; wazero cannot interrupt the compilation of a
// function, so it finishes in the background and its result is discarded.
// Until it finishes, loading the same module bytes fails at once.
func WithCompileDeadline(d time.Duration) RuntimeOption {
	return func(c *runtimeConfig) { c.compileDeadline = d }
}

// WithCompileHook calls f with the plugin's name when a Load is about to
// compile a module this runtime's cache directory is not known to hold:
// one that no earlier Load checked and compiled there under the same
// module limits (every module, without a cache directory). It runs on the
// loading goroutine, before the compilation; concurrent loads call it
// concurrently. A host uses it to say why the first start is slow.
func WithCompileHook(f func(plugin string)) RuntimeOption {
	return func(c *runtimeConfig) { c.compileHook = f }
}

// WithInterpreterFirst serves a module the cache directory is not known to
// hold (the same modules as WithCompileHook) from wazero's interpreter
// while the compiler compiles it in the background, instead of making its
// Load wait for the compilation: the interpreter starts a module about ten
// times sooner and runs it several times slower. Once the compilation is
// done, new instances start from it and the interpreter's instances are
// retired as they come back to the pool; a call in flight finishes where
// it runs. Both engines run under the same memory cap, deadlines
// (CloseOnContextDone) and host modules, so a call gets the same result
// from either, as from any new instance. Deadlines are meant for compiled
// code: a call that exceeds its deadline on the interpreter, and did not
// ask the host for a summary, waits for the compiled module and runs again
// on a new instance of it; an instance that does not start within its
// deadline there waits the same way, and a load whose first instance does
// not compiles the module then, as without the interpreter. The
// compilation starts after the plugin's first
// call, or a second after its load, so that it does not slow the first
// calls. The module limits apply as before; a compilation that fails or
// outlives the compile deadline is logged and leaves the plugin on the
// interpreter. Runtime.Close starts the compilations not yet started and
// waits for them, so that the cache holds them for the next process, until
// its context ends. The interpreter's code takes about 35 bytes of memory
// per byte of function code while it is in use.
func WithInterpreterFirst(on bool) RuntimeOption {
	return func(c *runtimeConfig) { c.interpFirst = on }
}

func defaultRuntimeConfig() runtimeConfig {
	return runtimeConfig{
		memoryLimit:     DefaultMemoryLimit,
		workers:         runtime.GOMAXPROCS(0),
		logger:          hclog.NewNullLogger(),
		moduleLimits:    DefaultModuleLimits(),
		compileDeadline: DefaultCompileDeadline,
	}
}

type pluginConfig struct {
	config          []byte
	deadlines       map[abi.Kind]time.Duration
	outputLimit     int
	inputLimit      int
	stateLimit      int
	softMemoryLimit uint64
	maxCalls        int
	maxInstances    int
	stdioLimit      int
}

// Option configures Runtime.Load.
type Option func(*pluginConfig)

// WithConfig passes the plugin's configuration (JSON) to init of every new
// instance.
func WithConfig(json []byte) Option {
	return func(c *pluginConfig) { c.config = append([]byte(nil), json...) }
}

// WithDeadline sets the deadline of calls of one provider kind;
// abi.KindUnspecified sets the lifecycle deadline (instance start, init,
// describe).
func WithDeadline(kind abi.Kind, d time.Duration) Option {
	return func(c *pluginConfig) { c.deadlines[kind] = d }
}

// WithOutputLimit caps the size of an output frame.
func WithOutputLimit(n int) Option { return func(c *pluginConfig) { c.outputLimit = n } }

// WithInputLimit caps the size of a request.
func WithInputLimit(n int) Option { return func(c *pluginConfig) { c.inputLimit = n } }

// WithStateLimit caps the state blob a plugin may return.
func WithStateLimit(n int) Option { return func(c *pluginConfig) { c.stateLimit = n } }

// WithSoftMemoryLimit replaces an instance after a call that left its memory
// larger than n bytes.
func WithSoftMemoryLimit(n uint64) Option { return func(c *pluginConfig) { c.softMemoryLimit = n } }

// WithMaxCalls replaces an instance after n calls.
func WithMaxCalls(n int) Option { return func(c *pluginConfig) { c.maxCalls = n } }

// WithMaxInstances bounds the number of live instances, hence concurrent
// calls (default GOMAXPROCS); further calls wait for a free instance.
func WithMaxInstances(n int) Option { return func(c *pluginConfig) { c.maxInstances = n } }

// WithStdioLimit caps how much guest stdout and stderr is kept per call.
func WithStdioLimit(n int) Option { return func(c *pluginConfig) { c.stdioLimit = n } }

func defaultPluginConfig() pluginConfig {
	c := pluginConfig{
		deadlines:       map[abi.Kind]time.Duration{},
		outputLimit:     DefaultOutputLimit,
		inputLimit:      DefaultInputLimit,
		stateLimit:      DefaultStateLimit,
		softMemoryLimit: DefaultSoftMemoryLimit,
		maxCalls:        DefaultMaxCalls,
		maxInstances:    runtime.GOMAXPROCS(0),
		stdioLimit:      DefaultStdioLimit,
	}
	for k, d := range defaultDeadlines {
		c.deadlines[k] = d
	}
	return c
}

func (c *pluginConfig) deadline(k abi.Kind) time.Duration {
	if d, ok := c.deadlines[k]; ok && d > 0 {
		return d
	}
	return defaultDeadlines[abi.KindUnspecified]
}
