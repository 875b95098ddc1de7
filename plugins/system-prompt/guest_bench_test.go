package systemprompt

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/plugins"
	"github.com/weirhost/weir/sdk/abi"
)

// BenchmarkGuestLanguage measures what the plugin's guest language costs a
// warm start, the Go standalone module against the C port, interleaved in
// one run (each measure runs over the modules in turn), beside the shipped
// first-party module (all three Go plugins in one module) as "firstparty":
//
//   - cache-hit-compile: wazero's CompileModule on a hit in the on-disk
//     compilation cache from a fresh runtime (decode, validate, read the
//     machine code), reporting the module's bytes and its code section's;
//
//   - instance-ready: wazero's instantiate with _initialize, then the
//     ABI's init (with the test configuration) and describe through the
//     module's exports, reporting the linear memory pages (64 KiB) the
//     ready instance holds;
//
//   - load-warm: the plugin runtime's Load from a fresh runtime over a warm
//     disk cache (compile, the checks, the first instance, init, describe),
//     what a new process pays per module;
//
//   - first-render: a Load on a runtime over the warm disk cache (the
//     first instance, init, describe), the plugin's first prompt.render
//     (render-ns/op: the render alone) and its close.
//
// -count repeats each sub-benchmark in a row; a shell loop of single runs
// interleaves the modules:
//
//	for i in 1 2 3; do CI=true go test -run XXX -bench GuestLanguage ./plugins/system-prompt; done
func BenchmarkGuestLanguage(b *testing.B) {
	ctx := context.Background()
	mods := append(modules(b), module{"firstparty", plugins.FirstParty[plugins.SystemPrompt]})
	cfg := []byte(testConfig)
	req := &abi.RenderRequest{
		Sections: []abi.Section{{Key: "identity", Text: "You are Weir."}, {Key: "tools", Text: strings.Repeat("Use the tools. ", 200)},
			{Key: "style", Text: "Default style."}},
		Route:    abi.Route{Provider: "deepseek", Model: "deepseek-reasoner"},
		HostData: []abi.KeyValue{{Key: "date", Value: "2025-05-01"}, {Key: "cwd", Value: "/home/me/proj"}},
	}
	b.Run("cache-hit-compile", func(b *testing.B) {
		for _, m := range mods {
			b.Run(m.name, func(b *testing.B) {
				dir := b.TempDir()
				compile := func() {
					cache, err := wazero.NewCompilationCacheWithDir(dir)
					if err != nil {
						b.Fatal(err)
					}
					r := wazero.NewRuntimeWithConfig(ctx, runtimeConfig().WithCompilationCache(cache))
					if _, err := r.CompileModule(ctx, m.wasm); err != nil {
						b.Fatal(err)
					}
					r.Close(ctx)
					cache.Close(ctx)
				}
				compile()
				for b.Loop() {
					compile()
				}
				b.ReportMetric(float64(len(m.wasm)), "module-bytes")
				b.ReportMetric(float64(codeSection(b, m.wasm)), "code-bytes")
			})
		}
	})
	b.Run("instance-ready", func(b *testing.B) {
		for _, m := range mods {
			b.Run(m.name, func(b *testing.B) {
				r := wazero.NewRuntimeWithConfig(ctx, runtimeConfig())
				defer r.Close(ctx)
				cm, err := r.CompileModule(ctx, m.wasm)
				if err != nil {
					b.Fatal(err)
				}
				standIns(b, r, cm)
				init := (&abi.InitRequest{Plugin: Name, Config: cfg, AbiMajor: abi.Major}).Encode(nil)
				var pages uint32
				for b.Loop() {
					mod, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize"))
					if err != nil {
						b.Fatal(err)
					}
					call(b, mod, abi.MethodInit, init)
					call(b, mod, abi.MethodDescribe, nil)
					pages = mod.Memory().Size() >> 16
					mod.Close(ctx)
				}
				b.ReportMetric(float64(pages), "pages")
			})
		}
	})
	b.Run("load-warm", func(b *testing.B) {
		for _, m := range mods {
			b.Run(m.name, func(b *testing.B) {
				dir := b.TempDir()
				load := func() {
					rt, err := plugin.NewRuntime(ctx, plugin.WithCacheDir(dir))
					if err != nil {
						b.Fatal(err)
					}
					defer rt.Close(ctx)
					if _, err := rt.Load(ctx, Name, m.wasm, plugin.WithConfig(cfg)); err != nil {
						b.Fatal(err)
					}
				}
				load()
				for b.Loop() {
					load()
				}
			})
		}
	})
	b.Run("first-render", func(b *testing.B) {
		for _, m := range mods {
			b.Run(m.name, func(b *testing.B) {
				rt, err := plugin.NewRuntime(ctx, plugin.WithCacheDir(b.TempDir()))
				if err != nil {
					b.Fatal(err)
				}
				defer rt.Close(ctx)
				load := func() *plugin.Plugin {
					p, err := rt.Load(ctx, Name, m.wasm, plugin.WithConfig(cfg))
					if err != nil {
						b.Fatal(err)
					}
					return p
				}
				if err := load().Close(ctx); err != nil { // fills the disk cache
					b.Fatal(err)
				}
				var render time.Duration
				for b.Loop() {
					p := load()
					start := time.Now()
					if _, err := p.RenderPrompt(ctx, nil, req); err != nil {
						b.Fatal(err)
					}
					render += time.Since(start)
					if err := p.Close(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(render.Nanoseconds())/float64(b.N), "render-ns/op")
			})
		}
	})
}

// runtimeConfig is the wazero configuration the plugin runtime uses.
func runtimeConfig() wazero.RuntimeConfig {
	return wazero.NewRuntimeConfig().WithCloseOnContextDone(true).WithMemoryLimitPages(plugin.DefaultMemoryLimit / 65536)
}

// standIns instantiates WASI and, for the module's weir imports, functions
// of the same types that do nothing: init and describe call none of them.
func standIns(b *testing.B, r wazero.Runtime, cm wazero.CompiledModule) {
	ctx := context.Background()
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	hb := r.NewHostModuleBuilder(abi.ImportModule)
	for _, f := range cm.ImportedFunctions() {
		if mod, name, _ := f.Import(); mod == abi.ImportModule {
			results := f.ResultTypes()
			hb.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
				for i := range results {
					stack[i] = 0
				}
			}), f.ParamTypes(), results).Export(name)
		}
	}
	if _, err := hb.Instantiate(ctx); err != nil {
		b.Fatal(err)
	}
}

