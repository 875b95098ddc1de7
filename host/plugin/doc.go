// Package plugin is Weir's WebAssembly plugin runtime: it loads plugin
// modules, sandboxes them and calls them through the ABI of docs/abi.md.
//
// # Model
//
// One Runtime per process owns one wazero runtime (compiler engine), the
// WASI and "weir" host modules, and a compilation cache: in memory by
// default, on disk in the directory WithCacheDir names (the package reads
// no environment variable and writes no file unless told). Compiling a Go
// plugin takes seconds, so a program that starts often should give a
// cache directory (the command-line host uses $WEIR_WAZERO_CACHE, else
// os.UserCacheDir()/weir/wazero). Every entry of a cache directory is
// sealed with an HMAC under a per-user key kept beside it (CacheKeyPath);
// an entry that does not verify is dropped and compiled again, never run
// (seal.go). Compilation uses parallel workers.
//
// Runtime.Load validates a module before compiling it (export names and
// signatures, memory export, import allow-list: the WASI functions a Go
// wasip1 guest needs, minus sockets, plus the weir namespace, and the
// ModuleLimits on its code, walked in linear time because the compiler's
// time is quadratic in a function's blocks and branches), compiles it
// (once per content hash per process, within the compile deadline; with a
// cache directory, a module that passed the code walk and compiled is
// recorded there and not walked again under the same limits), starts a first instance, checks its
// ABI version, asks it to describe itself and initialises it with the
// plugin's configuration. The result is a Plugin. With WithInterpreterFirst, a
// module not yet in the cache starts on wazero's interpreter (compiled
// about ten times sooner, run several times slower) and moves to the
// compiled module when the compiler, running in the background, is done.
//
// A Plugin keeps a pool of interchangeable instances. Every call checks one
// out exclusively, writes the encoded request into the guest's input buffer,
// calls the dispatcher, validates and copies the output frame at once, and
// decodes it. An instance is discarded and later replaced after a trap, a
// deadline, a cancellation, a malformed or oversized output, a recovered
// panic, after its memory grew past the soft limit, and after a fixed number
// of calls. A plugin error (the guest reporting it could not do the work)
// leaves the instance in the pool.
//
// # Sandbox
//
// Instances see no filesystem, network, arguments or environment; clocks
// are wazero's fake clocks and random numbers are deterministic, so a replay
// decides the same. Linear memory is capped (WithMemoryLimit, 64 MiB by
// default). Each instance's memory is a reservation of the cap's address
// space outside the Go heap, made accessible page by page as the guest
// grows it (internal/linmem): memory.grow never copies, the collector
// never scans or counts guest memory, and the pages are unmapped once both
// the module and its instance are closed, so a runtime closed under a
// running call cannot pull memory from under it. Every call runs under a deadline per provider kind with
// CloseOnContextDone, so even a guest that never yields is stopped. Guest
// stdout and stderr go to bounded buffers and are logged through hclog under
// the plugin's name.
//
// # Host imports
//
// Calls receive a Host, the caller's read-only view of the session. The
// weir host functions answer guest queries from it, encoding into guest
// buffers, and never call back into the guest. Which imports a call may use
// depends on its provider kind (abi.Granted); a Host method returning
// ErrNotGranted, or a nil Host, reads as "not granted" in the guest. Time
// spent in Host.Summarize does not count against the call's deadline.
//
// Errors always name the plugin, the operation and the reason, for example
//
//	plugin "x": call prompt.render: deadline 50ms exceeded; instance replaced
//
// and match the sentinels of this package with errors.Is.
package plugin
