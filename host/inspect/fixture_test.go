package inspect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

// demoPath is the sample session of the repository.
func demoPath(t testing.TB) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "examples", "sessions", "demo.jsonl"))
	require.NoError(t, err)
	return p
}

// copyDemo copies the demo session into dir under name.
func copyDemo(t testing.TB, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(demoPath(t))
	require.NoError(t, err)
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p
}

// Hostile payloads: markup, scripts, javascript: URLs and bidi controls in
// everything a log carries that a page shows.
const (
	xssUser    = `<script>document.title="pwned-user";alert(1)</script><img src=y onerror=alert(2)><img src=x onerror="window.__xss='img'"><a href="javascript:window.__xss='href'">click me</a>`
	xssBidi    = "invoice\u202Efdp.exe and \u2066isolate\u2069"
	xssTool    = `ls<img src=x onerror=window.__xss=3>`
	xssPrompt  = `<script>window.__xss="prompt"</script><style>body{display:none}</style>`
	xssPlugin  = `<svg onload=window.__xss=6>`
	xssFailure = `<iframe src="javascript:window.parent.__xss=7"></iframe>`
)

// hostileSession writes a copy of the demo session whose user message,
// tool name, plugin names and prompt texts are hostile, plus a plugin
// failure with a hostile plugin name and error, into dir.
func hostileSession(t testing.TB, dir string) string {
	t.Helper()
	b, err := os.ReadFile(demoPath(t))
	require.NoError(t, err)
	enc := func(s string) string {
		v, err := json.Marshal(s)
		require.NoError(t, err)
		return strings.Trim(string(v), `"`)
	}
	text := string(b)
	for _, r := range [][2]string{
		{"Hello, who are you?", enc(xssUser + " " + xssBidi)},
		{"list_files", enc(xssTool)},
		{"You are a careful, concise assistant", enc(xssPrompt + "You are a careful, concise assistant")},
		{`"plugin":"system-prompt"`, `"plugin":"` + enc(xssPlugin) + `"`},
		{"compaction-basic", enc(xssPlugin + "c")},
	} {
		require.Contains(t, text, r[0])
		text = strings.ReplaceAll(text, r[0], r[1])
	}
	p := filepath.Join(dir, "hostile.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	s, l, err := jsonl.Open(p)
	require.NoError(t, err, "the hostile session loads")
	data, err := surface.Data(map[string]any{"plugin": xssPlugin, "kind": "compaction", "error": xssFailure + " " + xssBidi})
	require.NoError(t, err)
	evs, err := l.AppendBatch([]surface.Proposal{{Type: surface.TypePluginFailure, Data: data, Ignorable: true}})
	require.NoError(t, err)
	require.NoError(t, s.Append(evs))
	require.NoError(t, s.Close())
	return p
}

// appendTurn appends one completed turn (user message, assistant answer)
// to the session file at path, as a running host would.
func appendTurn(t testing.TB, path, user, answer string) {
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
	msg := func(id, role, text string) surface.Message {
		return surface.Message{ID: id, Role: role, Source: surface.Source{Kind: map[string]string{"user": "user", "assistant": "model"}[role],
			Provider: map[bool]string{true: "offline"}[role == "assistant"], Model: map[bool]string{true: "demo"}[role == "assistant"]},
			Content: []surface.Block{surface.Text(text)}}
	}
	id := func(s string) string { return "live-" + s + "-" + itoa(turn) }
	evs, err := l.AppendBatch([]surface.Proposal{
		{Type: surface.TypeTurnStart, Data: data(map[string]any{"turn": turn})},
		{Type: surface.TypeStepStart, Data: data(map[string]any{"turn": turn, "step": 1})},
		{Type: surface.TypeUserMessage, Data: data(msg(id("u"), "user", user)), Op: surface.Append},
		{Type: surface.TypeAssistantMessage, Data: data(surface.StepMessage{Turn: turn, Step: 1, Message: msg(id("a"), "assistant", answer)}), Op: surface.Append},
		{Type: surface.TypeStepEnd, Data: data(map[string]any{"turn": turn, "step": 1})},
		{Type: surface.TypeTurnEnd, Data: data(map[string]any{"turn": turn, "reason": map[string]any{"kind": "completed"}})},
	})
	require.NoError(t, err)
	require.NoError(t, s.Append(evs))
}

// grownBytes returns the bytes turns more turns (appendTurn's "question N",
// "answer N") add to the session file at path, leaving the file as it is.
func grownBytes(t testing.TB, path string, turns int) []byte {
	t.Helper()
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	scratch := filepath.Join(t.TempDir(), "scratch.jsonl")
	require.NoError(t, os.WriteFile(scratch, before, 0o600))
	for i := 0; i < turns; i++ {
		s, l, err := jsonl.Open(scratch)
		require.NoError(t, err)
		turn := l.LastTurn() + 1
		require.NoError(t, s.Close())
		appendTurn(t, scratch, "question "+itoa(turn), "answer "+itoa(turn))
	}
	after, err := os.ReadFile(scratch)
	require.NoError(t, err)
	require.Greater(t, len(after), len(before))
	return after[len(before):]
}

// appendToolTurn appends a turn whose tool call returns result, then an
// answer, to the session file at path; it returns the result's seq. The
// answer's request carries the result. Its events carry the demo's fixed
// time, so the pages of the file are the same on every run (the
// screenshots' manifest hashes them).
func appendToolTurn(t testing.TB, path, result string) int64 {
	t.Helper()
	s, l, err := jsonl.Open(path, jsonl.LogOptions(surface.WithClock(func() int64 { return 1767268800000 })))
	require.NoError(t, err)
	defer s.Close()
	turn := l.LastTurn() + 1
	data := func(v any) []byte {
		b, err := surface.Data(v)
		require.NoError(t, err)
		return b
	}
	model := surface.Source{Kind: "model", Provider: "offline", Model: "demo"}
	id := func(k string) string { return "tool-" + k + "-" + itoa(turn) }
	ps := []surface.Proposal{
		{Type: surface.TypeTurnStart, Data: data(map[string]any{"turn": turn})},
		{Type: surface.TypeStepStart, Data: data(map[string]any{"turn": turn, "step": 1})},
		{Type: surface.TypeUserMessage, Op: surface.Append, Data: data(surface.Message{ID: id("u"), Role: "user",
			Source: surface.Source{Kind: "user"}, Content: []surface.Block{surface.Text("read the big file")}})},
		{Type: surface.TypeAssistantMessage, Op: surface.Append, Data: data(surface.StepMessage{Turn: turn, Step: 1,
			Message: surface.Message{ID: id("a"), Role: "assistant", Source: model, Content: []surface.Block{surface.ToolCall(id("c"), "read_file", `{"path":"big.txt"}`)}}})},
		{Type: surface.TypeToolCall, Data: data(map[string]any{"turn": turn, "step": 1, "callId": id("c"), "name": "read_file", "arguments": `{"path":"big.txt"}`})},
		{Type: surface.TypeToolResult, Op: surface.Append, Data: data(surface.StepMessage{Turn: turn, Step: 1,
			Message: surface.Message{ID: id("r"), Role: "user", Source: surface.Source{Kind: "tool", CallID: id("c")},
				Content: []surface.Block{surface.ToolResult(id("c"), false, surface.Text(result))}}})},
		{Type: surface.TypeStepEnd, Data: data(map[string]any{"turn": turn, "step": 1})},
		{Type: surface.TypeStepStart, Data: data(map[string]any{"turn": turn, "step": 2})},
		{Type: surface.TypeAssistantMessage, Op: surface.Append, Data: data(surface.StepMessage{Turn: turn, Step: 2,
			Message: surface.Message{ID: id("b"), Role: "assistant", Source: model, Content: []surface.Block{surface.Text("it is big")}}})},
		{Type: surface.TypeStepEnd, Data: data(map[string]any{"turn": turn, "step": 2})},
		{Type: surface.TypeTurnEnd, Data: data(map[string]any{"turn": turn, "reason": map[string]any{"kind": "completed"}})},
	}
	var evs []surface.Event
	var seq int64
	for _, p := range ps {
		e, err := l.Append(p)
		require.NoError(t, err)
		if p.Type == surface.TypeToolResult {
			seq = e.Seq
		}
		evs = append(evs, e)
	}
	require.NoError(t, s.Append(evs))
	return seq
}

// bigResult is a tool result of n bytes on one line, with a multi-byte
// character in it so byte and character counts differ.
func bigResult(n int) string {
	return "é" + strings.Repeat("x", n-2)
}