// call runs one ABI call through the module's exports: the input into the
// buffer weir_input returns, then weir_call, whose Response must say OK.
func call(b *testing.B, mod api.Module, method abi.Method, in []byte) {
	ctx := context.Background()
	res, err := mod.ExportedFunction(abi.ExportInput).Call(ctx, uint64(len(in)))
	if err != nil {
		b.Fatal(err)
	}
	if !mod.Memory().Write(uint32(res[0]), in) {
		b.Fatal("weir_input returned a buffer outside the memory")
	}
	res, err = mod.ExportedFunction(abi.ExportCall).Call(ctx, uint64(method), uint64(len(in)))
	if err != nil {
		b.Fatal(err)
	}
	frame, ok := mod.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
	var resp abi.Response
	if !ok {
		b.Fatalf("%v: the output frame lies outside the memory", method)
	}
	if err := resp.Decode(frame); err != nil || resp.Status != abi.StatusOK {
		b.Fatalf("%v: status %v %q (%v)", method, resp.Status, resp.Error, err)
	}
}

// codeSection is the size of the module's code section (id 10).
func codeSection(b *testing.B, wasm []byte) int {
	for p := 8; p < len(wasm); {
		id := wasm[p]
		n, w := uleb(wasm[p+1:])
		p += 1 + w
		if id == 10 {
			return n
		}
		p += n
	}
	b.Fatal("no code section")
	return 0
}

func uleb(b []byte) (int, int) {
	v, shift := 0, 0
	for i, c := range b {
		v |= int(c&0x7f) << shift
		if c < 0x80 {
			return v, i + 1
		}
		shift += 7
	}
	return v, len(b)
}
