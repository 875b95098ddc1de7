package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// gateModel answers every request with a call of the echo tool while the
// request's last message is a user message the model has not answered
// with a tool yet, and with text otherwise. When gated, each call first
// reports on entered and waits for release.
type gateModel struct {
	gated   bool
	entered chan struct{}
	release chan struct{}
}

func newGateModel(gated bool) *gateModel {
	return &gateModel{gated: gated, entered: make(chan struct{}), release: make(chan struct{})}
}

func (m *gateModel) Stream(ctx context.Context, req *llm.Request, on func(llm.Delta)) (*llm.Result, error) {
	on(llm.Delta{Kind: llm.DeltaText, Text: "…"}) // for delta subscribers
	if m.gated {
		select {
		case m.entered <- struct{}{}:
		case <-m.release: // released: no more waiting
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		select {
		case <-m.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == surface.RoleUser && last.Content[0].Type == surface.BlockText {
		return &llm.Result{Content: []surface.Block{surface.ToolCall(fmt.Sprintf("c%d", len(req.Messages)), "echo", `{}`)},
			FinishReason: llm.FinishToolCalls}, nil
	}
	return text("done"), nil
}

func namedTool(name string) Tool {
	return &FuncTool{ToolName: name, Parameters: jsontext.Value(`{"type":"object"}`),
		Fn: func(_ context.Context, args string) (string, error) { return args, nil }}
}

func newConcurrentAgent(t *testing.T, m llm.Model) *Agent {
	t.Helper()
	s := NewSession("concurrent", surface.New(), nil, WithIDs(CounterIDs("m")))
	a, err := NewAgent(s, Config{Route: Route{Provider: "test", Model: "m1", ContextWindow: 100000}, Model: m,
		Prompt: &textPrompt{text: "prompt"}, Tools: []Tool{namedTool("echo")}})
	require.NoError(t, err)
	return a
}

// guard fails the test when done is not closed in a generous time: a
// deadlock shows as a failure rather than a hung test binary.
func guard(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not finish: deadlock or stall", what)
	}
}

func TestRunOnABusySessionIsErrBusy(t *testing.T) {
	m := newGateModel(true)
	a := newConcurrentAgent(t, m)
	done := make(chan struct{})
	var res *TurnResult
	var err error
	go func() { defer close(done); res, err = a.Run(context.Background(), a.UserMessage("one")) }()
	<-m.entered // the turn is inside its first model call

	_, berr := a.Run(context.Background(), a.UserMessage("two"))
	require.ErrorIs(t, berr, ErrBusy)
	require.Contains(t, berr.Error(), "session concurrent")
	_, berr = NewAgent(a.Session(), a.cfg)
	require.ErrorIs(t, berr, ErrBusy, "no second agent attaches to a busy session")
	_, berr = a.CompactNow(context.Background())
	require.ErrorIs(t, berr, ErrBusy)
	require.True(t, a.Session().Busy())

	close(m.release) // every later call passes
	guard(t, done, "the first run")
	require.NoError(t, err)
	require.Equal(t, surface.EndCompleted, res.Reason.Kind)
	require.NoError(t, res.Err())
	require.False(t, a.Session().Busy())
	for _, msg := range a.Session().Snapshot().Messages() {
		if msg.Role == surface.RoleUser && msg.Content[0].Type == surface.BlockText {
			require.Equal(t, "one", msg.Content[0].Text, "a refused run queues nothing")
		}
	}
}

func TestInjectReachesTheRunningTurn(t *testing.T) {
	m := newGateModel(true)
	a := newConcurrentAgent(t, m)
	done := make(chan struct{})
	var res *TurnResult
	go func() {
		defer close(done)
		var err error
		res, err = a.Run(context.Background(), a.UserMessage("one"))
		require.NoError(t, err)
	}()
	<-m.entered
	snap := a.Session().Snapshot() // safe while the turn waits on the model
	require.Equal(t, int64(1), snap.Turn)
	require.True(t, snap.Busy)
	require.Equal(t, []string{"system", "user"}, msgRoles(snap.Messages()))
	a.Inject(a.UserMessage("steer"))
	close(m.release)
	guard(t, done, "the run")
	require.Equal(t, int64(1), res.Turn, "the injected message is entered in the same turn")
	var users []string
	for _, msg := range a.Session().Snapshot().Messages() {
		if msg.Role == surface.RoleUser && msg.Content[0].Type == surface.BlockText {
			users = append(users, msg.Content[0].Text)
		}
	}
	require.Equal(t, []string{"one", "steer"}, users)
}

// Every public method is called from other goroutines while turns run;
// "go test -race" checks the contract, and the log must come out whole.
func TestHammerDuringTurns(t *testing.T) {
	m := newGateModel(false)
	a := newConcurrentAgent(t, m)
	s := a.Session()
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var injectedMu sync.Mutex
	var injected []string
	hammer := func(fn func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				fn(i)
			}
		}()
	}
	hammer(func(i int) {
		if i >= 100 { // a bounded number, so that the turns end
			time.Sleep(time.Millisecond)
			return
		}
		msg := a.UserMessage(fmt.Sprintf("injected %d", i))
		injectedMu.Lock()
		injected = append(injected, msg.ID)
		injectedMu.Unlock()
		a.Inject(msg)
		time.Sleep(time.Millisecond) // keep the turns finite
	})
	hammer(func(i int) { a.SetSections([]Section{{Key: "k", Text: fmt.Sprint("section ", i%3)}}) })
	hammer(func(i int) {
		r := a.Route()
		r.MaxTokens = int64(100 + i%2)
		a.SetRoute(r)
	})
	hammer(func(i int) {
		tools := []Tool{namedTool("echo")}
		if i%2 == 0 {
			tools = append(tools, namedTool("other"))
		}
		require.NoError(t, a.SetTools(tools...))
	})
	hammer(func(int) {
		sn := s.Snapshot()
		require.Len(t, sn.Events, int(sn.NextSeq-sn.BaseSeq))
		sn.Messages()
		sn.Surface()
		s.Busy()
		s.NewID()
	})
	hammer(func(int) {
		sub := s.Subscribe(4)
		for range 3 {
			select {
			case <-sub.Events():
			default:
			}
		}
		sub.Close()
	})
	hammer(func(int) {
		sub := s.SubscribeDeltas(2)
		for range 3 {
			select {
			case <-sub.Deltas():
			default:
			}
		}
		sub.Close()
	})
	hammer(func(int) { require.NoError(t, s.Flush()) })
	hammer(func(int) {
		if _, err := a.Run(ctx); err != nil {
			require.ErrorIs(t, err, ErrBusy)
		}
	})
	hammer(func(int) {
		if _, err := a.CompactNow(ctx); err != nil {
			require.ErrorIs(t, err, ErrBusy)
		}
	})
	for i := range 10 {
		for {
			_, err := a.Run(context.Background(), a.UserMessage(fmt.Sprint("turn ", i)))
			if err == nil {
				break
			}
			require.ErrorIs(t, err, ErrBusy)
		}
	}
	stop()
	wg.Wait()
	for {
		_, err := a.Run(context.Background()) // drain what was injected last
		if err == nil {
			break
		}
		require.ErrorIs(t, err, ErrBusy)
	}

	evs := s.Snapshot().Events
	_, err := surface.Restore(evs)
	require.NoError(t, err, "the log is whole")
	entered := map[string]int{}
	for _, e := range evs {
		if e.Type == surface.TypeUserMessage {
			var msg surface.Message
			require.NoError(t, unmarshal(e.Data, &msg))
			entered[msg.ID]++
		}
	}
	for _, id := range injected {
		require.Equal(t, 1, entered[id], "injected message %s is entered exactly once", id)
	}
}

