package plugin_test

import (
	"context"
	"errors"
	"path"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
)

var (
	hostileReq = &abi.RenderRequest{Route: abi.Route{Model: "hostile"}}
	goodReq    = &abi.RenderRequest{Route: abi.Route{Model: "good"}}
)

// TestHostileCalls runs each misbehaving module in the shared runtime: the
// hostile call fails with an error naming the plugin and the reason, the
// instance is replaced, the next ordinary call on the same plugin succeeds,
// and a well-behaved plugin in the same runtime is unaffected.
func TestHostileCalls(t *testing.T) {
	benign := loadBenign(t)
	cases := []struct {
		module string
		opts   []plugin.Option
		class  error
		want   string // regexp of the whole error text
	}{
		{
			module: "hostile/loop",
			opts:   []plugin.Option{plugin.WithDeadline(abi.KindSystemPrompt, time.Second)},
			class:  plugin.ErrDeadline,
			want:   `^plugin "loop": call prompt\.render: deadline 1s exceeded; instance replaced$`,
		},
		{
			module: "hostile/alloc",
			opts:   []plugin.Option{plugin.WithDeadline(abi.KindSystemPrompt, 20*time.Second)},
			class:  plugin.ErrTrap,
			want:   `^plugin "alloc": call prompt\.render: trap: wasm error: unreachable \(guest stderr: fatal error: out of memory\); instance replaced$`,
		},
		{
			module: "hostile/panic",
			class:  plugin.ErrPanic,
			want:   `^plugin "panic": call prompt\.render: panic: boom: hostile input \(at main\.panicPrompt\.RenderPrompt \S+/hostile/calls/panic\.go:\d+\); instance replaced$`,
		},
		{
			module: "hostile/frame-oob",
			class:  plugin.ErrMalformedOutput,
			want:   `^plugin "frame-oob": call prompt\.render: malformed output: frame at 67108848 of 1048576 bytes runs past the end of memory \(\d+ bytes\); instance replaced$`,
		},
		{
			module: "hostile/huge-output",
			class:  plugin.ErrOutputTooLarge,
			want:   `^plugin "huge-output": call prompt\.render: output of 52428\d\d bytes exceeds the 4194304-byte output limit; instance replaced$`,
		},
		{
			module: "hostile/garbage",
			class:  plugin.ErrMalformedOutput,
			want:   `^plugin "garbage": call prompt\.render: malformed output: decode Response: variable length integer overflow; instance replaced$`,
		},
		{
			module: "hostile/exit",
			class:  plugin.ErrTrap,
			want:   `^plugin "exit": call prompt\.render: guest exited with code 3; instance replaced$`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.module, func(t *testing.T) {
			opts := tc.opts
			if opts == nil {
				// Far above what the call needs, so a loaded machine (or the
				// race detector) does not turn a slow failure into a deadline.
				opts = []plugin.Option{plugin.WithDeadline(abi.KindSystemPrompt, 30*time.Second)}
			}
			p := plugintest.LoadBytes(t, path.Base(tc.module), module(t, tc.module), opts...)
			for round := range 2 { // twice: the replacement instance fails the same way
				_, err := p.RenderPrompt(context.Background(), nil, hostileReq)
				require.Error(t, err, "round %d", round)
				require.ErrorIs(t, err, tc.class)
				require.Regexp(t, regexp.MustCompile(tc.want), err.Error())
				var pe *plugin.Error
				require.True(t, errors.As(err, &pe))
				require.True(t, pe.Replaced)
				require.Equal(t, path.Base(tc.module), pe.Plugin)

				got, err := p.RenderPrompt(context.Background(), nil, goodReq)
				require.NoError(t, err, "the next call runs on a fresh instance")
				require.Equal(t, "ok", got)
			}
			s := p.Stats()
			require.EqualValues(t, 2, s.Replaced)
			require.EqualValues(t, 3, s.Started, "the load's instance, then one per failure")
			require.EqualValues(t, 4, s.Calls)
			require.EqualValues(t, 2, s.Failures)

			got, err := benign.RenderPrompt(context.Background(), nil, &abi.RenderRequest{Route: abi.Route{Model: "config"}})
			require.NoError(t, err, "a well-behaved plugin in the same runtime keeps working")
			require.Equal(t, "config=", got)
		})
	}
}

