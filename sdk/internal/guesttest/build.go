// Package guesttest builds the example plugins of the non-Go SDKs (sdk/c,
// sdk/assemblyscript) and drives them under the real host in tests: it
// compiles them with their toolchains into the content-hash cache
// sdk/wasmbuild uses, builds the host command once per test binary, and
// runs offline sessions that load the plugins through configuration alone.
//
// A missing toolchain fails the test when CI=true and skips it with a
// message saying what to install otherwise.
package guesttest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/weirhost/weir/sdk/wasmbuild"
)

// RepoRoot is the module root: the nearest folder above the test's
// working folder that holds go.mod.
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	root := moduleRoot()
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		tb.Fatalf("guesttest: no go.mod above the working folder: %v", err)
	}
	return root
}

// Stopper is the part of testing.TB that Missing uses.
type Stopper interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// Missing fails the test in CI (CI=true) and skips it elsewhere: a
// toolchain the test needs is not installed.
func Missing(tb Stopper, what, install string) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("%s is missing and CI=true: %s (.ci/run installs it)", what, install)
		return
	}
	tb.Skipf("skipped: %s is missing; %s to run this test", what, install)
}

// CCompileFlags are the flags that compile each C source of a guest to an
// object file, and CLinkFlags the flags that link the objects into the
// module; README.md of sdk/c states both for authors. The two steps are
// separate on purpose: clang runs binaryen's wasm-opt after linking when
// the link command carries an -O flag and wasm-opt is on PATH, and the
// wasm-opt a system installs may reject the bulk-memory instructions
// -mbulk-memory emits ("Fatal: error validating input"). A link without
// -O never runs it, so the build is the same with or without binaryen.
var (
	CCompileFlags = []string{"--target=wasm32-wasi", "-mbulk-memory", "-O2", "-Wall", "-Wextra", "-Werror"}
	CLinkFlags    = []string{"--target=wasm32-wasi", "-mexec-model=reactor", "-Wl,--strip-all"}
)

// sysroot is the --sysroot flag when WASI_SYSROOT names one. Debian's
// wasi-libc installs its headers and libc under its multiarch layout
// (/usr/include/wasm32-wasi), which clang finds without --sysroot.
func sysroot() []string {
	if s := os.Getenv("WASI_SYSROOT"); s != "" {
		return []string{"--sysroot=" + s}
	}
	return nil
}

// CompileC builds the C sources srcs (each compiled with the SDK's
// include folder inc) into the module out with the documented commands:
// one clang -c per source into a folder next to out, then one link. env
// is the commands' environment (nil: the test's own).
func CompileC(inc, out string, srcs []string, env []string) error {
	objs := make([]string, 0, len(srcs))
	for i, src := range srcs {
		obj := fmt.Sprintf("%s.%d.o", out, i)
		args := append(append(append([]string{}, sysroot()...), CCompileFlags...), "-I", inc, "-c", "-o", obj, src)
		if err := runClang(args, env); err != nil {
			return err
		}
		defer os.Remove(obj)
		objs = append(objs, obj)
	}
	args := append(append(append([]string{}, sysroot()...), CLinkFlags...), "-o", out)
	return runClang(append(args, objs...), env)
}

func runClang(args, env []string) error {
	cmd := exec.Command("clang", args...)
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		if bytes.Contains(b, []byte("wasi")) || bytes.Contains(b, []byte("libclang_rt")) {
			return fmt.Errorf("clang: %v (is wasi-libc and libclang-rt-dev-wasm32 installed?)\n%s", err, b)
		}
		return fmt.Errorf("clang: %v\n%s", err, b)
	}
	return nil
}

// toolVersion is the first line of a tool's --version output, part of the
// cache key.
// Versions are asked once per test binary (node takes a second to start).
func toolVersion(tb testing.TB, name string, args ...string) string {
	tb.Helper()
	cmdline := name + " " + strings.Join(args, " ")
	if v, ok := versions.Load(cmdline); ok {
		return v.(string)
	}
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("guesttest: %s: %v\n%s", cmdline, err, out)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	versions.Store(cmdline, line)
	return line
}

var versions sync.Map

