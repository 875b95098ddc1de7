package waterfall

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var errBoom = errors.New("boom")

// short is the deadline used in tests. Assertions never depend on how long
// anything took, only on what happened.
const short = 20 * time.Millisecond

// suffix returns a handler that appends s to its input.
func suffix(s string) Handler[string] {
	return func(_ context.Context, in string) (string, error) { return in + s, nil }
}

// blocker is a handler that ignores its context: it blocks until the test
// ends, then returns (or panics, when panicLate is set).
type blocker struct {
	release   chan struct{}
	started   chan struct{}
	finished  chan struct{}
	calls     atomic.Int32
	panicLate bool
}

func newBlocker(t *testing.T) *blocker {
	b := &blocker{
		release:  make(chan struct{}),
		started:  make(chan struct{}, 16),
		finished: make(chan struct{}, 16),
	}
	t.Cleanup(func() {
		close(b.release)
		for range b.calls.Load() {
			<-b.finished
		}
	})
	return b
}

func (b *blocker) handler(_ context.Context, in string) (string, error) {
	b.calls.Add(1)
	defer func() { b.finished <- struct{}{} }()
	b.started <- struct{}{}
	<-b.release
	if b.panicLate {
		panic("late panic")
	}
	return in + "LATE", nil
}

// stillRunning reports whether no call of b has finished yet.
func (b *blocker) stillRunning() bool { return len(b.finished) == 0 }

// finishOne lets one blocked call return and waits until it has.
func (b *blocker) finishOne() {
	b.release <- struct{}{}
	<-b.finished
	b.calls.Add(-1)
}

func mustAdd[T any](t *testing.T, c *Chain[T], name string, fn Handler[T], opts ...Option) func() {
	t.Helper()
	remove, err := c.Add(name, fn, opts...)
	require.NoError(t, err)
	require.NotNil(t, remove)
	return remove
}

func TestOrdering(t *testing.T) {
	type reg struct {
		name     string
		priority *int
	}
	p := func(n int) *int { return &n }
	tests := []struct {
		name string
		regs []reg
		want string
	}{
		{"registration order without priorities", []reg{{"a", nil}, {"b", nil}, {"c", nil}}, "abc"},
		{"lower priority runs first", []reg{{"a", p(3)}, {"b", p(1)}, {"c", p(2)}}, "bca"},
		{"ties keep registration order", []reg{{"a", p(1)}, {"b", p(0)}, {"c", p(1)}, {"d", p(0)}}, "bdac"},
		{"negative before default before positive", []reg{{"a", p(5)}, {"b", nil}, {"c", p(-5)}, {"d", p(0)}}, "cbda"},
		{"late registration with low priority goes first", []reg{{"a", nil}, {"b", nil}, {"c", p(-1)}}, "cab"},
		{"empty chain returns the initial value", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Config[string]{})
			for _, r := range tt.regs {
				var opts []Option
				if r.priority != nil {
					opts = append(opts, Priority(*r.priority))
				}
				mustAdd(t, c, r.name, suffix(r.name), opts...)
			}
			got, failures, err := c.Run(context.Background(), "")
			require.NoError(t, err)
			require.Nil(t, failures)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.want, strings.Join(c.Names(), ""))
		})
	}
}

func TestFoldPassesEachOutputToTheNextHandler(t *testing.T) {
	c := New(Config[int]{})
	var seen []int
	for i, f := range []func(int) int{
		func(v int) int { return v + 1 },
		func(v int) int { return v * 10 },
		func(v int) int { return v - 3 },
	} {
		mustAdd(t, c, strconv.Itoa(i), func(_ context.Context, in int) (int, error) {
			seen = append(seen, in)
			return f(in), nil
		})
	}
	got, _, err := c.Run(context.Background(), 4)
	require.NoError(t, err)
	require.Equal(t, []int{4, 5, 50}, seen)
	require.Equal(t, 47, got)
}