func TestHostileLoads(t *testing.T) {
	cases := []struct {
		module string
		want   string
	}{
		{"hostile/wrong-abi", `plugin "wrong-abi": load: start instance: module speaks ABI version 2, the host speaks version 1`},
		{"hostile/import-socket", `plugin "import-socket": load: module imports "wasi_snapshot_preview1"."sock_accept", which is not allowed (plugins have no network)`},
		{"hostile/import-unknown", `plugin "import-unknown": load: module imports "weir"."launch_missiles", which the host does not provide`},
	}
	benign := loadBenign(t)
	for _, tc := range cases {
		t.Run(tc.module, func(t *testing.T) {
			p, err := plugintest.Runtime(t).Load(context.Background(), path.Base(tc.module), module(t, tc.module))
			require.Nil(t, p)
			require.ErrorIs(t, err, plugin.ErrInvalidModule)
			require.EqualError(t, err, tc.want)
			_, err = benign.RenderPrompt(context.Background(), nil, goodReq)
			require.NoError(t, err)
		})
	}
}

func TestNotAModule(t *testing.T) {
	rt := plugintest.Runtime(t)
	_, err := rt.Load(context.Background(), "text", []byte("hello, not wasm"))
	require.ErrorIs(t, err, plugin.ErrInvalidModule)
	require.EqualError(t, err, `plugin "text": load: not a valid WebAssembly module: not a WebAssembly binary`)
	// A valid module that is not a plugin: no imports, no exports.
	_, err = rt.Load(context.Background(), "empty", []byte("\x00asm\x01\x00\x00\x00"))
	require.EqualError(t, err, `plugin "empty": load: module does not export function "_initialize"; `+
		`module does not export function "weir_abi_version"; module does not export function "weir_call"; `+
		`module does not export function "weir_input"; module does not export its memory as "memory"`)
}

// A panic on every second call: the host replaces the instance after each
// panic, so successes and failures alternate and the pool keeps working.
func TestPanicEverySecondCall(t *testing.T) {
	p := plugintest.LoadBytes(t, "panic-alternate", module(t, "hostile/panic-alternate"))
	for i := range 3 {
		got, err := p.RenderPrompt(context.Background(), nil, goodReq)
		require.NoError(t, err, "round %d", i)
		require.Equal(t, "call 1", got, "a fresh instance starts counting again")
		_, err = p.RenderPrompt(context.Background(), nil, goodReq)
		require.ErrorIs(t, err, plugin.ErrPanic)
		require.Regexp(t, `^plugin "panic-alternate": call prompt\.render: panic: second call 2 \(at main\.alternatePrompt\.RenderPrompt \S+/hostile/calls/panic_alternate\.go:\d+\); instance replaced$`, err.Error())
	}
	require.EqualValues(t, 3, p.Stats().Replaced)
}

func TestCallerCancellation(t *testing.T) {
	p := plugintest.LoadBytes(t, "loop", module(t, "hostile/loop"), plugin.WithDeadline(abi.KindSystemPrompt, time.Minute))
	// A first call starts the instance, so the cancellation below lands
	// inside the guest, not while an instance is being started.
	got, err := p.RenderPrompt(context.Background(), nil, goodReq)
	require.NoError(t, err)
	require.Equal(t, "ok", got)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err = p.RenderPrompt(ctx, nil, hostileReq)
	require.ErrorIs(t, err, plugin.ErrCancelled)
	require.EqualError(t, err, `plugin "loop": call prompt.render: cancelled: context canceled; instance replaced`)
	got, err = p.RenderPrompt(context.Background(), nil, goodReq)
	require.NoError(t, err)
	require.Equal(t, "ok", got)
}

