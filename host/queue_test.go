package host

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/waterfall"
)

// loggedUserIDs counts the user/message events of the log by message id.
func loggedUserIDs(t *testing.T, s *Session) map[string]int {
	got := map[string]int{}
	for _, e := range s.Log().Events() {
		if e.Type != surface.TypeUserMessage {
			continue
		}
		var m surface.Message
		require.NoError(t, json.Unmarshal(e.Data, &m))
		got[m.ID]++
	}
	return got
}

// requireAccounted checks that every message is either in the log exactly
// once or among the pending ones (exactly once), never both, never neither.
func requireAccounted(t *testing.T, s *Session, pending []*surface.Message, msgs []*surface.Message, where string) {
	t.Helper()
	logged := loggedUserIDs(t, s)
	queued := map[string]int{}
	for _, m := range pending {
		queued[m.ID]++
	}
	for _, m := range msgs {
		require.Equal(t, 1, logged[m.ID]+queued[m.ID], "%s: message %s is logged %d time(s) and pending %d time(s)",
			where, m.ID, logged[m.ID], queued[m.ID])
	}
}

// A message injected and a turn cancelled just after any event a
// two-step turn commits (and before it starts): every message given to
// Inject or Run is found exactly once, in the log or pending, and the next
// Run sends the pending ones, in order, exactly once.
func TestCancelAnywhereLosesNoQueuedMessage(t *testing.T) {
	// The uncancelled turn: its events are the boundaries to cancel at.
	full := newHarness(t, "sys", nil)
	full.model.then(callTool("c1", "echo", `{}`), reply("done"))
	from := full.s.Log().NextSeq()
	full.turn("hello")
	boundaries := int(full.s.Log().NextSeq() - from)
	require.Greater(t, boundaries, 8)
	t.Logf("a cancel before the run and after each of the turn's %d events", boundaries)

	// The model honours its context, as a real client does: a cancel
	// before the request ends the attempt with the context's error.
	honour := func(c *Config) {
		c.ModelInterceptors = []ModelInterceptor{func(ctx context.Context, req *llm.Request, on func(llm.Delta), next ModelCall) (*llm.Result, error) {
			if err := ctx.Err(); err != nil {
				return &llm.Result{}, err
			}
			return next(ctx, req, on)
		}}
	}
	for n := 0; n <= boundaries; n++ {
		h := newHarness(t, "sys", honour)
		h.model.then(callTool("c1", "echo", `{}`), reply("done"))
		early := h.a.UserMessage("injected before the run")
		h.a.Inject(early)
		own := h.a.UserMessage("the run's own")
		late := h.a.UserMessage("injected at the boundary")
		ctx, cancel := context.WithCancel(context.Background())
		seen := 0
		remove := h.s.Log().Observe(func(surface.Event) {
			seen++
			if seen == n {
				h.a.Inject(late)
				cancel()
			}
		})
		if n == 0 {
			h.a.Inject(late)
			cancel()
		}
		res, err := h.a.Run(ctx, own)
		remove()
		cancel()
		msgs := []*surface.Message{early, own, late}
		if n == 0 {
			require.ErrorIs(t, err, context.Canceled)
			require.Nil(t, res)
			require.Equal(t, from, h.s.Log().NextSeq(), "a run on a cancelled context logs nothing")
			msgs = []*surface.Message{early, late} // own was refused, not accepted
		} else {
			require.NoError(t, err, "boundary %d", n)
		}
		pending := h.a.TakePending()
		requireAccounted(t, h.s, pending, msgs, "after the cancel")
		// Nothing pending is lost: a new run sends it, in order.
		_, err = h.a.Run(context.Background(), pending...)
		require.NoError(t, err)
		requireAccounted(t, h.s, nil, msgs, "after the next run")
		require.Zero(t, h.a.Pending())
		var order []string
		for _, e := range h.events(surface.TypeUserMessage) {
			var m surface.Message
			require.NoError(t, json.Unmarshal(e.Data, &m))
			order = append(order, m.ID)
		}
		var want []string
		for _, m := range msgs {
			want = append(want, m.ID)
		}
		require.Equal(t, want, order, "boundary %d: the messages are logged in the order of the calls", n)
		_, open := h.s.Log().OpenTurn()
		require.Zero(t, open, "boundary %d: no step is left open", n)
	}
}

