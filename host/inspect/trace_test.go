package inspect

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/eval"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

// appendStreamedTurn appends to the session at path one turn whose answer
// is res, as the loop settles it: the message with res's stream record and
// usage.
func appendStreamedTurn(t *testing.T, path string, res *llm.Result) {
	t.Helper()
	s, l, err := jsonl.Open(path)
	require.NoError(t, err)
	defer s.Close()
	turn := l.LastTurn() + 1
	data := func(v any) []byte {
		b, err := surface.Data(v)
		require.NoError(t, err)
		return b
	}
	evs, err := l.AppendBatch([]surface.Proposal{
		{Type: surface.TypeTurnStart, Data: data(map[string]any{"turn": turn})},
		{Type: surface.TypeStepStart, Data: data(map[string]any{"turn": turn, "step": 1})},
		{Type: surface.TypeUserMessage, Op: surface.Append, Data: data(surface.Message{ID: "timed-u", Role: "user",
			Source: surface.Source{Kind: "user"}, Content: []surface.Block{surface.Text("take your time")}})},
		{Type: surface.TypeAssistantMessage, Op: surface.Append, Data: data(surface.StepMessage{Turn: turn, Step: 1,
			Message: surface.Message{ID: "timed-a", Role: "assistant", Source: surface.Source{Kind: "model", Provider: "offline", Model: "demo"},
				Content: res.Content}, Stream: res.Stream, Usage: res.Usage})},
		{Type: surface.TypeStepEnd, Data: data(map[string]any{"turn": turn, "step": 1})},
		{Type: surface.TypeTurnEnd, Data: data(map[string]any{"turn": turn, "reason": map[string]any{"kind": "completed"}})},
	})
	require.NoError(t, err)
	require.NoError(t, s.Append(evs))
}

// TestTimeToFirstToken streams a reply from a loopback server that holds
// each chunk back by a known gap (the first chunk only names the role), logs
// it as the loop does and serves the session: the request page and the
// trajectory show a time to first token of at least two gaps and the wall
// time from the dispatch; requests whose records have no timing show "—".
func TestTimeToFirstToken(t *testing.T) {
	const gap = 150 * time.Millisecond
	srv := llmtest.NewServer(t)
	srv.Push(llmtest.Reply{Chunks: []string{llmtest.Role(), llmtest.Text("late"), llmtest.Finish("stop"), llmtest.Usage(2000, 30, 500, 0)}, Gap: gap})
	c, err := llm.NewClient(llm.ClientConfig{BaseURL: srv.URL(), APIKey: "sk-test-0123456789abcdef"})
	require.NoError(t, err)
	res, err := c.Stream(context.Background(), &llm.Request{Config: surface.CallConfig{Model: "demo"},
		Messages: []*surface.Message{{ID: "u", Role: "user", Content: []surface.Block{surface.Text("hi")}}}}, nil)
	require.NoError(t, err)
	tm := llm.TimingOf(res.Stream)
	require.GreaterOrEqual(t, tm.First, 2*gap.Milliseconds())

	path := copyDemo(t, t.TempDir(), "timed.jsonl")
	appendStreamedTurn(t, path, res)
	s := newServer(t, Options{Files: []string{path}})
	t.Cleanup(s.Close)

	var r Request
	decode(t, ok(t, s, "/api/s/timed.jsonl/requests/8"), &r)
	require.NotNil(t, r.First)
	require.Equal(t, tm.First, *r.First)
	require.Equal(t, tm.Sent, r.Sent)
	page := ok(t, s, "/s/timed.jsonl/requests?n=8")
	m := regexp.MustCompile(`time to first token (\d+) ms`).FindStringSubmatch(page)
	require.NotNil(t, m, "the request page shows the time to first token")
	shown, _ := strconv.ParseInt(m[1], 10, 64)
	require.GreaterOrEqual(t, shown, 2*gap.Milliseconds(), "at least the server's delay")
	require.Contains(t, page, "from dispatch to settlement")

	traj := ok(t, s, "/s/timed.jsonl/")
	require.Contains(t, traj, `first token `+strconv.FormatInt(tm.First, 10)+` ms</span>`)
	require.Contains(t, traj, "from its dispatch (")
	// The demo's offline model records its (virtual) first token, and no
	// dispatch instant.
	require.Contains(t, traj, "first token 0 ms")
	var r1 Request
	decode(t, ok(t, s, "/api/s/timed.jsonl/requests/1"), &r1)
	require.Zero(t, r1.Sent)
	require.Equal(t, int64(0), *r1.First)

	// A log written before the members existed: unknown, shown as "—".
	b, err := os.ReadFile(demoPath(t))
	require.NoError(t, err)
	require.Contains(t, string(b), `,"first":0`)
	old := filepath.Join(t.TempDir(), "old.jsonl")
	require.NoError(t, os.WriteFile(old, regexp.MustCompile(`,"first":\d+`).ReplaceAll(b, nil), 0o600))
	so := newServer(t, Options{Files: []string{old}})
	t.Cleanup(so.Close)
	require.Contains(t, ok(t, so, "/s/old.jsonl/"), "first token —")
	var ro Request
	decode(t, ok(t, so, "/api/s/old.jsonl/requests/1"), &ro)
	require.Nil(t, ro.First)
}