func TestFailurePolicy(t *testing.T) {
	failing := func(_ context.Context, _ string) (string, error) { return "X", errBoom }
	panicking := func(_ context.Context, _ string) (string, error) { panic("boom") }
	panickingErr := func(_ context.Context, _ string) (string, error) { panic(errBoom) }
	respectsDeadline := func(ctx context.Context, _ string) (string, error) {
		<-ctx.Done()
		return "X", ctx.Err()
	}
	isBoom := func(t *testing.T, err error) { require.ErrorIs(t, err, errBoom) }
	isPanic := func(value any) func(*testing.T, error) {
		return func(t *testing.T, err error) {
			var pe *PanicError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, value, pe.Value)
			require.NotEmpty(t, pe.Stack)
			require.Contains(t, err.Error(), fmt.Sprint("panic: ", value))
		}
	}
	isTimeout := func(t *testing.T, err error) {
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Contains(t, err.Error(), "exceeded its 20ms deadline")
	}

	tests := []struct {
		name   string
		cfg    Config[string]
		bad    func(t *testing.T) Handler[string]
		opts   []Option
		policy Policy // effective policy expected
		cause  func(*testing.T, error)
	}{
		{"error aborts by default", Config[string]{}, fixed(failing), nil, Abort, isBoom},
		{"error skipped by chain policy", Config[string]{Policy: Skip}, fixed(failing), nil, Skip, isBoom},
		{"handler Skip overrides chain Abort", Config[string]{Policy: Abort}, fixed(failing), []Option{OnFailure(Skip)}, Skip, isBoom},
		{"handler Abort overrides chain Skip", Config[string]{Policy: Skip}, fixed(failing), []Option{OnFailure(Abort)}, Abort, isBoom},
		{"inline panic aborts", Config[string]{}, fixed(panicking), nil, Abort, isPanic("boom")},
		{"inline panic skipped", Config[string]{Policy: Skip}, fixed(panicking), nil, Skip, isPanic("boom")},
		{"guarded panic aborts", Config[string]{Timeout: time.Hour}, fixed(panicking), nil, Abort, isPanic("boom")},
		{"guarded panic skipped", Config[string]{Timeout: time.Hour, Policy: Skip}, fixed(panicking), nil, Skip, isPanic("boom")},
		{"panic with an error value unwraps to it", Config[string]{}, fixed(panickingErr), nil, Abort, isBoom},
		{"timeout of a context-respecting handler aborts", Config[string]{Timeout: short}, fixed(respectsDeadline), nil, Abort, isTimeout},
		{"timeout of a context-respecting handler skipped", Config[string]{Timeout: short, Policy: Skip}, fixed(respectsDeadline), nil, Skip, isTimeout},
		{"timeout of a context-ignoring handler aborts", Config[string]{Timeout: short}, blocking, nil, Abort, isTimeout},
		{"timeout of a context-ignoring handler skipped", Config[string]{Timeout: short, Policy: Skip}, blocking, nil, Skip, isTimeout},
		{"handler timeout on a chain without one", Config[string]{}, blocking, []Option{Timeout(short)}, Abort, isTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Name = "test/chain"
			c := New(tt.cfg)
			mustAdd(t, c, "a", suffix("a"))
			mustAdd(t, c, "bad", tt.bad(t), tt.opts...)
			mustAdd(t, c, "c", suffix("c"))

			got, failures, err := c.Run(context.Background(), "")

			var cause error
			switch tt.policy {
			case Skip:
				require.NoError(t, err)
				require.Equal(t, "ac", got, "the skipped handler's output is dropped")
				require.Len(t, failures, 1)
				require.Equal(t, "bad", failures[0].Handler)
				require.Equal(t, "test/chain", failures[0].Chain)
				cause = &failures[0]
			case Abort:
				require.Error(t, err)
				require.Equal(t, "a", got, "the value reached before the failing handler")
				require.Nil(t, failures)
				var f *Failure
				require.ErrorAs(t, err, &f)
				require.Equal(t, "bad", f.Handler)
				cause = err
			}
			require.Contains(t, cause.Error(), `waterfall "test/chain": handler "bad" failed: `)
			tt.cause(t, cause)
		})
	}
}

func fixed(h Handler[string]) func(*testing.T) Handler[string] {
	return func(*testing.T) Handler[string] { return h }
}