// A cancel from inside the pre-step waterfall (before step/start), a
// handler's failure (Abort policy) and a handler's reject: the claimed
// messages stay pending, in order, ahead of what was injected later, and
// Run stops instead of running the failing turn again.
func TestStepThatDoesNotEnterRequeues(t *testing.T) {
	cases := []struct {
		name string
		pre  func(cancel context.CancelFunc) func(context.Context, PreStep) (PreStep, error)
		end  string
	}{
		{"cancel", func(cancel context.CancelFunc) func(context.Context, PreStep) (PreStep, error) {
			return func(_ context.Context, in PreStep) (PreStep, error) { cancel(); return in, nil }
		}, surface.EndAborted},
		{"fail", func(context.CancelFunc) func(context.Context, PreStep) (PreStep, error) {
			return func(_ context.Context, in PreStep) (PreStep, error) {
				return in, errors.New("scripted pre-step failure")
			}
		}, surface.EndError},
		{"reject", func(context.CancelFunc) func(context.Context, PreStep) (PreStep, error) {
			return func(_ context.Context, in PreStep) (PreStep, error) { in.Decision.Reject = true; return in, nil }
		}, surface.EndBlocked},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, "sys", nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var later *surface.Message
			remove, err := h.a.PreStepChain.Add(c.name, func(ctx context.Context, in PreStep) (PreStep, error) {
				later = h.a.UserMessage("injected during the pre-step")
				h.a.Inject(later)
				return c.pre(cancel)(ctx, in)
			}, waterfall.OnFailure(waterfall.Abort))
			require.NoError(t, err)
			first, second := h.a.UserMessage("one"), h.a.UserMessage("two")
			h.a.Inject(first)
			res, err := h.a.Run(ctx, second)
			require.NoError(t, err)
			require.Equal(t, c.end, res.Reason.Kind)
			require.Empty(t, loggedUserIDs(t, h.s))
			require.Equal(t, 3, h.a.Pending())
			remove()
			res, err = h.a.Run(context.Background())
			require.NoError(t, err)
			require.Equal(t, surface.EndCompleted, res.Reason.Kind)
			require.Equal(t, []string{"user", "user", "user"}, msgRoles(h.model.reqs[0].Messages[1:]))
			var ids []string
			for _, m := range h.model.reqs[0].Messages[1:] {
				ids = append(ids, m.ID)
			}
			require.Equal(t, []string{first.ID, second.ID, later.ID}, ids)
		})
	}
}

// Run on a context already done returns the context's error, naming its
// cause, queues nothing and logs nothing; what was queued stays queued.
func TestRunOnADoneContext(t *testing.T) {
	h := newHarness(t, "sys", nil)
	queued := h.a.UserMessage("queued")
	h.a.Inject(queued)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("the user pressed stop"))
	from := h.s.Log().NextSeq()
	res, err := h.a.Run(ctx, h.a.UserMessage("refused"))
	require.Nil(t, res)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "the user pressed stop")
	require.Equal(t, from, h.s.Log().NextSeq())
	require.Equal(t, []*surface.Message{queued}, h.a.TakePending())
}

// Session.Close while a turn runs returns ErrBusy and closes nothing; once
// the turn returned, Close succeeds and Run returns ErrClosed.
func TestCloseDuringATurnIsBusy(t *testing.T) {
	h := newHarness(t, "sys", nil)
	var closeErr error
	h.model.then(func(*llm.Request) (*llm.Result, error) {
		closeErr = h.s.Close()
		return text("done"), nil
	})
	sub := h.s.Subscribe(0)
	res := h.turn("hi")
	require.Equal(t, surface.EndCompleted, res.Reason.Kind)
	require.ErrorIs(t, closeErr, ErrBusy)
	require.NoError(t, h.s.Close())
	_, open := <-sub.Events()
	for open {
		_, open = <-sub.Events()
	}
	msg := h.a.UserMessage("after close")
	_, err := h.a.Run(context.Background(), msg)
	require.ErrorIs(t, err, ErrClosed)
	require.Zero(t, h.a.Pending(), "a refused run queues nothing")
	require.NoError(t, h.s.Close(), "Close is idempotent")
}

// Inject from other goroutines while no turn runs and Run race for the
// queue: under -race, nothing is lost and nothing is doubled.
func TestInjectRacingRunLosesNothing(t *testing.T) {
	h := newHarness(t, "sys", nil)
	var mu sync.Mutex
	var all []*surface.Message
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 10; k++ {
				m := h.a.UserMessage("steer")
				mu.Lock()
				all = append(all, m)
				mu.Unlock()
				h.a.Inject(m)
			}
		}()
	}
	for k := 0; k < 5; k++ {
		_, err := h.a.Run(context.Background())
		if !errors.Is(err, ErrBusy) {
			require.NoError(t, err)
		}
	}
	wg.Wait()
	_, err := h.a.Run(context.Background())
	require.NoError(t, err)
	requireAccounted(t, h.s, nil, all, "after the last run")
}
