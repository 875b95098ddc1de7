package plugin_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/plugins"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
)

// Assembling raw modules: the ABI exports with trivial bodies (functions 0
// to 3), then one function per extra body, all of type () -> ().

func uleb(v uint32) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		if v >>= 7; v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func wasmSection(id byte, count int, entries ...[]byte) []byte {
	body := uleb(uint32(count))
	for _, e := range entries {
		body = append(body, e...)
	}
	return append(append([]byte{id}, uleb(uint32(len(body)))...), body...)
}

func wasmExport(name string, kind byte, index uint32) []byte {
	return append(append(append(uleb(uint32(len(name))), name...), kind), uleb(index)...)
}

// abiModule is a module that passes the import and export checks, with the
// extra function bodies (each without its size, ending in 0x0b).
func abiModule(extra ...[]byte) []byte {
	types := wasmSection(1, 4,
		[]byte{0x60, 0, 0},                   // 0: () -> ()
		[]byte{0x60, 0, 1, 0x7f},             // 1: () -> i32
		[]byte{0x60, 1, 0x7f, 1, 0x7f},       // 2: (i32) -> i32
		[]byte{0x60, 2, 0x7f, 0x7f, 1, 0x7e}) // 3: (i32, i32) -> i64
	bodies := [][]byte{{0x00, 0x0b}, {0x00, 0x41, 0x01, 0x0b}, {0x00, 0x41, 0x00, 0x0b}, {0x00, 0x42, 0x00, 0x0b}}
	funcs := [][]byte{{0}, {1}, {2}, {3}}
	for _, b := range extra {
		bodies = append(bodies, b)
		funcs = append(funcs, []byte{0})
	}
	code := make([][]byte, len(bodies))
	for i, b := range bodies {
		code[i] = append(uleb(uint32(len(b))), b...)
	}
	b := []byte("\x00asm\x01\x00\x00\x00")
	b = append(b, types...)
	b = append(b, wasmSection(3, len(funcs), funcs...)...)
	b = append(b, wasmSection(5, 1, []byte{0x00, 0x01})...)
	b = append(b, wasmSection(7, 5,
		wasmExport(abi.ExportMemory, 2, 0), wasmExport(abi.ExportInitialize, 0, 0),
		wasmExport(abi.ExportVersion, 0, 1), wasmExport(abi.ExportInput, 0, 2), wasmExport(abi.ExportCall, 0, 3))...)
	return append(b, wasmSection(10, len(code), code...)...)
}

// repeatBody is a body without locals: prefix, n copies of instr, suffix,
// and the final end.
func repeatBody(prefix []byte, n int, instr []byte, suffix []byte) []byte {
	b := append([]byte{0x00}, prefix...)
	b = append(b, bytes.Repeat(instr, n)...)
	b = append(b, suffix...)
	return append(b, 0x0b)
}

func nestedBlocks(depth int) []byte {
	return repeatBody(bytes.Repeat([]byte{0x02, 0x40}, depth), 0, nil, bytes.Repeat([]byte{0x0b}, depth))
}

// TestHostileModulesRefusedBeforeCompiling: modules whose compilation would
// take minutes are refused by the pre-check, with the rule in the error.
// Each of these took wazero from seconds to minutes to compile; the
// pre-check walks them in milliseconds.
func TestHostileModulesRefusedBeforeCompiling(t *testing.T) {
	tooMany := make([][]byte, plugin.DefaultMaxFunctions)
	for i := range tooMany {
		tooMany[i] = []byte{0x00, 0x0b}
	}
	cases := []struct {
		name string
		wasm []byte
		want string
	}{
		{"nesting", abiModule(nestedBlocks(100_000)),
			`plugin "nesting": load: module rejected: control nesting depth 100000 exceeds the limit 4096 (function 4)`},
		{"loops", abiModule(nestedBlocks(2), repeatBody(nil, 100_000, []byte{0x03, 0x40, 0x0b}, nil)),
			`plugin "loops": load: module rejected: control instruction count 100000 exceeds the limit 16384 (function 5)`},
		{"branches", abiModule(repeatBody([]byte{0x02, 0x40}, 50_000, []byte{0x41, 0x00, 0x0d, 0x00}, []byte{0x0b})),
			`plugin "branches": load: module rejected: control instruction count 50001 exceeds the limit 16384 (function 4)`},
		{"huge body", abiModule(repeatBody(nil, 2<<20, []byte{0x01}, nil)),
			`plugin "huge body": load: module rejected: function body size 2097154 bytes exceeds the limit 1048576 bytes (function 4)`},
		{"too many functions", abiModule(tooMany...),
			`plugin "too many functions": load: module rejected: function count 100004 exceeds the limit 100000`},
		{"unknown opcode", abiModule([]byte{0x00, 0xfb, 0x00, 0x0b}),
			`plugin "unknown opcode": load: module rejected: function 4 cannot be pre-checked: unknown opcode 0xfb 0 at body offset 1`},
	}
	rt := plugintest.Runtime(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A generous bound against a regression to compiling: the
			// nesting case alone took minutes.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			p, err := rt.Load(ctx, tc.name, tc.wasm)
			require.Nil(t, p)
			require.ErrorIs(t, err, plugin.ErrInvalidModule)
			require.EqualError(t, err, tc.want)
		})
	}
}