func blocking(t *testing.T) Handler[string] { return newBlocker(t).handler }

func TestSkipRecordsEveryFailureInOrder(t *testing.T) {
	c := New(Config[string]{Policy: Skip, Timeout: short})
	b := newBlocker(t)
	mustAdd(t, c, "e1", func(context.Context, string) (string, error) { return "", errBoom })
	mustAdd(t, c, "ok", suffix("ok"))
	mustAdd(t, c, "stuck", b.handler)
	mustAdd(t, c, "p", func(context.Context, string) (string, error) { panic(1) })
	got, failures, err := c.Run(context.Background(), ">")
	require.NoError(t, err)
	require.Equal(t, ">ok", got)
	var names []string
	for _, f := range failures {
		names = append(names, f.Handler)
	}
	require.Equal(t, []string{"e1", "stuck", "p"}, names)
}

func TestDeadlines(t *testing.T) {
	t.Run("abandoned handler does not hold the run and its late result is discarded", func(t *testing.T) {
		for _, panicLate := range []bool{false, true} {
			b := newBlocker(t)
			b.panicLate = panicLate
			c := New(Config[string]{Timeout: short, Policy: Skip})
			mustAdd(t, c, "stuck", b.handler)
			mustAdd(t, c, "after", suffix("after"))
			got, failures, err := c.Run(context.Background(), "")
			require.NoError(t, err)
			require.True(t, b.stillRunning(), "Run returned while the handler was still blocked")
			require.Equal(t, "after", got)
			require.Len(t, failures, 1)
			require.ErrorIs(t, &failures[0], context.DeadlineExceeded)
			// Let it finish: its value (or panic) goes nowhere.
			b.finishOne()
			require.Equal(t, "after", got)
		}
	})

	deadlineOf := func(seen *bool) Handler[string] {
		return func(ctx context.Context, in string) (string, error) {
			_, *seen = ctx.Deadline()
			return in, nil
		}
	}
	tests := []struct {
		name         string
		chain        time.Duration
		opts         []Option
		wantDeadline bool
	}{
		{"no timeout anywhere runs inline without a deadline", 0, nil, false},
		{"chain timeout applies to the handler", time.Hour, nil, true},
		{"Timeout(0) removes the chain's deadline", time.Hour, []Option{Timeout(0)}, false},
		{"negative Timeout removes it too", time.Hour, []Option{Timeout(-1)}, false},
		{"handler timeout on a chain without one", 0, []Option{Timeout(time.Hour)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen bool
			c := New(Config[string]{Timeout: tt.chain})
			mustAdd(t, c, "h", deadlineOf(&seen), tt.opts...)
			_, _, err := c.Run(context.Background(), "")
			require.NoError(t, err)
			require.Equal(t, tt.wantDeadline, seen)
		})
	}

	t.Run("handler context carries the run's values", func(t *testing.T) {
		type key struct{}
		for _, d := range []time.Duration{0, time.Hour} {
			c := New(Config[string]{Timeout: d})
			mustAdd(t, c, "h", func(ctx context.Context, _ string) (string, error) {
				return ctx.Value(key{}).(string), nil
			})
			got, _, err := c.Run(context.WithValue(context.Background(), key{}, "v"), "")
			require.NoError(t, err)
			require.Equal(t, "v", got)
		}
	})
}

