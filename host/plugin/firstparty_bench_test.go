package plugin_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/plugins"
)

// BaselineModuleEnv names a first-party module file that
// BenchmarkFirstPartyModule measures beside the embedded one, interleaved
// in one run, so that a change to the module's size is measured against
// the module before it.
const BaselineModuleEnv = "WEIR_FIRSTPARTY_BASELINE"

// BenchmarkFirstPartyModule measures what the first-party module's size
// costs a new process: wazero's CompileModule on a hit in the on-disk
// compilation cache from a fresh runtime (decode, validate, read the
// machine code), starting one instance of the compiled module (wazero's
// instantiate, copying the data segments, and the guest's _initialize:
// the Go runtime and the package initialisation of the three plugins),
// and the plugin runtime's warm load of the three names. Besides the wall
// time it reports the process's CPU time per op (cpu-ns/op), the figure to
// read on a shared, loaded machine.
func BenchmarkFirstPartyModule(b *testing.B) {
	ctx := context.Background()
	variants := []struct {
		name string
		wasm []byte
	}{{"embedded", plugins.FirstParty[plugins.SystemPrompt]}}
	if path := os.Getenv(BaselineModuleEnv); path != "" {
		wasm, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		variants = append([]struct {
			name string
			wasm []byte
		}{{"baseline", wasm}}, variants...)
	}
	// Each measure runs over the variants in turn, so the two builds
	// share the machine's load.
	b.Run("cache-hit-compile", func(b *testing.B) {
		for _, v := range variants {
			b.Run(v.name+"/size="+strconv.Itoa(len(v.wasm)>>10)+"KiB", func(b *testing.B) {
				dir := b.TempDir()
				warm, err := wazero.NewCompilationCacheWithDir(dir)
				if err != nil {
					b.Fatal(err)
				}
				r := newWazero(b, warm)
				if _, err := r.CompileModule(ctx, v.wasm); err != nil {
					b.Fatal(err)
				}
				r.Close(ctx)
				warm.Close(ctx)
				defer reportCPU(b)()
				for b.Loop() {
					cache, err := wazero.NewCompilationCacheWithDir(dir)
					if err != nil {
						b.Fatal(err)
					}
					r := newWazero(b, cache)
					if _, err := r.CompileModule(ctx, v.wasm); err != nil {
						b.Fatal(err)
					}
					r.Close(ctx)
					cache.Close(ctx)
				}
			})
		}
	})
	b.Run("instantiate", func(b *testing.B) {
		for _, v := range variants {
			b.Run(v.name, func(b *testing.B) {
				r := newWazero(b, nil)
				defer r.Close(ctx)
				cm, err := r.CompileModule(ctx, v.wasm)
				if err != nil {
					b.Fatal(err)
				}
				defer reportCPU(b)()
				for b.Loop() {
					m, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize"))
					if err != nil {
						b.Fatal(err)
					}
					m.Close(ctx)
				}
			})
		}
	})
	b.Run("load-warm", func(b *testing.B) {
		for _, v := range variants {
			b.Run(v.name, func(b *testing.B) {
				dir := b.TempDir()
				load := func() {
					rt, err := plugin.NewRuntime(ctx, plugin.WithCacheDir(dir))
					if err != nil {
						b.Fatal(err)
					}
					defer rt.Close(ctx)
					for _, name := range firstParty {
						if _, err := rt.Load(ctx, name, v.wasm); err != nil {
							b.Fatal(err)
						}
					}
				}
				load()
				defer reportCPU(b)()
				for b.Loop() {
					load()
				}
			})
		}
	})
}

// reportCPU starts measuring the process's CPU time; the function it
// returns reports it per op.
func reportCPU(b *testing.B) func() {
	start := processCPU()
	return func() {
		if cpu := processCPU() - start; cpu > 0 && b.N > 0 {
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}
