package plugin_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
)

// A runtime closed while calls are running does not unmap the memory they
// use under them (linmem: a memory is unmapped once both the module is
// closed and its instance is done): every call ends with its result or an
// error, the process does not fault, and the plugin is closed afterwards.
func TestRuntimeClosedUnderRunningCalls(t *testing.T) {
	ctx := context.Background()
	for round := range 3 {
		rt, err := plugin.NewRuntime(ctx, plugin.WithCacheDir(plugintest.CacheDir()))
		require.NoError(t, err)
		p, err := rt.Load(ctx, "benign", module(t, "benign"), plugin.WithMaxInstances(4))
		require.NoError(t, err)
		var wg sync.WaitGroup
		started := make(chan struct{}, 4)
		for range 4 {
			wg.Go(func() {
				started <- struct{}{}
				for {
					got, err := p.RenderPrompt(ctx, nil, &abi.RenderRequest{Route: abi.Route{Model: "config"}})
					if err != nil {
						return
					}
					if got != "config=" {
						t.Errorf("round %d: got %q", round, got)
						return
					}
				}
			})
		}
		for range 4 {
			<-started
		}
		require.NoError(t, rt.Close(ctx))
		wg.Wait()
		_, err = p.RenderPrompt(ctx, nil, goodReq)
		require.ErrorIs(t, err, plugin.ErrClosed)
	}
}

// The memory cap holds with memories that grow in place: a guest that
// allocates without end fails at the runtime's memory limit, whatever the
// limit, and the next call runs on a fresh instance.
func TestMemoryLimitHoldsWhenGrowingInPlace(t *testing.T) {
	ctx := context.Background()
	for _, limit := range []uint64{16 << 20, 40 << 20} {
		rt, err := plugin.NewRuntime(ctx, plugin.WithMemoryLimit(limit), plugin.WithCacheDir(plugintest.CacheDir()))
		require.NoError(t, err)
		t.Cleanup(func() { rt.Close(ctx) })
		p, err := rt.Load(ctx, "alloc", module(t, "hostile/alloc"),
			plugin.WithDeadline(abi.KindSystemPrompt, 20*time.Second))
		require.NoError(t, err)
		_, err = p.RenderPrompt(ctx, nil, hostileReq)
		require.ErrorIs(t, err, plugin.ErrTrap, "limit %d", limit)
		require.Contains(t, err.Error(), "out of memory")
		got, err := p.RenderPrompt(ctx, nil, goodReq)
		require.NoError(t, err)
		require.Equal(t, "ok", got)
	}
}
