package plugin_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/weirhost/weir/sdk/plugintest"
)

// modules holds every test module by the name tests use, built once by
// TestMain into the wasmbuild cache (by content hash: unchanged sources are
// not rebuilt).
var modules map[string][]byte

// moduleDirs maps a test module's name to its folder under testdata. The
// plugins that misbehave inside a call share a module of several plugins
// (one build and one compilation instead of one each), and a test loads
// each under its own name, the base of its module name; those whose
// module itself is wrong keep a module each.
var moduleDirs = map[string]string{
	"benign":                  "benign",
	"hostile/loop":            "hostile/calls",
	"hostile/alloc":           "hostile/calls",
	"hostile/panic":           "hostile/calls",
	"hostile/panic-alternate": "hostile/calls",
	"hostile/huge-output":     "hostile/calls",
	"hostile/exit":            "hostile/calls",
	"hostile/frame-oob":       "hostile/frames",
	"hostile/garbage":         "hostile/frames",
	"hostile/wrong-abi":       "hostile/wrong-abi",
	"hostile/import-socket":   "hostile/import-socket",
	"hostile/import-unknown":  "hostile/import-unknown",
}

func TestMain(m *testing.M) {
	var dirs []string // a shared module's folder is named once per name, and built once
	for _, d := range moduleDirs {
		dirs = append(dirs, filepath.Join("testdata", d))
	}
	built, err := plugintest.BuildDirs(context.Background(), dirs...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "building test modules:", err)
		os.Exit(1)
	}
	modules = map[string][]byte{}
	for n, d := range moduleDirs {
		modules[n] = built[filepath.Join("testdata", d)]
	}
	os.Exit(m.Run())
}

func module(tb testing.TB, name string) []byte {
	tb.Helper()
	b, ok := modules[name]
	if !ok {
		tb.Fatalf("no test module %q", name)
	}
	return b
}
