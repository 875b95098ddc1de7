package plugin_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/plugins"
)

// firstParty are the first-party plugins in the order the host loads them.
var firstParty = []string{plugins.SystemPrompt, plugins.CompactionBasic, plugins.TokenMeter}

// BenchmarkLoadFirstParty is what a new process pays to load the
// first-party plugins: a new runtime, the three loads, and closing it.
// warm finds them in the on-disk compilation cache; cold starts from an
// empty cache each time (a first run).
func BenchmarkLoadFirstParty(b *testing.B) {
	ctx := context.Background()
	load := func(b *testing.B, dir string) {
		rt, err := plugin.NewRuntime(ctx, plugin.WithCacheDir(dir))
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close(ctx)
		for _, name := range firstParty {
			if _, err := rt.Load(ctx, name, plugins.FirstParty[name]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("warm", func(b *testing.B) {
		dir := b.TempDir()
		load(b, dir)
		for b.Loop() {
			load(b, dir)
		}
	})
	b.Run("cold", func(b *testing.B) {
		dir := b.TempDir()
		i := 0
		for b.Loop() {
			load(b, filepath.Join(dir, strconv.Itoa(i)))
			i++
		}
	})
}