func TestModuleLimitsOption(t *testing.T) {
	ctx := context.Background()
	wasm := abiModule(nestedBlocks(10))
	strict, err := plugin.NewRuntime(ctx, plugin.WithCacheDir(""), plugin.WithModuleLimits(plugin.ModuleLimits{MaxNesting: 5}))
	require.NoError(t, err)
	defer strict.Close(ctx)
	_, err = strict.Load(ctx, "nested", wasm)
	require.EqualError(t, err, `plugin "nested": load: module rejected: control nesting depth 10 exceeds the limit 5 (function 4)`)

	// With the rule disabled the module gets as far as starting, where the
	// stub exports are not a working plugin.
	lax, err := plugin.NewRuntime(ctx, plugin.WithCacheDir(""), plugin.WithModuleLimits(plugin.ModuleLimits{}))
	require.NoError(t, err)
	defer lax.Close(ctx)
	_, err = lax.Load(ctx, "nested", wasm)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "module rejected")
}

// TestCompileDeadline: a module within the limits whose compilation
// outlives the deadline fails the load with the deadline named.
func TestCompileDeadline(t *testing.T) {
	ctx := context.Background()
	// 500 loops in one function: well within the limits, and a compile of
	// milliseconds, a thousand times the deadline.
	wasm := abiModule(repeatBody(nil, 500, []byte{0x03, 0x40, 0x0b}, nil))
	rt, err := plugin.NewRuntime(ctx, plugin.WithCacheDir(""), plugin.WithCompileDeadline(time.Microsecond))
	require.NoError(t, err)
	defer rt.Close(ctx)
	_, err = rt.Load(ctx, "slow", wasm)
	require.ErrorIs(t, err, plugin.ErrInvalidModule)
	require.ErrorIs(t, err, plugin.ErrDeadline)
	require.EqualError(t, err, `plugin "slow": load: module rejected: compilation did not finish within the compile deadline 1µs`)
}

// TestFirstPartyModulesPassThePreCheck: the limits leave the first-party
// plugins (Go wasip1 modules) a wide margin.
func TestFirstPartyModulesPassThePreCheck(t *testing.T) {
	tight := plugin.ModuleLimits{
		MaxFunctions: plugin.DefaultMaxFunctions / 7,
		MaxBodySize:  plugin.DefaultMaxBodySize / 7,
		MaxCodeSize:  plugin.DefaultMaxCodeSize / 7,
		MaxNesting:   plugin.DefaultMaxNesting / 7,
		MaxControl:   plugin.DefaultMaxControl / 7,
	}
	for name, wasm := range plugins.FirstParty {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, plugin.CheckModule(wasm, plugin.DefaultModuleLimits()))
			require.NoError(t, plugin.CheckModule(wasm, tight), "a seventh of each default limit still admits it")
		})
	}
}

