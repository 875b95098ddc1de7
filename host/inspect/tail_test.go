package inspect

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

// richSession writes a session with prompt changes, a compaction, plugin
// calls, tool turns and plain turns (the demo, grown) into dir.
func richSession(t testing.TB, dir string) string {
	t.Helper()
	path := copyDemo(t, dir, "rich.jsonl")
	appendToolTurn(t, path, strings.Repeat("a tool result line\n", 40))
	for i := range 3 {
		appendTurn(t, path, "question "+itoa(int64(i)), "answer "+itoa(int64(i)))
	}
	appendToolTurn(t, path, "short")
	return path
}

// fresh is the model a whole read of the file gives.
func fresh(t *testing.T, path string) *Model {
	t.Helper()
	sess, err := Load(path)
	require.NoError(t, err)
	m := Build(sess)
	m.Summary.Name = filepath.Base(path)
	return m
}

// sameModel asserts that got shows what want shows: items (decoded),
// requests, compactions, prompt events, figures, chart and tokens.
func sameModel(t *testing.T, want, got *Model, msg string) {
	t.Helper()
	require.Equal(t, want.Session.Log.Events(), got.Session.Log.Events(), msg)
	require.Equal(t, want.Fill(want.Items), got.Fill(got.Items), msg)
	require.Equal(t, want.Requests, got.Requests, msg)
	require.Equal(t, want.Compactions, got.Compactions, msg)
	require.Equal(t, want.Prompts, got.Prompts, msg)
	require.Equal(t, want.summary(), got.summary(), msg)
	require.Equal(t, [3]any{want.Window, want.Threshold, want.ThresholdNote}, [3]any{got.Window, got.Threshold, got.ThresholdNote}, msg)
	wp, wm := want.Chart()
	gp, gm := got.Chart()
	require.Equal(t, wp, gp, msg)
	require.Equal(t, wm, gm, msg)
	require.Equal(t, want.Tokens(), got.Tokens(), msg)
	require.Equal(t, want.Session.Size, got.Session.Size, msg)
	require.Equal(t, want.Session.Torn, got.Session.Torn, msg)
}

// entryModel is the model the server holds for name, nil when none.
func entryModel(s *Server, name string) *Model {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.cache[name]; e != nil {
		return e.model
	}
	return nil
}

func TestModelFoldsTheTailOfAGrowingFile(t *testing.T) {
	whole, err := os.ReadFile(richSession(t, t.TempDir()))
	require.NoError(t, err)
	header := strings.Index(string(whole), "\n") + 1
	rng := rand.New(rand.NewPCG(29, 1))
	for round := range 3 {
		dir := t.TempDir()
		path := filepath.Join(dir, "grow.jsonl")
		// The header and a few lines, then appends cut at random bytes.
		at := header + rng.IntN(len(whole)/4)
		require.NoError(t, os.WriteFile(path, whole[:at], 0o600))
		s := newServer(t, Options{Files: []string{path}})
		m, err := s.model("grow.jsonl")
		require.NoError(t, err)
		m.Chart() // priced before it grows: the pass is carried on
		first := m
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		for at < len(whole) {
			n := min(len(whole)-at, 1+rng.IntN(3000))
			_, err := f.Write(whole[at : at+n])
			require.NoError(t, err)
			at += n
			if rng.IntN(4) == 0 {
				continue // two appends between reads
			}
			got, err := s.model("grow.jsonl")
			require.NoError(t, err)
			msg := "round " + itoa(int64(round)) + ", after " + itoa(int64(at)) + " bytes"
			require.True(t, first == got, "%s: the model was folded on, not read again", msg)
			sameModel(t, fresh(t, path), got, msg)
		}
		require.NoError(t, f.Close())
		got, err := s.model("grow.jsonl")
		require.NoError(t, err)
		require.True(t, first == got, "folded on")
		sameModel(t, fresh(t, path), got, "the whole file")
		require.Zero(t, got.Session.Torn)
	}
}

