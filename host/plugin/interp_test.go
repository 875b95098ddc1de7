package plugin_test

import (
	"context"
	"errors"
	"path"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
)

// interpRuntime is a runtime with WithInterpreterFirst and an empty cache
// directory of its own, so that every module starts on the interpreter.
// Closing it waits for the compilations still running unless abandon is
// set.
func interpRuntime(t *testing.T, dir string, abandon bool, opts ...plugin.RuntimeOption) *plugin.Runtime {
	t.Helper()
	rt, err := plugin.NewRuntime(context.Background(),
		append([]plugin.RuntimeOption{plugin.WithCacheDir(dir), plugin.WithInterpreterFirst(true)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		if abandon {
			cancel()
		}
		defer cancel()
		require.NoError(t, rt.Close(ctx))
	})
	return rt
}

// TestInterpreterFirst: a module the cache does not hold loads on the
// interpreter and answers at once, then moves to the compiled module, with
// the same answers; its instances on the interpreter are retired as they
// come back. The next runtime finds it compiled in the cache.
func TestInterpreterFirst(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var mu sync.Mutex
	var compiled []string
	rt := interpRuntime(t, dir, false, plugin.WithCompileHook(func(name string) {
		mu.Lock()
		compiled = append(compiled, name)
		mu.Unlock()
	}))
	release := plugin.HoldCompileSlot(rt) // keeps the compilation from starting
	p, err := rt.Load(ctx, "benign", module(t, "benign"), plugin.WithConfig([]byte(`{"a":1}`)))
	require.NoError(t, err)
	require.True(t, p.Interpreted())
	require.Equal(t, []string{"benign"}, compiled, "the compile hook still announces the first load")
	req := &abi.RenderRequest{Route: abi.Route{Model: "config"}}
	before, err := p.RenderPrompt(ctx, nil, req)
	require.NoError(t, err)
	require.Equal(t, `config={"a":1}`, before)
	entropy := &abi.RenderRequest{Route: abi.Route{Model: "entropy"}}
	fakeBefore, err := p.RenderPrompt(ctx, nil, entropy)
	require.NoError(t, err)

	release()
	require.NoError(t, rt.WaitCompiled(ctx))
	require.False(t, p.Interpreted())
	require.EqualValues(t, 0, p.Stats().Idle, "the interpreter's idle instance was retired")
	after, err := p.RenderPrompt(ctx, nil, req)
	require.NoError(t, err)
	require.Equal(t, before, after)
	require.EqualValues(t, 2, p.Stats().Started, "one instance on each engine")
	require.EqualValues(t, 0, p.Stats().Replaced, "retiring for the compiled module is no fault")

	// A new instance sees the same fake clock and random bytes on either
	// engine. (The first instance answered describe and config first, as
	// did this one.)
	fakeAfter, err := p.RenderPrompt(ctx, nil, entropy)
	require.NoError(t, err)
	require.Equal(t, fakeBefore, fakeAfter)

	rt2 := interpRuntime(t, dir, false)
	p2, err := rt2.Load(ctx, "benign", module(t, "benign"))
	require.NoError(t, err)
	require.False(t, p2.Interpreted(), "the cache holds the compiled module now")
}

// TestInterpreterSandbox: the hostile modules that fail at call time fail
// the same way on the interpreter: memory stays capped, a guest that exits
// or returns a frame outside memory is replaced, and the next call runs on
// a fresh instance. (TestInterpreterDeadline covers the deadline.)
func TestInterpreterSandbox(t *testing.T) {
	cases := []struct {
		module string
		opts   []plugin.Option
		class  error
		want   string
	}{
		{"hostile/alloc", nil, plugin.ErrTrap,
			`^plugin "alloc": call prompt\.render: trap: wasm error: unreachable \(guest stderr: fatal error: out of memory\); instance replaced$`},
		{"hostile/exit", nil, plugin.ErrTrap, `^plugin "exit": call prompt\.render: guest exited with code 3; instance replaced$`},
		{"hostile/frame-oob", nil, plugin.ErrMalformedOutput,
			`^plugin "frame-oob": call prompt\.render: malformed output: frame at 67108848 of 1048576 bytes runs past the end of memory \(\d+ bytes\); instance replaced$`},
	}
	// Closing abandons the compilations, which wait for the slot.
	rt := interpRuntime(t, t.TempDir(), true)
	plugin.HoldCompileSlot(rt) // every call below runs on the interpreter
	for _, tc := range cases {
		t.Run(tc.module, func(t *testing.T) {
			opts := tc.opts
			if opts == nil {
				opts = []plugin.Option{plugin.WithDeadline(abi.KindSystemPrompt, 60*time.Second)}
			}
			name := path.Base(tc.module)
			p, err := rt.Load(context.Background(), name, module(t, tc.module),
				append([]plugin.Option{plugin.WithDeadline(abi.KindUnspecified, 60*time.Second)}, opts...)...)
			require.NoError(t, err)
			require.True(t, p.Interpreted())
			_, err = p.RenderPrompt(context.Background(), nil, hostileReq)
			require.ErrorIs(t, err, tc.class)
			require.Regexp(t, regexp.MustCompile(tc.want), err.Error())
			var pe *plugin.Error
			require.True(t, errors.As(err, &pe))
			require.True(t, pe.Replaced)
			got, err := p.RenderPrompt(context.Background(), nil, goodReq)
			require.NoError(t, err, "the next call runs on a fresh instance")
			require.Equal(t, "ok", got)
		})
	}
}

// TestInterpreterDeadline: a guest that never yields is stopped at its
// deadline on the interpreter (CloseOnContextDone); the call then waits
// for the compiled module and runs again there, as a call too slow for
// the interpreter would, and fails at the deadline again.
func TestInterpreterDeadline(t *testing.T) {
	logs := &syncBuffer{}
	logger := hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug})
	rt := interpRuntime(t, t.TempDir(), false, plugin.WithLogger(logger))
	release := plugin.HoldCompileSlot(rt)
	p, err := rt.Load(context.Background(), "loop", module(t, "hostile/loop"),
		plugin.WithDeadline(abi.KindSystemPrompt, 100*time.Millisecond))
	require.NoError(t, err)
	require.True(t, p.Interpreted())
	done := make(chan error, 1)
	go func() {
		_, err := p.RenderPrompt(context.Background(), nil, hostileReq)
		done <- err
	}()
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "deadline on the interpreter; the call waits for the compiled module")
	}, time.Minute, 10*time.Millisecond, "the interpreter stops the loop at the deadline")
	release()
	err = <-done
	require.ErrorIs(t, err, plugin.ErrDeadline)
	require.Regexp(t, `^plugin "loop": call prompt\.render: deadline 100ms exceeded; instance replaced$`, err.Error())
	require.False(t, p.Interpreted())
	s := p.Stats()
	require.EqualValues(t, 2, s.Started, "the interpreter's, then the compiled module's")
	require.EqualValues(t, 2, s.Replaced)
	got, err := p.RenderPrompt(context.Background(), nil, goodReq)
	require.NoError(t, err)
	require.Equal(t, "ok", got)
}