func TestCancelledBeforeTheCall(t *testing.T) {
	p := loadBenign(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.RenderPrompt(ctx, nil, goodReq)
	require.ErrorIs(t, err, plugin.ErrCancelled)
	require.EqualError(t, err, `plugin "benign": call prompt.render: cancelled while waiting for an instance: context canceled`)
	require.Zero(t, p.Stats().Replaced)
}

// Hostile calls running concurrently with well-behaved ones do not disturb
// them.
func TestHostileAlongsideBenign(t *testing.T) {
	loop := plugintest.LoadBytes(t, "loop", module(t, "hostile/loop"),
		plugin.WithDeadline(abi.KindSystemPrompt, 200*time.Millisecond), plugin.WithMaxInstances(2))
	benign := loadBenign(t, plugin.WithMaxInstances(2))
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 2 {
		wg.Go(func() {
			_, err := loop.RenderPrompt(context.Background(), nil, hostileReq)
			if !errors.Is(err, plugin.ErrDeadline) {
				errs <- errors.New("loop: unexpected result: " + errString(err))
			}
		})
	}
	for i := range 40 {
		wg.Go(func() {
			req := &abi.RenderRequest{Sections: []abi.Section{{Key: "n", Text: strings.Repeat("x", i)}}}
			got, err := benign.RenderPrompt(context.Background(), nil, req)
			if err != nil || got != "n: "+strings.Repeat("x", i)+"\nroute=/" {
				errs <- errors.New("benign: " + errString(err) + " " + got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.LessOrEqual(t, benign.Stats().Started, uint64(2), "at most WithMaxInstances instances")
}

// Failed calls leave no goroutines behind (wazero's context watchers, the
// deadline timers).
func TestNoGoroutineLeaks(t *testing.T) {
	loop := plugintest.LoadBytes(t, "loop", module(t, "hostile/loop"), plugin.WithDeadline(abi.KindSystemPrompt, 20*time.Millisecond))
	benign := loadBenign(t, plugin.WithDeadline(abi.KindSystemPrompt, 30*time.Second))
	_, _ = benign.RenderPrompt(context.Background(), nil, goodReq) // warm up
	// The package's tests share one runtime: wait for its background
	// compilations (of these modules and of earlier tests', which under
	// the race detector can outlast this test) so that their goroutines
	// are counted neither before nor after.
	waitCompiled := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		require.NoError(t, plugintest.Runtime(t).WaitCompiled(ctx))
	}
	waitCompiled()
	before := runtime.NumGoroutine()
	for range 5 {
		_, err := loop.RenderPrompt(context.Background(), nil, hostileReq)
		require.ErrorIs(t, err, plugin.ErrDeadline)
		_, err = benign.RenderPrompt(context.Background(), nil, goodReq)
		require.NoError(t, err)
	}
	waitCompiled()
	// Polled here, not with assert.Eventually, whose condition runs on
	// a goroutine of its own and so is counted.
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if runtime.NumGoroutine() > before {
		var stacks strings.Builder
		pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		t.Fatalf("goroutines: %d before, %d after:\n%s", before, runtime.NumGoroutine(), stacks.String())
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestSoftMemoryLimitRetiresInstances(t *testing.T) {
	p := loadBenign(t, plugin.WithSoftMemoryLimit(1))
	for range 3 {
		_, err := p.RenderPrompt(context.Background(), nil, goodReq)
		require.NoError(t, err, "retiring an instance is not an error")
	}
	s := p.Stats()
	require.EqualValues(t, 3, s.Replaced)
	require.Zero(t, s.Failures)
}

func TestInputLimit(t *testing.T) {
	p := loadBenign(t, plugin.WithInputLimit(1000))
	_, err := p.RenderPrompt(context.Background(), nil, &abi.RenderRequest{Sections: []abi.Section{{Text: strings.Repeat("x", 2000)}}})
	require.ErrorIs(t, err, plugin.ErrInputTooLarge)
	require.EqualError(t, err, `plugin "benign": call prompt.render: request of 2006 bytes exceeds the 1000-byte input limit`)
	require.Zero(t, p.Stats().Replaced)
}

func TestStateLimit(t *testing.T) {
	p := loadBenign(t, plugin.WithStateLimit(16))
	sess := &plugintest.Session{Tokenizer: plugintest.RuneCounter}
	_, err := p.Observe(context.Background(), sess, &abi.ObserveRequest{Events: []abi.Event{{Seq: 1}}})
	require.ErrorIs(t, err, plugin.ErrOutputTooLarge)
	require.EqualError(t, err, `plugin "benign": call meter.observe: state of 24 bytes exceeds the 16-byte limit`)
}

func TestClosedPlugin(t *testing.T) {
	p := loadBenign(t)
	require.NoError(t, p.Close(context.Background()))
	_, err := p.RenderPrompt(context.Background(), nil, goodReq)
	require.ErrorIs(t, err, plugin.ErrClosed)
	require.EqualError(t, err, `plugin "benign": call prompt.render: plugin is closed`)
}

// Guest output is logged under the plugin's name, bounded.
func TestGuestOutputIsLogged(t *testing.T) {
	var logs syncBuffer
	logger := hclog.New(&hclog.LoggerOptions{Name: "weir", Level: hclog.Debug, Output: &logs})
	rt, err := plugin.NewRuntime(context.Background(), plugin.WithLogger(logger), plugin.WithCacheDir(plugintest.CacheDir()))
	require.NoError(t, err)
	defer rt.Close(context.Background())
	p, err := rt.Load(context.Background(), "alloc", module(t, "hostile/alloc"),
		plugin.WithStdioLimit(256), plugin.WithDeadline(abi.KindSystemPrompt, 20*time.Second))
	require.NoError(t, err)
	_, err = p.RenderPrompt(context.Background(), nil, hostileReq)
	require.ErrorIs(t, err, plugin.ErrTrap)
	out := logs.String()
	require.Contains(t, out, "[WARN]  weir.plugin.alloc: guest output: plugin=alloc stream=stderr line=\"fatal error: out of memory\"")
	require.Regexp(t, `weir\.plugin\.alloc: guest output truncated: plugin=alloc stream=stderr dropped_bytes=\d+`, out)
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