func TestReplacedOrTruncatedFilesAreReadAgain(t *testing.T) {
	dir := t.TempDir()
	rich := richSession(t, dir)
	whole, err := os.ReadFile(rich)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(whole), "\n")
	half := strings.Join(lines[:len(lines)/2], "")
	path := filepath.Join(dir, "s.jsonl")
	require.NoError(t, os.WriteFile(path, whole, 0o600))
	s := newServer(t, Options{Files: []string{path}})
	prev, err := s.model("s.jsonl")
	require.NoError(t, err)
	prev.Chart()

	steps := []struct {
		name  string
		write func()
	}{
		{"truncated", func() { require.NoError(t, os.Truncate(path, int64(len(half)))) }},
		{"replaced by a longer file", func() {
			tmp := filepath.Join(dir, "tmp")
			require.NoError(t, os.WriteFile(tmp, whole, 0o600))
			require.NoError(t, os.Rename(tmp, path))
		}},
		{"the last line rewritten in place, then the file grown", func() {
			last := lines[len(lines)-2]
			b := []byte(strings.Join(lines[:len(lines)-2], "") + strings.Replace(last, `"time":`, `"time":1`, 1))
			require.Len(t, b, len(whole)+1)
			b = append(b, grownBytes(t, path, 1)...)
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteAt(b, 0)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}},
		{"the header rewritten", func() {
			b := []byte(strings.Replace(string(whole), `"id":"`, `"id":"x`, 1))
			require.NoError(t, os.WriteFile(path, b, 0o600))
		}},
	}
	for _, step := range steps {
		step.write()
		got, err := s.model("s.jsonl")
		require.NoError(t, err, step.name)
		require.True(t, prev != got, "%s: read again whole", step.name)
		sameModel(t, fresh(t, path), got, step.name)
		got.Chart()
		prev = got
	}

	// A complete line that is not admitted: the whole read reports it.
	bad := strings.Replace(lines[len(lines)-2], `"seq":`, `"seq":1`, 1)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(bad)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = s.model("s.jsonl")
	require.ErrorContains(t, err, "not contiguous")
	_, err = Load(path)
	require.ErrorContains(t, err, "not contiguous", "as a whole read says")
}

func TestIndexFollowsAGrowingFile(t *testing.T) {
	dir := t.TempDir()
	path := copyDemo(t, dir, "a.jsonl")
	s := newServer(t, Options{Dir: dir})
	t.Cleanup(s.Close)
	summary := func() Summary {
		var out struct {
			Sessions []Summary `json:"sessions"`
		}
		decode(t, ok(t, s, "/api/sessions"), &out)
		require.Len(t, out.Sessions, 1)
		return out.Sessions[0]
	}
	require.Equal(t, fresh(t, path).summary(), summary())
	require.Nil(t, entryModel(s, "a.jsonl"), "indexed without keeping the model")
	appendTurn(t, path, "one", "two")
	require.Equal(t, fresh(t, path).summary(), summary())
	m := entryModel(s, "a.jsonl")
	require.NotNil(t, m, "a file that changed since it was indexed keeps its model")
	appendTurn(t, path, "three", "four")
	require.Equal(t, fresh(t, path).summary(), summary())
	require.True(t, m == entryModel(s, "a.jsonl"), "and its growth is folded on")
}

// TestChartIsOnePass holds the chart to a measurement of each request by
// a meter of its own over the events before its settlement.
func TestChartIsOnePass(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{richSession(t, dir), bigSession(t, dir, 1500)} {
		m := fresh(t, path)
		points, _ := m.Chart()
		require.Len(t, points, len(m.Requests))
		events := m.Session.Log.Events()
		for i, seq := range m.Requests {
			mt, err := newMeter()
			require.NoError(t, err)
			require.NoError(t, mt.Observe(events[:seq]))
			want, err := mt.Measure(context.Background(), nil)
			require.NoError(t, err)
			p := points[i]
			require.Equal(t, [4]any{i + 1, seq, want.TotalTokens, want.Tokenizer}, [4]any{p.Index, p.Seq, p.Tokens, p.Tokenizer}, "request %d", i+1)
			require.Equal(t, want.Breakdown, p.Breakdown, "request %d", i+1)
			require.Positive(t, p.Tokens)
		}
		mt, err := newMeter()
		require.NoError(t, err)
		require.NoError(t, mt.Observe(events))
		want, err := mt.Measure(context.Background(), nil)
		require.NoError(t, err)
		want.Nodes = m.Tokens().Nodes
		require.Equal(t, want, m.Tokens(), "the summary's count: the same pass, at the end")
	}
}

