package postgres_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/host/store/postgres"
	"github.com/weirhost/weir/surface"
)

// recorder keeps the wire body of every request a model was sent.
type recorder struct {
	m      llm.Model
	mu     *sync.Mutex
	bodies *[][]byte
}

func (r recorder) Stream(ctx context.Context, req *llm.Request, on func(llm.Delta)) (*llm.Result, error) {
	b, err := llm.EncodeRequest(req)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	*r.bodies = append(*r.bodies, b)
	r.mu.Unlock()
	return r.m.Stream(ctx, req, on)
}

// TestTwoHostsTakeOver runs two embedded hosts on one PostgreSQL session:
// host A runs a turn and then pauses (it stops renewing its lease); once the
// lease lapses, host B takes the session over and runs a turn; A wakes up
// and runs another turn, whose first write the database refuses. Nothing
// is lost or duplicated: the stored log is exactly B's log, and every
// request either host sent rebuilds from the stored log byte for byte.
func TestTwoHostsTakeOver(t *testing.T) {
	u := newDB(t)
	ctx := context.Background()
	const lease = 500 * time.Millisecond
	stA := open(t, u, postgres.Lease(lease, -1)) // paused: never renews
	defer stA.Close()
	stB := open(t, u)
	defer stB.Close()

	var mu sync.Mutex
	var sent [][]byte
	agent := func(s *host.Session) *host.Agent {
		script, err := llm.ParseScript([]byte(`{"replies": [{"text": "First."}, {"text": "Second."}, {"text": "Third."}]}`))
		require.NoError(t, err)
		a, err := host.NewAgent(s, host.Config{
			Route:    host.Route{Provider: "offline", Model: "script", ContextWindow: 8192},
			Model:    recorder{llm.NewScripted(script), &mu, &sent},
			Sections: []host.Section{{Key: "base", Text: "You are terse."}},
		})
		require.NoError(t, err)
		return a
	}

	sA, err := host.Open(ctx, stA, "shared", host.WithIDs(host.CounterIDs("a")))
	require.NoError(t, err)
	defer sA.Close()
	a := agent(sA)
	_, err = a.Run(ctx, a.UserMessage("hello from A"))
	require.NoError(t, err)
	afterA := sA.Log().NextSeq()

	_, err = host.Open(ctx, stB, "shared")
	require.ErrorIs(t, err, store.ErrLocked, "B waits while A's lease runs")
	time.Sleep(lease + 200*time.Millisecond)

	sB, err := host.Open(ctx, stB, "shared", host.WithIDs(host.CounterIDs("b")))
	require.NoError(t, err, "B takes the session over once A's lease lapsed")
	defer sB.Close()
	require.Equal(t, afterA+1, sB.Log().NextSeq(), "B resumed A's whole log (and its end-seed)")
	b := agent(sB)
	_, err = b.Run(ctx, b.UserMessage("hello from B"))
	require.NoError(t, err)

	requests := len(sent)
	require.Equal(t, 2, requests, "one request per host's turn")
	_, err = a.Run(ctx, a.UserMessage("A again"))
	require.ErrorIs(t, err, store.ErrFenced, "the stale host's write is refused by the database")
	require.Equal(t, requests, len(sent), "the stale host sent no request: it flushes before calling the model")
	require.NoError(t, sB.Flush())

	var stored []surface.Event
	_, err = stB.Load(ctx, "shared", func(e surface.Event) error { stored = append(stored, e); return nil })
	require.NoError(t, err)
	own := sB.Log().Events()
	require.Len(t, stored, len(own), "nothing lost, nothing duplicated")
	for i := range own {
		require.Equal(t, string(surface.AppendEvent(nil, &own[i])), string(surface.AppendEvent(nil, &stored[i])), "event %d", i)
	}

	reqs, order, err := host.Requests(stored, "shared")
	require.NoError(t, err)
	require.Len(t, order, len(sent), "one stored settlement per request sent")
	for i, seq := range order {
		body, err := llm.EncodeRequest(reqs[seq])
		require.NoError(t, err)
		require.True(t, bytes.Equal(sent[i], body), "request %d (settled at seq %d) rebuilds from the stored log byte for byte", i, seq)
	}
}