func TestSubscriberCallsBackIntoTheSession(t *testing.T) {
	a := newConcurrentAgent(t, newGateModel(false))
	s := a.Session()
	sub := s.Subscribe(1 << 12)
	var got []surface.Event
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range sub.Events() {
			got = append(got, e)
			require.NoError(t, s.Flush())
			sn := s.Snapshot()
			require.GreaterOrEqual(t, sn.NextSeq, e.Seq+1, "the snapshot holds the delivered event")
			sn.Messages()
		}
	}()
	for i := range 5 {
		res, err := a.Run(context.Background(), a.UserMessage(fmt.Sprint("turn ", i)))
		require.NoError(t, err)
		require.NoError(t, res.Err())
	}
	require.NoError(t, s.Close()) // ends the subscription
	guard(t, done, "the subscriber")
	require.Zero(t, sub.Dropped())
	require.Equal(t, s.Snapshot().Events, got, "every committed event, in order")

	late := s.Subscribe(1)
	_, open := <-late.Events()
	require.False(t, open, "a subscription to a closed session starts closed")
	late.Close()
}

func TestSubscriberClosesItself(t *testing.T) {
	a := newConcurrentAgent(t, newGateModel(false))
	sub := a.Session().Subscribe(1 << 12)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range sub.Events() {
			if e.Type == surface.TypeTurnEnd {
				sub.Close()
			}
		}
	}()
	_, err := a.Run(context.Background(), a.UserMessage("one"))
	require.NoError(t, err)
	guard(t, done, "the subscriber")
	_, err = a.Run(context.Background(), a.UserMessage("two"))
	require.NoError(t, err, "a closed subscription does not disturb later turns")
}