func TestCancellation(t *testing.T) {
	errStop := errors.New("operator stop")
	tests := []struct {
		name string
		// setup registers handlers on c and returns the context to run with.
		setup     func(t *testing.T, c *Chain[string]) context.Context
		policy    Policy
		want      string
		wantIs    []error
		wantText  string
		notCalled string // a handler registered as "never" must not run
	}{
		{
			name: "already cancelled context runs nothing",
			setup: func(t *testing.T, c *Chain[string]) context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				mustAdd(t, c, "never", suffix("never"))
				return ctx
			},
			want:     "init",
			wantIs:   []error{context.Canceled},
			wantText: `cancelled before handler "never"`,
		},
		{
			name: "cancelled between handlers stops the run",
			setup: func(t *testing.T, c *Chain[string]) context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				mustAdd(t, c, "a", suffix("a"))
				mustAdd(t, c, "canceller", func(_ context.Context, in string) (string, error) {
					cancel()
					return in + "b", nil
				})
				mustAdd(t, c, "never", suffix("never"))
				return ctx
			},
			want:     "initab",
			wantIs:   []error{context.Canceled},
			wantText: `cancelled before handler "never"`,
		},
		{
			name: "cancellation cause is wrapped",
			setup: func(t *testing.T, c *Chain[string]) context.Context {
				ctx, cancel := context.WithCancelCause(context.Background())
				cancel(errStop)
				mustAdd(t, c, "never", suffix("never"))
				return ctx
			},
			want:     "init",
			wantIs:   []error{context.Canceled, errStop},
			wantText: "operator stop",
		},
		{
			name:   "handler error caused by cancellation is not skipped",
			policy: Skip,
			setup: func(t *testing.T, c *Chain[string]) context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				mustAdd(t, c, "quitter", func(ctx context.Context, in string) (string, error) {
					cancel()
					return in, ctx.Err()
				})
				mustAdd(t, c, "never", suffix("never"))
				return ctx
			},
			want:     "init",
			wantIs:   []error{context.Canceled},
			wantText: `cancelled while running handler "quitter"`,
		},
		{
			name: "cancellation stops waiting for a context-ignoring handler",
			setup: func(t *testing.T, c *Chain[string]) context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				b := newBlocker(t)
				mustAdd(t, c, "stuck", b.handler, Timeout(time.Hour))
				mustAdd(t, c, "never", suffix("never"))
				go func() {
					<-b.started
					cancel()
				}()
				return ctx
			},
			want:     "init",
			wantIs:   []error{context.Canceled},
			wantText: `cancelled while running handler "stuck"`,
		},
		{
			name:   "run deadline is cancellation, not a handler timeout",
			policy: Skip,
			setup: func(t *testing.T, c *Chain[string]) context.Context {
				ctx, cancel := context.WithTimeout(context.Background(), short)
				t.Cleanup(cancel)
				mustAdd(t, c, "waiter", func(ctx context.Context, in string) (string, error) {
					<-ctx.Done()
					return in, ctx.Err()
				})
				mustAdd(t, c, "never", suffix("never"))
				return ctx
			},
			want:     "init",
			wantIs:   []error{context.DeadlineExceeded},
			wantText: `cancelled while running handler "waiter"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Config[string]{Name: "cancel", Policy: tt.policy})
			ctx := tt.setup(t, c)
			got, failures, err := c.Run(ctx, "init")
			require.Error(t, err)
			require.Equal(t, tt.want, got)
			require.Nil(t, failures)
			for _, target := range tt.wantIs {
				require.ErrorIs(t, err, target)
			}
			var f *Failure
			require.False(t, errors.As(err, &f), "cancellation must not look like a handler failure")
			require.Contains(t, err.Error(), `waterfall "cancel": `)
			require.Contains(t, err.Error(), tt.wantText)
		})
	}
}

func TestCloneIsolation(t *testing.T) {
	t.Run("map", func(t *testing.T) {
		checkIsolation(t, map[string]int{"x": 1, "y": 2},
			func(m map[string]int) map[string]int {
				out := make(map[string]int, len(m))
				for k, v := range m {
					out[k] = v
				}
				return out
			},
			func(m map[string]int) { m["x"] = 99; m["vandal"] = 1 })
	})
	t.Run("slice", func(t *testing.T) {
		checkIsolation(t, []int{1, 2, 3},
			func(s []int) []int { return append([]int(nil), s...) },
			func(s []int) { s[0] = 99 })
	})
}

// checkIsolation registers handlers that break the immutability contract
// (mutate in place, inline and after being abandoned at their deadline) and
// checks that with Clone nobody else sees it, and without Clone they do.
func checkIsolation[T any](t *testing.T, initial T, clone func(T) T, mutate func(T)) {
	want := fmt.Sprint(initial)

	t.Run("with clone", func(t *testing.T) {
		start := clone(initial)
		c := New(Config[T]{Policy: Skip, Timeout: short, Clone: clone})
		var seenByReader string
		release, finished := make(chan struct{}), make(chan struct{})
		mustAdd(t, c, "vandal", func(_ context.Context, in T) (T, error) {
			mutate(in)
			return in, errBoom
		}, Timeout(0))
		mustAdd(t, c, "late-vandal", func(_ context.Context, in T) (T, error) {
			defer close(finished)
			<-release
			mutate(in)
			return in, nil
		})
		mustAdd(t, c, "reader", func(_ context.Context, in T) (T, error) {
			seenByReader = fmt.Sprint(in)
			return in, nil
		}, Timeout(0))

		got, failures, err := c.Run(context.Background(), start)
		require.NoError(t, err)
		require.Len(t, failures, 2)
		require.Equal(t, want, seenByReader, "reader saw a vandal's change")

		close(release)
		<-finished // the late mutation has happened; -race checks it touched only its copy
		require.Equal(t, want, fmt.Sprint(got), "result changed by a handler")
		require.Equal(t, want, fmt.Sprint(start), "caller's initial value changed by a handler")
	})

	t.Run("without clone the contract is all that protects values", func(t *testing.T) {
		start := clone(initial)
		c := New(Config[T]{Policy: Skip})
		var seenByReader string
		mustAdd(t, c, "vandal", func(_ context.Context, in T) (T, error) {
			mutate(in)
			return in, errBoom
		})
		mustAdd(t, c, "reader", func(_ context.Context, in T) (T, error) {
			seenByReader = fmt.Sprint(in)
			return in, nil
		})
		_, _, err := c.Run(context.Background(), start)
		require.NoError(t, err)
		require.NotEqual(t, want, seenByReader)
	})
}

func TestUnregister(t *testing.T) {
	t.Run("remove func removes only its registration and is idempotent", func(t *testing.T) {
		c := New(Config[string]{})
		mustAdd(t, c, "a", suffix("a"))
		removeB := mustAdd(t, c, "b", suffix("b"))
		mustAdd(t, c, "c", suffix("c"))
		removeB()
		removeB()
		require.Equal(t, []string{"a", "c"}, c.Names())
		got, _, err := c.Run(context.Background(), "")
		require.NoError(t, err)
		require.Equal(t, "ac", got)
	})
	t.Run("stale remove func leaves a new registration of the same name", func(t *testing.T) {
		c := New(Config[string]{})
		old := mustAdd(t, c, "h", suffix("1"))
		require.True(t, c.Remove("h"))
		mustAdd(t, c, "h", suffix("2"))
		old()
		require.Equal(t, []string{"h"}, c.Names())
		got, _, err := c.Run(context.Background(), "")
		require.NoError(t, err)
		require.Equal(t, "2", got)
	})
	t.Run("Remove by name", func(t *testing.T) {
		c := New(Config[string]{})
		mustAdd(t, c, "a", suffix("a"), Priority(1))
		mustAdd(t, c, "b", suffix("b"))
		require.True(t, c.Remove("a"))
		require.False(t, c.Remove("a"))
		require.False(t, c.Remove("missing"))
		require.Equal(t, []string{"b"}, c.Names())
	})
	t.Run("a name can be reused after removal and takes a new place", func(t *testing.T) {
		c := New(Config[string]{})
		mustAdd(t, c, "a", suffix("a"))
		mustAdd(t, c, "b", suffix("b"))
		require.True(t, c.Remove("a"))
		mustAdd(t, c, "a", suffix("a"))
		require.Equal(t, []string{"b", "a"}, c.Names())
	})
	t.Run("a run in progress keeps its snapshot", func(t *testing.T) {
		c := New(Config[string]{})
		mustAdd(t, c, "remover", func(_ context.Context, in string) (string, error) {
			c.Remove("b")
			return in + "r", nil
		})
		mustAdd(t, c, "b", suffix("b"))
		got, _, err := c.Run(context.Background(), "")
		require.NoError(t, err)
		require.Equal(t, "rb", got)
		got, _, err = c.Run(context.Background(), "")
		require.NoError(t, err)
		require.Equal(t, "r", got)
	})
}

func TestAddRejects(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config[string]
		handler string
		fn      Handler[string]
		opts    []Option
		wantIs  error
		want    string
	}{
		{"duplicate name", Config[string]{Name: "x"}, "dup", suffix("2"), nil, ErrDuplicate,
			`waterfall "x": add handler "dup": name already registered`},
		{"duplicate name with another priority", Config[string]{}, "dup", suffix("2"), []Option{Priority(-1)}, ErrDuplicate,
			`waterfall: add handler "dup": name already registered`},
		{"empty name", Config[string]{}, "", suffix("x"), nil, nil, "name is empty"},
		{"nil handler", Config[string]{}, "nil", nil, nil, nil, `add handler "nil": handler func is nil`},
		{"unknown handler policy", Config[string]{}, "p", suffix("x"), []Option{OnFailure(7)}, nil,
			`add handler "p": unknown failure policy Policy(7)`},
		{"unknown chain policy", Config[string]{Policy: 9}, "p", suffix("x"), nil, nil,
			`add handler "p": unknown failure policy Policy(9)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(tt.cfg)
			mustAdd(t, c, "dup", suffix("1"), OnFailure(Abort))
			remove, err := c.Add(tt.handler, tt.fn, tt.opts...)
			require.Error(t, err)
			require.Nil(t, remove)
			require.Contains(t, err.Error(), tt.want)
			if tt.wantIs != nil {
				require.ErrorIs(t, err, tt.wantIs)
			}
			require.Equal(t, []string{"dup"}, c.Names(), "a rejected Add changes nothing")
		})
	}
}

