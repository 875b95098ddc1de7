package inspect

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// TestDurations builds a log whose clock advances 100 ms an event: turns
// and steps carry their wall time, settlements theirs, and the pages show
// them.
func TestDurations(t *testing.T) {
	now := int64(1767268800000)
	l := surface.New(surface.WithClock(func() int64 { now += 100; return now }))
	data := func(v any) []byte {
		b, err := surface.Data(v)
		require.NoError(t, err)
		return b
	}
	model := surface.Source{Kind: "model", Provider: "offline", Model: "demo"}
	for _, p := range []surface.Proposal{
		{Type: surface.TypeTurnStart, Data: data(map[string]any{"turn": 1})},
		{Type: surface.TypeStepStart, Data: data(map[string]any{"turn": 1, "step": 1})},
		{Type: surface.TypeUserMessage, Op: surface.Append, Data: data(surface.Message{ID: "u", Role: "user", Source: surface.Source{Kind: "user"}, Content: []surface.Block{surface.Text("hi")}})},
		{Type: surface.TypeAssistantMessage, Op: surface.Append, Data: data(surface.StepMessage{Turn: 1, Step: 1,
			Message: surface.Message{ID: "a", Role: "assistant", Source: model, Content: []surface.Block{surface.Text("hello")}}})},
		{Type: surface.TypeStepEnd, Data: data(map[string]any{"turn": 1, "step": 1})},
		{Type: surface.TypeTurnEnd, Data: data(map[string]any{"turn": 1, "reason": map[string]any{"kind": "completed"}})},
		{Type: surface.TypeTurnStart, Data: data(map[string]any{"turn": 2})},
		{Type: surface.TypeStepStart, Data: data(map[string]any{"turn": 2, "step": 1})},
	} {
		_, err := l.Append(p)
		require.NoError(t, err)
	}
	m := Build(&Session{ID: "timed", Log: l})
	got := map[string]Item{}
	for _, it := range m.Items {
		if it.Kind != ItemMessage || it.Request > 0 {
			got[it.Kind+itoa(it.Turn)] = it
		}
	}
	require.Equal(t, int64(500), got["turn1"].Duration, "turn/start to turn/end")
	require.Equal(t, int64(300), got["step1"].Duration, "step/start to step/end")
	require.Equal(t, 1, got["message1"].Request)
	require.Equal(t, int64(100), got["message1"].Wall, "the settlement, from the event before it")
	require.Zero(t, got["turn2"].Duration, "an open turn has none")
	require.Zero(t, got["step2"].Duration)
	require.Equal(t, int64(1767268800100), got["turn1"].Time)

	s := newServer(t, Options{})
	t.Cleanup(s.Close)
	var b strings.Builder
	require.NoError(t, s.pages.ExecuteTemplate(&b, "items", trajectoryData{Name: "timed", Model: m, Items: m.Fill(m.Items), Next: -1}))
	require.Contains(t, b.String(), `Turn 1<span class="dur"> · 500 ms</span>`)
	require.Contains(t, b.String(), `step 1 · 300 ms`)
	require.Contains(t, b.String(), `>100 ms</span>`)
	require.Contains(t, b.String(), `title="2026-01-01 12:00:00 UTC"`)
}

// TestRequestPromptCard: each request names the prompt version it carried,
// and the first request after a change says so with the diff.
func TestRequestPromptCard(t *testing.T) {
	s := newServer(t, Options{Files: []string{demoPath(t)}})
	t.Cleanup(s.Close)
	m, err := s.model("demo.jsonl")
	require.NoError(t, err)
	var changed PromptEvent
	for _, p := range m.Prompts {
		if p.Kind == PromptChanged {
			changed = p
		}
	}
	require.NotZero(t, changed.Seq, "the demo changes its prompt")
	news := 0
	for n := 1; n <= len(m.Requests); n++ {
		page := ok(t, s, "/s/demo.jsonl/requests?n="+itoa(int64(n)))
		require.Contains(t, page, `<section class="prompt-card" id="prompt">`, "request %d", n)
		seq := m.Requests[n-1]
		if n == 1 {
			require.Contains(t, page, "the first request to carry it")
			continue
		}
		if m.Requests[n-2] < changed.Seq && changed.Seq < seq {
			news++
			require.Contains(t, page, "prompt changed (node 0 replaced)</span> at seq "+itoa(changed.Seq))
			require.Contains(t, page, "new since request "+itoa(int64(n-1)))
			require.Contains(t, page, `<span class="add">&#43; Answer like a pirate.</span>`)
		} else {
			require.Contains(t, page, "the version request "+itoa(int64(n-1))+" carried")
			require.NotContains(t, page, "prompt-diff")
		}
	}
	require.Equal(t, 1, news, "one request first carries the changed prompt")
}