func TestSlowSubscriberDoesNotStallTheLoop(t *testing.T) {
	a := newConcurrentAgent(t, newGateModel(false))
	s := a.Session()
	from := s.Snapshot().NextSeq
	sub := s.Subscribe(1) // never read during the turns
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 3 {
			_, err := a.Run(context.Background(), a.UserMessage(fmt.Sprint("turn ", i)))
			require.NoError(t, err)
		}
	}()
	guard(t, done, "the turns")
	committed := s.Snapshot().NextSeq - from
	require.Greater(t, committed, int64(10))
	require.Equal(t, uint64(committed-1), sub.Dropped(), "all but the buffered event are dropped and counted")
	first := <-sub.Events()
	require.Equal(t, from, first.Seq, "the buffer keeps the oldest undelivered event")
	sub.Close()
	_, open := <-sub.Events()
	require.False(t, open)
}

func TestTurnResultErr(t *testing.T) {
	h := newHarness(t, "p", nil)
	h.model.then(fail(llm.CodeBadRequest))
	res := h.turn("one")
	err := res.Err()
	require.ErrorIs(t, err, ErrTurnFailed)
	var te *TurnError
	require.ErrorAs(t, err, &te)
	require.Equal(t, llm.CodeBadRequest, te.Code())
	require.True(t, strings.HasPrefix(err.Error(), "turn 1 failed: "), err.Error())

	ctx, cancel := context.WithCancelCause(context.Background())
	h.model.then(func(*llm.Request) (*llm.Result, error) {
		cancel(errors.New("the user pressed stop"))
		return &llm.Result{}, context.Cause(ctx)
	})
	res, rerr := h.a.Run(ctx, h.a.UserMessage("two"))
	require.NoError(t, rerr)
	require.ErrorIs(t, res.Err(), ErrTurnAborted)
	require.Contains(t, res.Err().Error(), "the user pressed stop")
	require.NotErrorIs(t, res.Err(), ErrTurnFailed)
}

// Streamed deltas reach a delta subscription tagged with their turn, step
// and attempt; a retried request is the step's next attempt.
func TestDeltaSubscriptionTagsEachPiece(t *testing.T) {
	h := newHarness(t, "sys", func(c *Config) {
		c.MaxRetryWait = time.Millisecond
		c.ModelInterceptors = []ModelInterceptor{func(ctx context.Context, req *llm.Request, on func(llm.Delta), next ModelCall) (*llm.Result, error) {
			on(llm.Delta{Kind: llm.DeltaText, Text: "piece"})
			return next(ctx, req, on)
		}}
	})
	sub := h.s.SubscribeDeltas(16)
	h.model.then(fail(llm.CodeServer), callTool("c1", "echo", `{}`), reply("done"))
	h.turn("one")
	h.model.then(reply("again"))
	h.turn("two")
	sub.Close()
	var got []Delta
	for d := range sub.Deltas() {
		got = append(got, d)
	}
	piece := llm.Delta{Kind: llm.DeltaText, Text: "piece"}
	require.Equal(t, []Delta{
		{Turn: 1, Step: 1, Attempt: 1, Delta: piece},
		{Turn: 1, Step: 1, Attempt: 2, Delta: piece}, // after the retry
		{Turn: 1, Step: 2, Attempt: 1, Delta: piece},
		{Turn: 2, Step: 1, Attempt: 1, Delta: piece},
	}, got)
	require.Zero(t, sub.Dropped())

	// A full buffer drops and counts; Session.Close ends the channel.
	small := h.s.SubscribeDeltas(1)
	h.model.then(reply("three"))
	h.turn("three")
	h.model.then(reply("four"))
	h.turn("four")
	require.Equal(t, uint64(1), small.Dropped())
	require.NoError(t, h.s.Close())
	d, ok := <-small.Deltas()
	require.True(t, ok)
	require.Equal(t, int64(3), d.Turn)
	_, ok = <-small.Deltas()
	require.False(t, ok)
	require.Zero(t, h.s.deltaSubsN.Load())
}