// benchAppendTurn measures what serving a session costs when its file
// gains one turn: the fold of the new lines into the model, its summary
// (the meter's count) and its chart, for a file of about events events;
// whole reads the file again whole instead, as before tails were folded.
func benchAppendTurn(b *testing.B, events int, whole bool) {
	path := bigSession(b, b.TempDir(), events)
	st, err := os.Stat(path)
	require.NoError(b, err)
	s := newServer(b, Options{Files: []string{path}})
	m, err := s.model("big.jsonl")
	require.NoError(b, err)
	m.Chart()
	ld, err := jsonl.Load(path)
	require.NoError(b, err)
	gen := ld.Log // the writer's log: it makes the turns the file gains
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(b, err)
	defer f.Close()
	turn := gen.LastTurn()
	var line []byte
	data := func(v any) []byte {
		d, err := surface.Data(v)
		require.NoError(b, err)
		return d
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		turn++
		id := "bench-" + itoa(turn)
		line = line[:0]
		for _, p := range []surface.Proposal{
			{Type: surface.TypeTurnStart, Data: data(map[string]any{"turn": turn})},
			{Type: surface.TypeStepStart, Data: data(map[string]any{"turn": turn, "step": 1})},
			{Type: surface.TypeUserMessage, Op: surface.Append, Data: data(surface.Message{ID: id + "u", Role: "user",
				Source: surface.Source{Kind: "user"}, Content: []surface.Block{surface.Text("question " + id)}})},
			{Type: surface.TypeAssistantMessage, Op: surface.Append, Data: data(surface.StepMessage{Turn: turn, Step: 1,
				Message: surface.Message{ID: id + "a", Role: "assistant", Source: surface.Source{Kind: "model", Provider: "offline", Model: "demo"},
					Content: []surface.Block{surface.Text("answer " + id)}}})},
			{Type: surface.TypeStepEnd, Data: data(map[string]any{"turn": turn, "step": 1})},
			{Type: surface.TypeTurnEnd, Data: data(map[string]any{"turn": turn, "reason": map[string]any{"kind": "completed"}})},
		} {
			e, err := gen.Append(p)
			require.NoError(b, err)
			line = append(surface.AppendEvent(line, &e), '\n')
		}
		_, err := f.Write(line)
		require.NoError(b, err)
		if whole {
			s.mu.Lock()
			e := s.cache["big.jsonl"]
			s.mu.Unlock()
			e.mu.Lock()
			e.ver.tail = false
			e.mu.Unlock()
		}
		b.StartTimer()
		m, release, err := s.open("big.jsonl", path)
		if err != nil {
			b.Fatal(err)
		}
		m.summary()
		m.Chart()
		release()
	}
	b.StopTimer()
	got, err := s.model("big.jsonl")
	require.NoError(b, err)
	require.Equal(b, !whole, m == got, "folded on, never read again")
	b.ReportMetric(float64(st.Size()), "file-bytes")
}

// BenchmarkAppendTurn100KB and BenchmarkAppendTurn10MB: the cost of one
// appended turn does not depend on the file's length.
func BenchmarkAppendTurn100KB(b *testing.B) { benchAppendTurn(b, 450, false) }
func BenchmarkAppendTurn10MB(b *testing.B)  { benchAppendTurn(b, 45_000, false) }

// BenchmarkAppendTurn10MBWholeRead is the same growth read whole.
func BenchmarkAppendTurn10MBWholeRead(b *testing.B) { benchAppendTurn(b, 45_000, true) }

// TestPagesWhileTheFileGrows reads every kind of page while turns are
// appended (run it with -race): each view sees a whole model, and the
// model ends as a whole read of the file.
func TestPagesWhileTheFileGrows(t *testing.T) {
	path := richSession(t, t.TempDir())
	s := newServer(t, Options{Files: []string{path}})
	t.Cleanup(s.Close)
	ok(t, s, "/s/rich.jsonl/tokens")
	done := make(chan struct{})
	errs := make(chan error, 4)
	for _, target := range []string{"/s/rich.jsonl/items?from=0&limit=5000", "/s/rich.jsonl/tokens", "/api/s/rich.jsonl/summary", "/s/rich.jsonl/requests?n=3"} {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if res := get(t, s, "GET", target); res.StatusCode != 200 {
					errs <- fmt.Errorf("%s: %d", target, res.StatusCode)
					return
				}
			}
		}()
	}
	for i := range 20 {
		appendTurn(t, path, "more "+itoa(int64(i)), "yes "+itoa(int64(i)))
	}
	close(done)
	for range 4 {
		require.NoError(t, <-errs)
	}
	got, err := s.model("rich.jsonl")
	require.NoError(t, err)
	sameModel(t, fresh(t, path), got, "after the appends")
}
