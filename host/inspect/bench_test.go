package inspect

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

// bigSession writes a session of at least n events: turns of a user
// message, a tool call and its result, and an answer.
func bigSession(tb testing.TB, dir string, n int) string {
	tb.Helper()
	path := filepath.Join(dir, "big.jsonl")
	s, err := jsonl.Create(path, jsonl.Header{ID: "big", CreatedAt: 1767268800000}, jsonl.NoSync())
	require.NoError(tb, err)
	defer s.Close()
	l := surface.New(surface.WithClock(func() int64 { return 1767268800000 }))
	data := func(v any) []byte {
		b, err := surface.Data(v)
		require.NoError(tb, err)
		return b
	}
	model := surface.Source{Kind: "model", Provider: "offline", Model: "demo"}
	header := data(map[string]any{"header": map[string]any{"config": map[string]any{"provider": "offline", "model": "demo"},
		"tools": []any{map[string]any{"name": "read_file", "description": "Read a file.", "parameters": map[string]any{"type": "object"}}}}, "reason": "initial"})
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 8)
	for turn := int64(1); l.Len() < n; turn++ {
		id := func(k string) string { return fmt.Sprintf("%s-%d", k, turn) }
		ps := []surface.Proposal{
			{Type: surface.TypeTurnStart, Data: data(map[string]any{"turn": turn})},
			{Type: surface.TypeStepStart, Data: data(map[string]any{"turn": turn, "step": 1})},
		}
		if turn == 1 {
			ps = append(ps, surface.Proposal{Type: surface.TypeSystemMessage, Op: surface.Append,
				Data: data(surface.StepMessage{Turn: 1, Step: 1, Message: surface.SystemMessage("sys", "system-prompt", "You are a test.")})})
		}
		ps = append(ps,
			surface.Proposal{Type: surface.TypeUserMessage, Op: surface.Append, Data: data(surface.Message{ID: id("u"), Role: "user",
				Source: surface.Source{Kind: "user"}, Content: []surface.Block{surface.Text("question " + id("q") + " " + filler)}})},
		)
		if turn == 1 {
			ps = append(ps, surface.Proposal{Type: surface.TypeRequestHeader, Data: header})
		}
		ps = append(ps,
			surface.Proposal{Type: surface.TypeAssistantMessage, Op: surface.Append, Data: data(surface.StepMessage{Turn: turn, Step: 1,
				Message: surface.Message{ID: id("a"), Role: "assistant", Source: model, Content: []surface.Block{surface.ToolCall(id("c"), "read_file", `{"path":"a.txt"}`)}},
				Usage:   &surface.Usage{Input: 100, Output: 10}})},
			surface.Proposal{Type: surface.TypeToolCall, Data: data(map[string]any{"turn": turn, "step": 1, "callId": id("c"), "name": "read_file", "arguments": `{"path":"a.txt"}`})},
			surface.Proposal{Type: surface.TypeToolResult, Op: surface.Append, Data: data(surface.StepMessage{Turn: turn, Step: 1,
				Message: surface.Message{ID: id("r"), Role: "user", Source: surface.Source{Kind: "tool", CallID: id("c")},
					Content: []surface.Block{surface.ToolResult(id("c"), false, surface.Text(filler))}}})},
			surface.Proposal{Type: surface.TypeStepEnd, Data: data(map[string]any{"turn": turn, "step": 1})},
			surface.Proposal{Type: surface.TypeStepStart, Data: data(map[string]any{"turn": turn, "step": 2})},
			surface.Proposal{Type: surface.TypeAssistantMessage, Op: surface.Append, Data: data(surface.StepMessage{Turn: turn, Step: 2,
				Message: surface.Message{ID: id("b"), Role: "assistant", Source: model, Content: []surface.Block{surface.Text("answer " + filler)}}})},
			surface.Proposal{Type: surface.TypeStepEnd, Data: data(map[string]any{"turn": turn, "step": 2})},
			surface.Proposal{Type: surface.TypeTurnEnd, Data: data(map[string]any{"turn": turn, "reason": map[string]any{"kind": "completed"}})},
		)
		// One proposal at a time: a batch plans on a copy of the surface.
		evs := make([]surface.Event, 0, len(ps))
		for _, p := range ps {
			e, err := l.Append(p)
			require.NoError(tb, err)
			evs = append(evs, e)
		}
		require.NoError(tb, s.Append(evs))
	}
	return path
}