// cached returns the cache path for key, building it with build (which
// writes the module to the path it is given) when it is not there yet.
func cached(tb testing.TB, prefix, key string, build func(out string) error) []byte {
	tb.Helper()
	dir := wasmbuild.DefaultCacheDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatalf("guesttest: cache %s: %v", dir, err)
	}
	path := filepath.Join(dir, prefix+"-"+key+".wasm")
	if b, err := os.ReadFile(path); err == nil {
		return b
	}
	tmp, err := os.MkdirTemp(dir, "build-*")
	if err != nil {
		tb.Fatalf("guesttest: %v", err)
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "out.wasm")
	if err := build(out); err != nil {
		tb.Fatalf("guesttest: build %s module: %v", prefix, err)
	}
	if err := os.Rename(out, path); err != nil {
		tb.Fatalf("guesttest: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("guesttest: %v", err)
	}
	return b
}

// hashFiles adds the relative path and bytes of every file to h's input.
func hashFiles(tb testing.TB, h *bytes.Buffer, root string, files []string) {
	tb.Helper()
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			tb.Fatalf("guesttest: %v", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(f), len(b))
		h.Write(b)
	}
}

func digest(h *bytes.Buffer) string {
	sum := sha256.Sum256(h.Bytes())
	return hex.EncodeToString(sum[:16])
}

// BuildC compiles the C plugin in dir (relative to sdk/c, such as
// "examples/prompt", holding its .c files) with weir.c and returns the
// module bytes. Modules
// are cached by a hash of clang's version, the flags and the sources.
func BuildC(tb testing.TB, dir string) []byte {
	tb.Helper()
	if _, err := exec.LookPath("clang"); err != nil {
		Missing(tb, "clang", "apt-get install clang lld wasi-libc libclang-rt-dev-wasm32")
	}
	if _, err := exec.LookPath("wasm-ld"); err != nil {
		Missing(tb, "wasm-ld (lld)", "apt-get install lld")
	}
	root := filepath.Join(RepoRoot(tb), "sdk", "c")
	inc := filepath.Join(root, "weir")
	srcs, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(dir), "*.c"))
	if err != nil || len(srcs) == 0 {
		tb.Fatalf("guesttest: no C sources in sdk/c/%s", dir)
	}
	rel := []string{"weir/weir.c", "weir/weir.h"}
	for _, s := range srcs {
		r, _ := filepath.Rel(root, s)
		rel = append(rel, r)
	}
	var h bytes.Buffer
	fmt.Fprintf(&h, "%s\x00%s\x00%s\x00%s\x00", toolVersion(tb, "clang", "--version"),
		strings.Join(sysroot(), " "), strings.Join(CCompileFlags, " "), strings.Join(CLinkFlags, " "))
	hashFiles(tb, &h, root, rel)
	return cached(tb, "c-"+filepath.Base(dir), digest(&h), func(out string) error {
		return CompileC(inc, out, append(srcs, filepath.Join(inc, "weir.c")), nil)
	})
}

// ASFlags are the asc flags of every AssemblyScript guest build; README.md
// of sdk/assemblyscript states them for authors.
var ASFlags = []string{
	"--runtime", "incremental", "--exportStart", "_initialize",
	"--use", "abort=weir/index/weirAbort",
	"-O3", "--noAssert",
}

// BuildAS compiles the AssemblyScript plugin in dir (relative to
// sdk/assemblyscript, such as "examples/prompt", holding index.ts) with the
// pinned compiler
// installed by npm ci and returns the module bytes, cached by a hash of
// node's and asc's versions, the flags and every .ts source of the SDK.
func BuildAS(tb testing.TB, dir string) []byte {
	tb.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		Missing(tb, "node", "install Node.js 20")
	}
	root := filepath.Join(RepoRoot(tb), "sdk", "assemblyscript")
	asc := filepath.Join(root, "node_modules", "assemblyscript", "bin", "asc.js")
	if _, err := os.Stat(asc); err != nil {
		Missing(tb, "the AssemblyScript compiler", "run npm ci in sdk/assemblyscript")
	}
	var srcs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "node_modules" {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".ts") || strings.HasSuffix(p, ".json")) {
			r, _ := filepath.Rel(root, p)
			srcs = append(srcs, r)
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("guesttest: %v", err)
	}
	entry := filepath.Join(filepath.FromSlash(dir), "index.ts")
	var h bytes.Buffer
	fmt.Fprintf(&h, "%s\x00%s\x00%s\x00%s\x00", toolVersion(tb, "node", "--version"),
		toolVersion(tb, "node", asc, "--version"), strings.Join(ASFlags, " "), entry)
	hashFiles(tb, &h, root, srcs)
	return cached(tb, "as-"+filepath.Base(dir), digest(&h), func(out string) error {
		args := append([]string{asc, entry, "-o", out}, ASFlags...)
		cmd := exec.Command("node", args...)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("asc: %v\n%s", err, b)
		}
		return nil
	})
}
