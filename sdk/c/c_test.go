// Package c_test builds the C SDK's example plugins with clang and runs
// them under the real host: in the sandbox directly, and in offline
// sessions that load them through weir.yaml alone.
package c_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/internal/guesttest"
)

func TestMain(m *testing.M) { guesttest.Main(m) }

func TestDescribe(t *testing.T) {
	guesttest.Describe(t, guesttest.BuildC(t, "examples/prompt"), "c-prompt", "weir-c/", abi.KindSystemPrompt)
	guesttest.Describe(t, guesttest.BuildC(t, "examples/compaction"), "c-compaction", "weir-c/", abi.KindCompaction)
}

func TestPrompt(t *testing.T) { guesttest.Prompt(t, guesttest.BuildC(t, "examples/prompt")) }

func TestCompaction(t *testing.T) {
	guesttest.Compaction(t, guesttest.BuildC(t, "examples/compaction"))
}

func TestSession(t *testing.T) {
	guesttest.Session(t, guesttest.Plugins{
		Prompt:     guesttest.BuildC(t, "examples/prompt"),
		Compaction: guesttest.BuildC(t, "examples/compaction"),
	})
}

func TestFailures(t *testing.T) {
	guesttest.Failures(t, guesttest.BuildC(t, "testdata/failing"), "trapping as asked")
}

// A token meter written at the wire level with the SDK's protobuf helpers.
func TestWireLevelMeter(t *testing.T) { guesttest.Meter(t, guesttest.BuildC(t, "testdata/meter")) }

// The documented build (compile, then link without -O) never runs
// binaryen's wasm-opt, so it works the same whether a wasm-opt is on PATH
// or not: here a wasm-opt that always fails comes first on PATH, and then
// PATH holds only clang and wasm-ld.
func TestBuildIgnoresWasmOpt(t *testing.T) {
	guesttest.BuildC(t, "examples/prompt") // skips or fails when the toolchain is missing
	clang, err := exec.LookPath("clang")
	require.NoError(t, err)
	lds, err := filepath.Glob(filepath.Join(filepath.Dir(clang), "wasm-ld*")) // Debian's clang asks for wasm-ld-<major>
	require.NoError(t, err)
	require.NotEmpty(t, lds, "no wasm-ld next to clang")

	failing := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(failing, "wasm-opt"),
		[]byte("#!/bin/sh\necho 'wasm-opt must not run' >&2\nexit 1\n"), 0o755))
	only := t.TempDir()
	require.NoError(t, os.Symlink(clang, filepath.Join(only, "clang")))
	for _, ld := range lds {
		require.NoError(t, os.Symlink(ld, filepath.Join(only, filepath.Base(ld))))
	}

	root := filepath.Join(guesttest.RepoRoot(t), "sdk", "c")
	srcs := []string{filepath.Join(root, "examples", "prompt", "prompt.c"), filepath.Join(root, "weir", "weir.c")}
	for _, tc := range []struct{ name, path string }{
		{"failing wasm-opt first on PATH", failing + string(os.PathListSeparator) + os.Getenv("PATH")},
		{"no wasm-opt on PATH", only},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "prompt.wasm")
			env := append(os.Environ(), "PATH="+tc.path)
			require.NoError(t, guesttest.CompileC(filepath.Join(root, "weir"), out, srcs, env))
			wasm, err := os.ReadFile(out)
			require.NoError(t, err)
			guesttest.Describe(t, wasm, "c-prompt", "weir-c/", abi.KindSystemPrompt)
		})
	}
}

// The minor-2 parts of the ABI through the SDK.
func TestMinor2(t *testing.T) { guesttest.Minor2(t, guesttest.BuildC(t, "testdata/minor2")) }