func TestConcurrentRegistrationAndRuns(t *testing.T) {
	c := New(Config[string]{Timeout: time.Hour, Policy: Skip})
	const writers, runners, rounds = 4, 4, 100
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range rounds {
				name := fmt.Sprintf("w%d-%d", w, i)
				prio := (i * 7) % 5
				remove, err := c.Add(name, suffix(strconv.Itoa(prio)), Priority(prio))
				if err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 {
					remove()
				} else {
					c.Remove(name)
				}
			}
		})
	}
	for range runners {
		wg.Go(func() {
			for range rounds {
				got, failures, err := c.Run(context.Background(), "")
				if err != nil || failures != nil {
					t.Error(err, failures)
					return
				}
				// Each handler appends its priority digit: a consistent
				// snapshot yields non-decreasing digits.
				for i := 1; i < len(got); i++ {
					if got[i] < got[i-1] {
						t.Errorf("run saw handlers out of order: %q", got)
						return
					}
				}
			}
		})
	}
	// Racing registrations of one name: exactly one wins.
	var wins atomic.Int32
	for range 8 {
		wg.Go(func() {
			if _, err := c.Add("contested", suffix("")); err == nil {
				wins.Add(1)
			} else if !errors.Is(err, ErrDuplicate) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	require.Equal(t, int32(1), wins.Load())
	require.Equal(t, []string{"contested"}, c.Names())
}

func TestZeroChainIsUsable(t *testing.T) {
	var c Chain[int]
	got, failures, err := c.Run(context.Background(), 7)
	require.NoError(t, err)
	require.Nil(t, failures)
	require.Equal(t, 7, got)
	require.Empty(t, c.Names())
	mustAdd(t, &c, "double", func(_ context.Context, v int) (int, error) { return v * 2, nil })
	got, _, err = c.Run(context.Background(), 7)
	require.NoError(t, err)
	require.Equal(t, 14, got)
}

func TestInlineRunDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	c := New(Config[int]{})
	for i := range 4 {
		mustAdd(t, c, strconv.Itoa(i), func(_ context.Context, v int) (int, error) { return v + 1, nil })
	}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		if v, _, _ := c.Run(ctx, 0); v != 4 {
			panic("wrong result")
		}
	})
	require.Zero(t, allocs)
}

func TestPolicyString(t *testing.T) {
	require.Equal(t, "abort", Abort.String())
	require.Equal(t, "skip", Skip.String())
	require.Equal(t, "Policy(5)", Policy(5).String())
}
