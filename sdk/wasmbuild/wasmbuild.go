// Package wasmbuild builds Go plugin packages into WebAssembly reactor
// modules, reproducibly: the same sources, Go version and flags give the
// same bytes on any machine.
//
// The build is
//
//	GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS= GOWORK=off \
//	  go build -buildmode=c-shared -trimpath -buildvcs=false -ldflags="-s -w -buildid=" -o out .
//
// followed by CompactData, which joins the data segments the Go linker
// writes (tens of thousands of them) where only a few zero bytes lie
// between them: the same initial memory in a few dozen segments, which
// the host decodes and copies at every instance start.
//
// Cache keeps built modules under a directory, keyed by a hash of
// everything that determines the output: the Go version, the flags, and the
// path and bytes of every source file of the package and of its non-standard
// dependencies (standard packages are pinned by the Go version). The
// plugins/internal/wasmbuild command builds the first-party plugins with it;
// sdk/plugintest uses the cache inside go test.
package wasmbuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Flags are the fixed go build flags of every guest module.
var Flags = []string{"-buildmode=c-shared", "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid="}

// CacheEnv names the environment variable that overrides the cache directory.
const CacheEnv = "WEIR_WASMBUILD_CACHE"

// pinned are the environment settings that could change the output.
var pinned = [][2]string{
	{"CGO_ENABLED", "0"}, {"GOARCH", "wasm"}, {"GOFLAGS", ""}, {"GOOS", "wasip1"}, {"GOWORK", "off"},
}

// Env is the environment of every go command this package runs: the
// caller's, with the target and the settings that could change the output
// pinned.
func Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !isPinned(k) {
			env = append(env, kv)
		}
	}
	for _, kv := range pinned {
		env = append(env, kv[0]+"="+kv[1])
	}
	return env
}

func isPinned(k string) bool {
	for _, kv := range pinned {
		if kv[0] == k {
			return true
		}
	}
	return false
}

// goTool is the go command: $GOROOT/bin/go when GOROOT is set, else "go"
// from PATH.
func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}

// Build builds the main package in dir into the file out.
func Build(ctx context.Context, dir, out string) error {
	absOut, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	args := append([]string{"build"}, Flags...)
	args = append(args, "-o", absOut, ".")
	cmd := exec.CommandContext(ctx, goTool(), args...)
	cmd.Dir = dir
	cmd.Env = Env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build %s: %w\n%s", dir, err, strings.TrimSpace(stderr.String()))
	}
	wasm, err := os.ReadFile(absOut)
	if err != nil {
		return err
	}
	compact, err := CompactData(wasm)
	if err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	return os.WriteFile(absOut, compact, 0o644)
}

// DefaultCacheDir is $WEIR_WASMBUILD_CACHE, else os.UserCacheDir()/weir/wasmbuild,
// else a directory under os.TempDir().
func DefaultCacheDir() string {
	if dir := os.Getenv(CacheEnv); dir != "" {
		return dir
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "weir", "wasmbuild")
	}
	return filepath.Join(os.TempDir(), "weir-wasmbuild")
}

// Cache builds modules into a directory keyed by content hash.
type Cache struct {
	Dir  string // "" means DefaultCacheDir()
	Jobs int    // parallel builds; 0 means GOMAXPROCS
}

