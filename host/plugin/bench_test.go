package plugin_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
)

// benchModules are compiled in the compile benchmarks: an SDK plugin and a
// raw-ABI one without the SDK.
var benchModules = []string{"benign", "hostile/garbage"}

func newWazero(b *testing.B, cache wazero.CompilationCache) wazero.Runtime {
	b.Helper()
	ctx := context.Background()
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(true).WithMemoryLimitPages(plugin.DefaultMemoryLimit / 65536)
	if cache != nil {
		rc = rc.WithCompilationCache(cache)
	}
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	// Stand-ins for the weir host functions, so modules importing them can
	// be instantiated outside the plugin runtime.
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	sigs := map[string][2][]api.ValueType{
		abi.ImportSurfaceNodes: {{i32, i32}, {i32}}, abi.ImportMessage: {{i64, i32, i32}, {i32}},
		abi.ImportGenerations: {{i32, i32}, {i32}}, abi.ImportHeader: {{i32, i32}, {i32}},
		abi.ImportMeasure: {{i32, i32}, {i32}}, abi.ImportSummarize: {{i32, i32, i32, i32}, {i32}},
		abi.ImportCountTokens: {{i32, i32, i32, i32}, {i64}}, abi.ImportLastError: {{i32, i32}, {i32}},
	}
	hb := r.NewHostModuleBuilder(abi.ImportModule)
	for name, sig := range sigs {
		hb.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(context.Context, api.Module, []uint64) {}), sig[0], sig[1]).Export(name)
	}
	if _, err := hb.Instantiate(ctx); err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkCompile compares a cold compile (empty cache), with one and with
// GOMAXPROCS workers, against a hit in the on-disk compilation cache from a
// fresh runtime (what a new process pays).
func BenchmarkCompile(b *testing.B) {
	ctx := context.Background()
	for _, name := range benchModules {
		wasm := module(b, name)
		b.Run(name+"/size="+strconv.Itoa(len(wasm)>>10)+"KiB", func(b *testing.B) {
			for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
				b.Run("cold/workers="+strconv.Itoa(workers), func(b *testing.B) {
					cctx := experimental.WithCompilationWorkers(ctx, workers)
					for b.Loop() {
						r := newWazero(b, nil)
						if _, err := r.CompileModule(cctx, wasm); err != nil {
							b.Fatal(err)
						}
						r.Close(ctx)
					}
				})
			}
			b.Run("disk-cache-hit", func(b *testing.B) {
				dir := b.TempDir()
				warm, err := wazero.NewCompilationCacheWithDir(dir)
				if err != nil {
					b.Fatal(err)
				}
				r := newWazero(b, warm)
				if _, err := r.CompileModule(ctx, wasm); err != nil {
					b.Fatal(err)
				}
				r.Close(ctx)
				for b.Loop() {
					cache, _ := wazero.NewCompilationCacheWithDir(dir)
					r := newWazero(b, cache)
					if _, err := r.CompileModule(ctx, wasm); err != nil {
						b.Fatal(err)
					}
					r.Close(ctx)
					cache.Close(ctx)
				}
			})
		})
	}
}

// BenchmarkInstantiate measures starting an instance: wazero's instantiate
// plus the guest's _initialize, and the plugin runtime's full start (the
// same plus version check and init) amortised into a call, by retiring the
// instance after every call.
func BenchmarkInstantiate(b *testing.B) {
	ctx := context.Background()
	wasm := module(b, "benign")
	b.Run("wazero", func(b *testing.B) {
		r := newWazero(b, nil)
		defer r.Close(ctx)
		cm, err := r.CompileModule(ctx, wasm)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			m, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize"))
			if err != nil {
				b.Fatal(err)
			}
			m.Close(ctx)
		}
	})
	b.Run("plugin-start-and-call", func(b *testing.B) {
		p := plugintest.LoadBytes(b, "benign", wasm, plugin.WithMaxCalls(1))
		req := &abi.RenderRequest{Route: abi.Route{Model: "echo"}, Sections: []abi.Section{{Text: "x"}}}
		for b.Loop() {
			if _, err := p.RenderPrompt(ctx, nil, req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

var payloads = []struct {
	name string
	size int
}{{"0B", 0}, {"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}}

// BenchmarkRoundTrip is one prompt.render on a warm instance: the host
// encodes a request carrying the payload, the guest decodes it and returns
// the payload as the prompt, the host validates, copies and decodes it.
func BenchmarkRoundTrip(b *testing.B) {
	ctx := context.Background()
	p := plugintest.LoadBytes(b, "benign", module(b, "benign"), plugin.WithMaxInstances(1))
	for _, pl := range payloads {
		req := &abi.RenderRequest{Route: abi.Route{Model: "echo"}, Sections: []abi.Section{{Key: "k", Text: strings.Repeat("p", pl.size)}}}
		b.Run("wasm/"+pl.name, func(b *testing.B) {
			b.SetBytes(int64(pl.size))
			for b.Loop() {
				got, err := p.RenderPrompt(ctx, nil, req)
				if err != nil || len(got) != pl.size {
					b.Fatal(err, len(got))
				}
			}
		})
		b.Run("native/"+pl.name, func(b *testing.B) {
			b.SetBytes(int64(pl.size))
			var in, out []byte
			var guestReq abi.RenderRequest
			for b.Loop() {
				got, err := nativeRoundTrip(req, &in, &out, &guestReq)
				if err != nil || len(got) != pl.size {
					b.Fatal(err, len(got))
				}
			}
		})
	}
}

// nativeRoundTrip does the same work as the wasm round trip with plain Go
// calls: encode the request, decode it on the "guest" side, encode the
// framed result, copy and decode it on the "host" side.
func nativeRoundTrip(req *abi.RenderRequest, in, out *[]byte, guestReq *abi.RenderRequest) (string, error) {
	*in = req.Encode((*in)[:0])
	if err := guestReq.Decode(*in); err != nil {
		return "", err
	}
	prompt := render(guestReq)
	res := abi.RenderResult{Prompt: prompt}
	resp := abi.Response{Result: res.Encode(nil)}
	*out = resp.Encode((*out)[:0])
	frame := append([]byte(nil), *out...)
	var r abi.Response
	if err := r.Decode(frame); err != nil {
		return "", err
	}
	var rr abi.RenderResult
	err := rr.Decode(r.Result)
	return rr.Prompt, err
}

//go:noinline
func render(req *abi.RenderRequest) string { return req.Sections[0].Text }