// TestCost prices the reported usage with the configured table: the request
// page, each request's item and each turn's heading show it; a server with
// no prices shows no cost at all.
func TestCost(t *testing.T) {
	srv := llmtest.NewServer(t)
	// 2000 prompt tokens of which 500 cached, 30 output.
	srv.Push(llmtest.Stream(llmtest.Text("hi"), llmtest.Finish("stop"), llmtest.Usage(2000, 30, 500, 0)))
	c, err := llm.NewClient(llm.ClientConfig{BaseURL: srv.URL(), APIKey: "sk-test-0123456789abcdef"})
	require.NoError(t, err)
	res, err := c.Stream(context.Background(), &llm.Request{Config: surface.CallConfig{Model: "demo"},
		Messages: []*surface.Message{{ID: "u", Role: "user", Content: []surface.Block{surface.Text("hi")}}}}, nil)
	require.NoError(t, err)
	require.Equal(t, &surface.Usage{Input: 1500, CacheRead: 500, Output: 30}, res.Usage)
	path := copyDemo(t, t.TempDir(), "priced.jsonl")
	appendStreamedTurn(t, path, res)

	p := eval.Prices{CacheHit: 1, CacheMiss: 10, Output: 100} // dollars per million
	want := p.Cost(2000, 500, 30)
	require.InDelta(t, 0.0005+0.015+0.003, want.Total, 1e-12)
	s := newServer(t, Options{Files: []string{path}, Prices: &p})
	t.Cleanup(s.Close)
	page := ok(t, s, "/s/priced.jsonl/requests?n=8")
	require.Contains(t, page, `<tr class="cost"><td>cost</td><td></td><td>$0.0185: $0.0150 input, $0.00050 cached, $0.0030 output</td></tr>`)
	traj := ok(t, s, "/s/priced.jsonl/")
	require.Contains(t, traj, `1500 input + 500 cached, 30 output · <span class="cost">$0.0185</span>`)
	require.Regexp(t, `Turn 6(<span class="dur"> · [^<]*</span>)?<span class="usage" [^>]*> · 2000 input \(500 cached\), 30 output · \$0\.0185</span>`, traj)

	// Every turn of the demo reported usage: each heading sums it.
	demo := newServer(t, Options{Files: []string{demoPath(t)}, Prices: &p})
	t.Cleanup(demo.Close)
	m, err := demo.model("demo.jsonl")
	require.NoError(t, err)
	points, _ := m.Chart()
	sums := map[int64]*surface.Usage{}
	for _, pt := range points {
		if pt.Usage == nil {
			continue
		}
		u := sums[pt.Turn]
		if u == nil {
			u = &surface.Usage{}
			sums[pt.Turn] = u
		}
		u.Input += pt.Usage.Input
		u.CacheRead += pt.Usage.CacheRead
		u.Output += pt.Usage.Output
	}
	require.NotEmpty(t, sums)
	require.Equal(t, sums, m.turns, "a turn's usage is the sum of its requests'")

	none := newServer(t, Options{Files: []string{path}})
	t.Cleanup(none.Close)
	for _, target := range []string{"/s/priced.jsonl/requests?n=8", "/s/priced.jsonl/"} {
		page := ok(t, none, target)
		require.NotContains(t, page, "$", "no prices: no cost, not $0")
		require.NotContains(t, page, `class="cost"`)
	}
}

func TestDollars(t *testing.T) {
	for f, want := range map[float64]string{0: "$0", 0.0185: "$0.0185", 0.0000924: "$0.000092", 0.0005: "$0.00050",
		0.5: "$0.5000", 12.345: "$12.35", 1e-10: "< $0.00000001"} {
		require.Equal(t, want, dollars(f), "%g", f)
	}
}