// Build returns the path of the cached module of each package directory,
// building the ones whose content hash is not cached yet: the first alone,
// the rest in parallel. A directory named twice (or two with the same
// content hash) is built once. Processes sharing the directory build one
// at a time (an flock on its .lock file), so each module is built once.
func (c *Cache) Build(ctx context.Context, dirs ...string) ([]string, error) {
	if len(dirs) == 0 {
		return nil, nil
	}
	cacheDir := c.Dir
	if cacheDir == "" {
		cacheDir = DefaultCacheDir()
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("wasmbuild cache %s: %w", cacheDir, err)
	}
	keys, err := Keys(ctx, dirs...)
	if err != nil {
		return nil, err
	}
	paths := make([]string, len(dirs))
	var missing []int // one index per module to build: a directory named twice builds once
	for i := range dirs {
		paths[i] = filepath.Join(cacheDir, keys[i]+".wasm")
		if _, err := os.Stat(paths[i]); err != nil && !slices.ContainsFunc(missing, func(j int) bool { return paths[j] == paths[i] }) {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return paths, nil
	}
	// One process builds at a time: test packages that go test runs side
	// by side would otherwise each compile the same wasip1 standard library
	// into a cold build cache. A module another process built meanwhile is
	// not built again.
	unlock, err := lockDir(ctx, cacheDir)
	if err != nil {
		return nil, fmt.Errorf("wasmbuild cache %s: %w", cacheDir, err)
	}
	defer unlock()
	missing = slices.DeleteFunc(missing, func(i int) bool {
		_, err := os.Stat(paths[i])
		return err == nil
	})
	if len(missing) == 0 {
		return paths, nil
	}
	build := func(i int) error {
		tmp, err := os.CreateTemp(cacheDir, "build-*.tmp")
		if err != nil {
			return err
		}
		tmp.Close()
		defer os.Remove(tmp.Name())
		if err := Build(ctx, dirs[i], tmp.Name()); err != nil {
			return err
		}
		return os.Rename(tmp.Name(), paths[i])
	}
	// The first build runs alone, so that the parallel ones find what they
	// share (the standard library, common dependencies) in go's build
	// cache instead of all compiling it at once.
	if err := build(missing[0]); err != nil {
		return nil, err
	}
	errs := make([]error, len(missing))
	jobs := c.Jobs
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for k, i := range missing[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[k] = build(i)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return paths, nil
}

// listedPackage is the part of `go list -json` output Keys reads.
type listedPackage struct {
	ImportPath string
	Dir        string
	Name       string
	Standard   bool
	GoFiles    []string
	SFiles     []string
	EmbedFiles []string
	Deps       []string
	Error      *struct{ Err string }
}

// Keys returns the content hash of each package directory's build.
func Keys(ctx context.Context, dirs ...string) ([]string, error) {
	abs := make([]string, len(dirs))
	for i, d := range dirs {
		a, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		abs[i] = a
	}
	version, err := goOutput(ctx, abs[0], "env", "GOVERSION")
	if err != nil {
		return nil, err
	}
	out, err := goOutput(ctx, abs[0], append([]string{"list", "-deps",
		"-json=ImportPath,Dir,Name,Standard,GoFiles,SFiles,EmbedFiles,Deps,Error"}, abs...)...)
	if err != nil {
		return nil, err
	}
	byPath := map[string]*listedPackage{}
	byDir := map[string]*listedPackage{}
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		p := new(listedPackage)
		if err := dec.Decode(p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("wasmbuild: reading go list output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("wasmbuild: package %s: %s", p.ImportPath, p.Error.Err)
		}
		byPath[p.ImportPath] = p
		byDir[p.Dir] = p
	}
	keys := make([]string, len(abs))
	for i, dir := range abs {
		target := byDir[dir]
		if target == nil {
			return nil, fmt.Errorf("wasmbuild: no Go package in %s", dir)
		}
		if target.Name != "main" {
			return nil, fmt.Errorf("wasmbuild: %s is package %s, want a main package", dir, target.Name)
		}
		h := sha256.New()
		fmt.Fprintf(h, "weir-wasmbuild v2\n%s\n%s\n%v\n", strings.TrimSpace(version), strings.Join(Flags, " "), pinned)
		pkgs := append([]string{target.ImportPath}, target.Deps...)
		sort.Strings(pkgs)
		for _, path := range pkgs {
			p := byPath[path]
			if p == nil {
				return nil, fmt.Errorf("wasmbuild: go list did not describe dependency %s", path)
			}
			if p.Standard {
				continue
			}
			fmt.Fprintf(h, "package %s\n", p.ImportPath)
			files := append(append(append([]string(nil), p.GoFiles...), p.SFiles...), p.EmbedFiles...)
			sort.Strings(files)
			for _, f := range files {
				b, err := os.ReadFile(filepath.Join(p.Dir, f))
				if err != nil {
					return nil, fmt.Errorf("wasmbuild: %w", err)
				}
				fmt.Fprintf(h, "file %s %d\n", f, len(b))
				h.Write(b)
			}
		}
		keys[i] = hex.EncodeToString(h.Sum(nil))
	}
	return keys, nil
}

func goOutput(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, goTool(), args...)
	cmd.Dir = dir
	cmd.Env = Env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
