package plugin_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/weirhost/weir/sdk/plugintest"
)

// modules holds every test module, built once by TestMain into the
// wasmbuild cache (by content hash: unchanged sources are not rebuilt).
var modules map[string][]byte

var moduleNames = []string{
	"benign",
	"hostile/loop", "hostile/alloc", "hostile/panic", "hostile/panic-alternate",
	"hostile/frame-oob", "hostile/huge-output", "hostile/garbage", "hostile/wrong-abi",
	"hostile/import-socket", "hostile/import-unknown", "hostile/exit",
}

func TestMain(m *testing.M) {
	dirs := make([]string, len(moduleNames))
	for i, n := range moduleNames {
		dirs[i] = filepath.Join("testdata", n)
	}
	built, err := plugintest.BuildDirs(context.Background(), dirs...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "building test modules:", err)
		os.Exit(1)
	}
	modules = map[string][]byte{}
	for i, n := range moduleNames {
		modules[n] = built[dirs[i]]
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
