package eval_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/plugintest"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

const demo = "../../examples/sessions/demo.jsonl"

// runtime is one plugin runtime per test.
func runtime(t testing.TB) *plugin.Runtime {
	t.Helper()
	ctx := context.Background()
	rt, err := plugin.NewRuntime(ctx, plugin.WithCacheDir(plugintest.CacheDir()))
	require.NoError(t, err)
	t.Cleanup(func() { rt.Close(ctx) })
	return rt
}

func loadEvents(t *testing.T, path string) (string, []surface.Event) {
	t.Helper()
	ld, err := jsonl.Load(path)
	require.NoError(t, err)
	return ld.Header.ID, ld.Log.Events()
}