func BenchmarkPreCheck(b *testing.B) {
	var name string
	for n, wasm := range plugins.FirstParty {
		if len(wasm) > len(plugins.FirstParty[name]) {
			name = n
		}
	}
	wasm := plugins.FirstParty[name]
	b.Logf("%s: %d bytes", name, len(wasm))
	b.SetBytes(int64(len(wasm)))
	b.ReportAllocs()
	for b.Loop() {
		if err := plugin.CheckModule(wasm, plugin.DefaultModuleLimits()); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCheckedModulesAreRecordedByLimits: a module that passed the code
// check and compiled is recorded in the cache directory, and a new runtime
// with the same limits neither walks it again nor compiles it (the compile
// hook stays quiet); other limits, another module and a runtime without a
// cache directory check and compile again, and limits that refuse the
// module still refuse it.
func TestCheckedModulesAreRecordedByLimits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// Ten nested blocks: within the default limits, over a nesting limit
	// of 5. The stub exports compile but are not a working plugin, so
	// every load fails at start, after the check and the compilation.
	wasm := abiModule(nestedBlocks(10))
	load := func(name string, wasm []byte, opts ...plugin.RuntimeOption) (compiled []string, err error) {
		var mu sync.Mutex
		hook := plugin.WithCompileHook(func(p string) {
			mu.Lock()
			compiled = append(compiled, p)
			mu.Unlock()
		})
		rt, err := plugin.NewRuntime(ctx, append([]plugin.RuntimeOption{plugin.WithCacheDir(dir), hook}, opts...)...)
		require.NoError(t, err)
		defer rt.Close(ctx)
		_, err = rt.Load(ctx, name, wasm)
		return compiled, err
	}
	notRejected := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		require.NotContains(t, err.Error(), "module rejected")
	}

	compiled, err := load("first", wasm)
	notRejected(t, err)
	require.Equal(t, []string{"first"}, compiled, "an empty cache compiles")

	compiled, err = load("again", wasm)
	notRejected(t, err)
	require.Empty(t, compiled, "the same module under the same limits is known")

	_, err = load("strict", wasm, plugin.WithModuleLimits(plugin.ModuleLimits{MaxNesting: 5}))
	require.EqualError(t, err, `plugin "strict": load: module rejected: control nesting depth 10 exceeds the limit 5 (function 4)`)

	compiled, err = load("other-limits", wasm, plugin.WithModuleLimits(plugin.ModuleLimits{MaxNesting: 20}))
	notRejected(t, err)
	require.Equal(t, []string{"other-limits"}, compiled, "other limits check again")

	_, err = load("deeper", abiModule(nestedBlocks(11)), plugin.WithModuleLimits(plugin.ModuleLimits{MaxNesting: 10}))
	require.EqualError(t, err, `plugin "deeper": load: module rejected: control nesting depth 11 exceeds the limit 10 (function 4)`,
		"another module is checked, whatever was recorded for its neighbour")

	compiled, err = load("memory", wasm, plugin.WithCacheDir(""))
	notRejected(t, err)
	require.Equal(t, []string{"memory"}, compiled, "without a cache directory every runtime compiles")
}

// TestUnknownModulesWaitForTheCompileSlot: a module not known to the cache
// waits while another compilation holds the slot, and fails with the
// runtime closed if it closes meanwhile; a known module, read from the
// cache, does not wait.
func TestUnknownModulesWaitForTheCompileSlot(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	known := abiModule(nestedBlocks(3))
	queued := make(chan string, 2)
	rt, err := plugin.NewRuntime(ctx, plugin.WithCacheDir(dir), plugin.WithCompileHook(func(p string) { queued <- p }))
	require.NoError(t, err)
	_, err = rt.Load(ctx, "known", known) // compiles and records it
	require.Error(t, err)
	require.NotContains(t, err.Error(), "module rejected")
	require.Equal(t, "known", <-queued)
	require.NoError(t, rt.Close(ctx))

	rt, err = plugin.NewRuntime(ctx, plugin.WithCacheDir(dir), plugin.WithCompileHook(func(p string) { queued <- p }))
	require.NoError(t, err)
	release := plugin.HoldCompileSlot(rt)
	defer release()
	_, err = rt.Load(ctx, "known", known)
	require.Error(t, err, "the stub exports fail at start")
	require.NotContains(t, err.Error(), "module rejected", "a known module compiled while the slot was held")

	done := make(chan error, 1)
	go func() {
		_, err := rt.Load(ctx, "new", abiModule(nestedBlocks(4)))
		done <- err
	}()
	require.Equal(t, "new", <-queued)
	require.NoError(t, rt.Close(ctx))
	err = <-done
	require.ErrorIs(t, err, plugin.ErrClosed)
	require.EqualError(t, err, `plugin "new": load: runtime is closed`)
}