func TestTrajectoryFilter(t *testing.T) {
	s := newServer(t, Options{Files: []string{demoPath(t)}})
	t.Cleanup(s.Close)
	for _, tc := range []struct {
		query string
		want  func(it Item) bool
	}{
		{"kind=tool", func(it Item) bool { return it.Kind == ItemTool }},
		{"role=user", func(it Item) bool { return it.Role == "user" }},
		{"kind=message&role=assistant", func(it Item) bool { return it.Kind == ItemMessage && it.Role == "assistant" }},
		{"q=PIRATE", func(it Item) bool { return it.matches("pirate") }},
	} {
		t.Run(tc.query, func(t *testing.T) {
			m, err := s.model("demo.jsonl")
			require.NoError(t, err)
			var want []string
			for _, it := range m.Fill(m.Items) {
				if tc.want(it) {
					want = append(want, `data-seq="`+itoa(it.Seq)+`"`)
				}
			}
			require.NotEmpty(t, want)
			page := ok(t, s, "/s/demo.jsonl/?"+tc.query)
			var got []string
			for _, part := range strings.Split(page, `class="it `)[1:] {
				i := strings.Index(part, `data-seq="`)
				j := strings.Index(part[i+10:], `"`)
				got = append(got, part[i:i+10+j+1])
			}
			require.Equal(t, want, got)
			require.Contains(t, page, "clear the filter")
			// Paging and live fetches keep the filter.
			frag := ok(t, s, "/s/demo.jsonl/items?from=0&limit=1&"+tc.query)
			require.Equal(t, 1, strings.Count(frag, `class="it `))
			require.Contains(t, frag, want[0])
		})
	}
	require.NotContains(t, ok(t, s, "/s/demo.jsonl/"), "clear the filter")
}

// TestRequestMessageView: a request page renders the request's messages
// beside its wire body, bounded.
func TestRequestMessageView(t *testing.T) {
	s := newServer(t, Options{Files: []string{demoPath(t)}})
	t.Cleanup(s.Close)
	m, err := s.model("demo.jsonl")
	require.NoError(t, err)
	r, err := m.Request(4)
	require.NoError(t, err)
	require.NotEmpty(t, r.Messages)
	require.Equal(t, "system", r.Messages[0].Role)
	page := ok(t, s, "/s/demo.jsonl/requests?n=4")
	require.Contains(t, page, `<details id="messages"><summary><h2>Messages (`+itoa(int64(len(r.Messages)))+`)</h2>`)
	sect := page[strings.Index(page, `<section class="messages">`):strings.Index(page, `<section class="wire">`)]
	bubbles, tools := 0, 0
	for _, it := range r.Messages {
		if it.Kind == ItemTool {
			tools++
		} else {
			bubbles++
		}
	}
	require.Equal(t, bubbles, strings.Count(sect, `<div class="bubble `))
	require.Equal(t, tools, strings.Count(sect, `<div class="tool`))
	require.Contains(t, sect, "Answer like a pirate.", "the system prompt the request carried")

	var msgs []*surface.Message
	for i := range ShownMessages + 5 {
		msgs = append(msgs, &surface.Message{Role: "user", Content: []surface.Block{surface.Text("m" + itoa(int64(i)))}})
	}
	view, omitted := messageView(msgs)
	require.Len(t, view, ShownMessages)
	require.Equal(t, 5, omitted)
	require.Equal(t, "m0", view[0].Text, "the first")
	require.Equal(t, "m"+itoa(int64(ShownMessages+4)), view[len(view)-1].Text, "and the latest")
	require.Equal(t, "m6", view[1].Text)
}
