// Command wasmbuild builds every module under plugins/ (a directory
// holding a Go main package: today firstparty, the first-party module) into
// plugins/<name>/<name>.wasm, reproducibly (see sdk/wasmbuild for the exact
// flags). With -check it builds into a temporary directory instead and
// fails when a committed module is missing, stale or left over, which CI
// runs to keep the committed bytes honest.
//
// Usage:
//
//	go run ./plugins/internal/wasmbuild [-check] [-dir plugins] [name ...]
//
// Only the directories right under plugins/ count: internal and testdata
// directories and directories without a Go main package are skipped, so a
// plugin's own package (plugins/token-meter) and its standalone build
// (plugins/token-meter/standalone) are not committed modules.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/weirhost/weir/sdk/wasmbuild"
)

func main() {
	check := flag.Bool("check", false, "build into a temporary directory and compare with the committed modules")
	dir := flag.String("dir", "", "plugins directory (default: plugins/ of the current module)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: wasmbuild [-check] [-dir plugins] [name ...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(context.Background(), *dir, *check, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "wasmbuild:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, root string, check bool, only []string) error {
	if root == "" {
		mod, err := moduleRoot(ctx)
		if err != nil {
			return err
		}
		root = filepath.Join(mod, "plugins")
	}
	names, err := pluginDirs(root)
	if err != nil {
		return err
	}
	if len(only) > 0 {
		want := map[string]bool{}
		for _, n := range only {
			want[n] = true
		}
		var kept []string
		for _, n := range names {
			if want[n] {
				kept = append(kept, n)
				delete(want, n)
			}
		}
		for n := range want {
			return fmt.Errorf("no plugin %q under %s", n, root)
		}
		names = kept
	}
	if len(names) == 0 {
		fmt.Printf("no plugins with Go sources under %s\n", root)
		return nil
	}
	outDir := ""
	if check {
		tmp, err := os.MkdirTemp("", "wasmbuild-check-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		outDir = tmp
	}
	outs := make([]string, len(names))
	for i, n := range names {
		if check {
			outs[i] = filepath.Join(outDir, n+".wasm")
		} else {
			outs[i] = filepath.Join(root, n, n+".wasm")
		}
	}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, n := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = wasmbuild.Build(ctx, filepath.Join(root, n), outs[i])
		})
	}
	wg.Wait()
	var failed []string
	for i, n := range names {
		if errs[i] != nil {
			return errs[i]
		}
		built, err := os.ReadFile(outs[i])
		if err != nil {
			return err
		}
		sum := sha256.Sum256(built)
		if !check {
			fmt.Printf("%-20s %9d bytes  sha256 %x\n", n, len(built), sum)
			continue
		}
		committed := filepath.Join(root, n, n+".wasm")
		old, err := os.ReadFile(committed)
		switch {
		case os.IsNotExist(err):
			failed = append(failed, committed+": missing (run go generate ./plugins)")
		case err != nil:
			return err
		case !bytes.Equal(old, built):
			failed = append(failed, fmt.Sprintf("%s: stale: committed %d bytes sha256 %x, sources build %d bytes sha256 %x (run go generate ./plugins)",
				committed, len(old), sha256.Sum256(old), len(built), sum))
		default:
			fmt.Printf("%-20s up to date (sha256 %x)\n", n, sum)
		}
	}
	if check {
		leftovers, err := strayModules(root, names)
		if err != nil {
			return err
		}
		failed = append(failed, leftovers...)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d problem(s):\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return nil
}

// pluginDirs lists the subdirectories of root that hold a Go main package.
func pluginDirs(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() || n == "internal" || n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
			continue
		}
		ok, err := isMainPackage(filepath.Join(root, n))
		if err != nil {
			return nil, err
		}
		if ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

func isMainPackage(dir string) (bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return false, err
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly)
		if err != nil {
			return false, err
		}
		if file.Name.Name == "main" {
			return true, nil
		}
	}
	return false, nil
}

// strayModules reports committed .wasm files of directories that are not
// (or no longer) plugins.
func strayModules(root string, names []string) ([]string, error) {
	known := map[string]bool{}
	for _, n := range names {
		known[filepath.Join(root, n, n+".wasm")] = true
	}
	found, err := filepath.Glob(filepath.Join(root, "*", "*.wasm"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range found {
		if !known[f] {
			out = append(out, f+": no plugin sources build it")
		}
	}
	return out, nil
}

func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside a Go module; pass -dir")
	}
	return filepath.Dir(gomod), nil
}