func TestBigSessionLoads(t *testing.T) {
	path := bigSession(t, t.TempDir(), 2000)
	s := newServer(t, Options{Files: []string{path}})
	page := ok(t, s, "/s/big.jsonl/")
	require.Equal(t, PageSize, strings.Count(page, `class="it `), "the first page only")
	require.Contains(t, page, `<div class="more" data-next=`)
	ok(t, s, "/s/big.jsonl/requests?n=300")
}

func TestFirstScreenFromAPrefixWhileTheLogLoads(t *testing.T) {
	path := bigSession(t, t.TempDir(), 40_000)
	m := prefixModel(path, 1<<40, PageSize)
	require.NotNil(t, m, "a prefix of the file is a log")
	require.Greater(t, len(m.Items), PageSize)
	full, err := Load(path)
	require.NoError(t, err)
	require.Less(t, m.Session.Log.Len(), full.Log.Len(), "only a prefix was read")
	whole := Build(full)
	require.Equal(t, whole.Fill(whole.Items[:PageSize]), m.Fill(m.Items[:PageSize]), "the first page is the same")

	s := newServer(t, Options{Files: []string{path}})
	page := ok(t, s, "/s/big.jsonl/")
	require.Equal(t, PageSize, strings.Count(page, `class="it `))
	more := ok(t, s, "/s/big.jsonl/items?from="+itoa(whole.Items[PageSize].Seq))
	require.Contains(t, more, `data-seq="`+itoa(whole.Items[PageSize].Seq)+`"`)
}

// benchFirstScreen measures GET /s/big.jsonl/ of a 100k-event session:
// cold (a new server: the first page is rendered from the file's first
// bytes while the whole log loads in the background; the benchmark waits
// for that load outside the timer) or warm (the model cached, as after
// the first visit or a live update).
func benchFirstScreen(b *testing.B, cold bool) {
	path := bigSession(b, b.TempDir(), 100_000)
	s := newServer(b, Options{Files: []string{path}})
	serve := func(s *Server) {
		r := httptest.NewRequest("GET", "/s/big.jsonl/", nil)
		r.Host = "127.0.0.1"
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	serve(s)
	if _, err := s.model("big.jsonl"); err != nil { // the whole log is loaded
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if cold {
			b.StopTimer()
			s = newServer(b, Options{Files: []string{path}})
			b.StartTimer()
		}
		serve(s)
		if cold {
			b.StopTimer()
			if _, err := s.model("big.jsonl"); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
}

// BenchmarkLoadAndBuild100k is the whole log's load: what the first screen
// no longer waits for, and what every later page of a cold server does.
func BenchmarkLoadAndBuild100k(b *testing.B) {
	path := bigSession(b, b.TempDir(), 100_000)
	for b.Loop() {
		sess, err := Load(path)
		if err != nil {
			b.Fatal(err)
		}
		Build(sess)
	}
}

func BenchmarkTrajectoryFirstScreen100kCold(b *testing.B) { benchFirstScreen(b, true) }
func BenchmarkTrajectoryFirstScreen100kWarm(b *testing.B) { benchFirstScreen(b, false) }

// benchBigRequest serves the request page of a request that carries a
// 5 MB tool result: warm (the request built, as for every view after the
// first, concurrent ones included) or cold (built again for each view).
func benchBigRequest(b *testing.B, cold bool) {
	path := copyDemo(b, b.TempDir(), "big.jsonl")
	appendToolTurn(b, path, bigResult(5<<20))
	s := newServer(b, Options{Files: []string{path}})
	m, err := s.model("big.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	n := len(m.Requests) // the answer after the result
	target := "/s/big.jsonl/requests?n=" + itoa(int64(n))
	view := func() int {
		r := httptest.NewRequest("GET", target, nil)
		r.Host = "127.0.0.1"
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
		return w.Body.Len()
	}
	size := view()
	b.ReportAllocs()
	for b.Loop() {
		if cold {
			m.reqMu.Lock()
			m.reqs = nil
			m.reqMu.Unlock()
		}
		view()
	}
	b.ReportMetric(float64(size), "page-bytes")
}

func BenchmarkRequestPage5MBWarm(b *testing.B) { benchBigRequest(b, false) }
func BenchmarkRequestPage5MBCold(b *testing.B) { benchBigRequest(b, true) }