// TestInterpreterFirstCloseCompiles: a runtime closed before its plugins
// on the interpreter were called (so before their compilations started)
// compiles them into the cache first.
func TestInterpreterFirstCloseCompiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rt, err := plugin.NewRuntime(ctx, plugin.WithCacheDir(dir), plugin.WithInterpreterFirst(true))
	require.NoError(t, err)
	p, err := rt.Load(ctx, "benign", module(t, "benign"))
	require.NoError(t, err)
	require.True(t, p.Interpreted())
	require.NoError(t, rt.Close(ctx))

	rt2 := interpRuntime(t, dir, false)
	p2, err := rt2.Load(ctx, "benign", module(t, "benign"))
	require.NoError(t, err)
	require.False(t, p2.Interpreted(), "the cache holds the compiled module")
}

// TestInterpreterStartPastItsDeadline: a first instance that cannot start
// within its deadline on the interpreter makes the load compile the module
// and start it on compiled code, as without the interpreter. The deadline
// here is too short for either (a microsecond: a Go guest's runtime takes
// far longer to start even compiled, which at a millisecond it can do on
// an idle machine), so the load fails, but only after its second start, on
// the compiled module.
func TestInterpreterStartPastItsDeadline(t *testing.T) {
	logs := &syncBuffer{}
	logger := hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug})
	rt := interpRuntime(t, t.TempDir(), false, plugin.WithLogger(logger))
	_, err := rt.Load(context.Background(), "benign", module(t, "benign"),
		plugin.WithDeadline(abi.KindUnspecified, time.Microsecond))
	require.ErrorIs(t, err, plugin.ErrDeadline)
	require.Contains(t, logs.String(), "first instance exceeded its start deadline on the interpreter; compiling now")
	require.Equal(t, 1, strings.Count(logs.String(), "compiling now"), "one fallback, then the compiled start's own error")
}

// TestInterpreterSharesAModule: one module loaded under two names (as the
// first-party module is, under three) is compiled by the interpreter once,
// shared until both plugins run compiled code, then released.
func TestInterpreterSharesAModule(t *testing.T) {
	ctx := context.Background()
	rt := interpRuntime(t, t.TempDir(), false)
	var ps [2]*plugin.Plugin
	var wg sync.WaitGroup
	for i, name := range []string{"one", "two"} {
		wg.Go(func() {
			p, err := rt.Load(ctx, name, module(t, "benign"))
			require.NoError(t, err)
			ps[i] = p
		})
	}
	wg.Wait()
	require.Equal(t, []int{2}, plugin.InterpModules(rt), "one interpreted module, used by both plugins")
	for _, p := range ps {
		require.True(t, p.Interpreted())
		got, err := p.RenderPrompt(ctx, nil, goodReq)
		require.NoError(t, err)
		require.Equal(t, "route=/good", got)
	}
	require.NoError(t, rt.WaitCompiled(ctx))
	require.Empty(t, plugin.InterpModules(rt), "released once both run compiled code")
	for _, p := range ps {
		require.False(t, p.Interpreted())
		got, err := p.RenderPrompt(ctx, nil, goodReq)
		require.NoError(t, err)
		require.Equal(t, "route=/good", got)
	}
}
