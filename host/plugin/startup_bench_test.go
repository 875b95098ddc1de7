package plugin_test

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/plugins"
)

// firstParty are the first-party plugins in the order the host loads them.
var firstParty = []string{plugins.SystemPrompt, plugins.CompactionBasic, plugins.TokenMeter}

// BenchmarkLoadFirstParty is what a new process pays to load the
// first-party plugins: a new runtime, the three loads, and closing it.
// warm finds them in the on-disk compilation cache; cold starts from an
// empty cache each time (a first run). The loads run one after another
// (sequential) or together (parallel), as the host loads them.
func BenchmarkLoadFirstParty(b *testing.B) {
	ctx := context.Background()
	load := func(b *testing.B, dir string, parallel bool) {
		rt, err := plugin.NewRuntime(ctx, plugin.WithCacheDir(dir))
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close(ctx)
		errs := make([]error, len(firstParty))
		var wg sync.WaitGroup
		for i, name := range firstParty {
			if parallel {
				wg.Go(func() { _, errs[i] = rt.Load(ctx, name, plugins.FirstParty[name]) })
			} else {
				_, errs[i] = rt.Load(ctx, name, plugins.FirstParty[name])
			}
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, parallel := range []bool{false, true} {
		mode := "sequential"
		if parallel {
			mode = "parallel"
		}
		b.Run("warm/"+mode, func(b *testing.B) {
			dir := b.TempDir()
			load(b, dir, parallel)
			for b.Loop() {
				load(b, dir, parallel)
			}
		})
		b.Run("cold/"+mode, func(b *testing.B) {
			dir := b.TempDir()
			i := 0
			for b.Loop() {
				load(b, filepath.Join(dir, strconv.Itoa(i)), parallel)
				i++
			}
		})
	}
}
