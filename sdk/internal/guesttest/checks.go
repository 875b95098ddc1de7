package guesttest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
)

// Describe checks what a module says about itself at load.
func Describe(t *testing.T, wasm []byte, name, sdkPrefix string, kind abi.Kind) {
	p := load(t, "configured-name", wasm)
	d := p.Description()
	require.Equal(t, name, d.Name)
	require.Equal(t, "0.1.0", d.Version)
	require.Equal(t, []abi.Kind{kind}, d.Kinds)
	require.Equal(t, uint32(2), d.AbiMinor)
	require.True(t, strings.HasPrefix(d.Sdk, sdkPrefix), "sdk %q", d.Sdk)
	require.Empty(t, d.Events)
}

// Prompt checks the prompt example under the real sandbox: sections
// trimmed and joined, the configured footer (JSON escapes decoded), the
// host's date, and a compaction call refused as unsupported.
func Prompt(t *testing.T, wasm []byte) {
	ctx := context.Background()
	p := load(t, "house-prompt", wasm, plugin.WithConfig([]byte(`{"other": [1, {"footer": "no"}], "footer": "Be brief.\n\u00e9\ud83d\ude00 \"ok\""}`)))
	req := &abi.RenderRequest{
		Sections: []abi.Section{{Key: "base", Text: "  You are Weir.\n"}, {Key: "empty", Text: " \n\t"}, {Key: "tools", Text: "Use tools."}},
		Route:    abi.Route{Provider: "p", Model: "m"},
		HostData: []abi.KeyValue{{Key: "cwd", Value: "/x"}, {Key: "date", Value: " 2025-05-01 "}},
	}
	got, err := p.RenderPrompt(ctx, nil, req)
	require.NoError(t, err)
	require.Equal(t, "You are Weir.\n\nUse tools.\n\nBe brief.\né😀 \"ok\"\n\nToday's date: 2025-05-01.", got)

	// A large request: the input buffer grows, and the same bytes come back.
	big := strings.Repeat("0123456789abcdef", 1<<14) // 256 KiB
	got, err = p.RenderPrompt(ctx, nil, &abi.RenderRequest{Sections: []abi.Section{{Key: "a", Text: big}}})
	require.NoError(t, err)
	require.Equal(t, big+"\n\nBe brief.\né😀 \"ok\"", got)

	// Nothing at all renders an empty prompt.
	empty := load(t, "bare", wasm)
	got, err = empty.RenderPrompt(ctx, nil, &abi.RenderRequest{})
	require.NoError(t, err)
	require.Equal(t, "", got)

	_, err = p.Manual(ctx, &plugintest.Session{}, &abi.CompactionRequest{})
	require.Error(t, err, "the host calls only the kinds a plugin lists")

	_, err = plugintest.Runtime(t).Load(ctx, "bad", wasm, plugin.WithConfig([]byte(`[1]`)))
	require.ErrorContains(t, err, "prompt config: not a JSON object")
}

// Compaction checks the compaction example against a session of the
// test's own: a manual compaction summarizes every node after the system
// prompt but the newest, reading large messages and a large summary
// through the (buf, limit) retry, and proposes a bracket the host's
// decoder accepts.
func Compaction(t *testing.T, wasm []byte) {
	ctx := context.Background()
	p := load(t, "house-compactor", wasm, plugin.WithConfig([]byte(`{"maxNodes": 3}`)))
	long := strings.Repeat("x", 100_000)
	msg := func(role, text string) []byte {
		b, err := json.Marshal(map[string]any{"role": role, "content": []map[string]string{{"type": "text", "text": text}}})
		require.NoError(t, err)
		return b
	}
	s := &plugintest.Session{
		Nodes: []abi.Node{
			{Seq: 2, Type: "system/message", Role: "system"},
			{Seq: 5, Type: "user/message", Role: "user"},
			{Seq: 7, Type: "assistant/message", Role: "assistant"},
			{Seq: 9, Type: "user/message", Role: "user"},
			{Seq: 11, Type: "assistant/message", Role: "assistant"},
		},
		Messages: map[int64][]byte{2: msg("system", "sys"), 5: msg("user", long), 7: msg("assistant", "a"),
			9: msg("user", "b"), 11: msg("assistant", "c")},
		Gens: abi.Generations{Replace: 1, Content: 1, LogLength: 12},
	}
	summary := strings.Repeat("summary ", 2000) + "é"
	var asked *abi.SummarizeRequest
	s.Summarizer = func(_ context.Context, req *abi.SummarizeRequest) (*abi.SummarizeResult, error) {
		asked = req
		return &abi.SummarizeResult{Text: []string{summary[:10], summary[10:]}}, nil
	}

	// Below maxNodes before a step: nothing, and the state is kept.
	small := &plugintest.Session{Nodes: s.Nodes[:3]}
	res, err := p.PreStep(ctx, small, &abi.CompactionRequest{Turn: 1})
	require.NoError(t, err)
	require.Empty(t, res.Proposals)
	require.False(t, res.HasState)

	res, err = p.Manual(ctx, s, &abi.CompactionRequest{Turn: 3, CommandID: "cmd", State: []byte("41")})
	require.NoError(t, err)
	require.NotNil(t, asked)
	require.Len(t, asked.Messages, 3, "every node after the prompt but the newest")
	require.Equal(t, string(s.Messages[5]), string(asked.Messages[0]))
	require.Equal(t, string(s.Messages[9]), string(asked.Messages[2]))

	require.True(t, res.HasState)
	require.Equal(t, "42", string(res.State), "the state counts compactions")
	require.Len(t, res.Proposals, 4)
	start, sum, cp, end := res.Proposals[0], res.Proposals[1], res.Proposals[2], res.Proposals[3]
	id := "checkpoint-12"
	require.Equal(t, "compaction/start", start.Type)
	require.JSONEq(t, fmt.Sprintf(`{"compactionId":%q,"turn":3}`, id), string(start.Data))
	require.Equal(t, abi.IntentNone, start.Intent.Kind)
	require.False(t, start.HasSourceEventSeqs)
	require.Equal(t, "compaction/summary", sum.Type)
	sj, err := json.Marshal(summary)
	require.NoError(t, err)
	require.JSONEq(t, fmt.Sprintf(`{"compactionId":%q,"summary":%s,"shadowedSeqs":[5,7,9]}`, id, sj), string(sum.Data))
	require.Equal(t, "user/message", cp.Type)
	require.Equal(t, abi.Intent{Kind: abi.IntentReplace, StartSeq: 5, EndSeq: 9}, cp.Intent)
	require.True(t, cp.HasSourceEventSeqs)
	require.Equal(t, []int64{12, 13, 5, 7, 9}, cp.SourceEventSeqs)
	var m struct {
		ID      string            `json:"id"`
		Role    string            `json:"role"`
		Source  map[string]string `json:"source"`
		Content []block           `json:"content"`
	}
	require.NoError(t, json.Unmarshal(cp.Data, &m))
	require.Equal(t, "user", m.Role)
	require.Equal(t, map[string]string{"kind": "plugin", "plugin": "house-compactor", "compactionId": id}, m.Source,
		"the source names the configured plugin, not the described one")
	require.Equal(t, "Summary of the earlier conversation:\n"+summary, m.Content[0].Text)
	require.Equal(t, "compaction/end", end.Type)
	require.JSONEq(t, fmt.Sprintf(`{"compactionId":%q}`, id), string(end.Data))

	// A tool result after the newest candidate moves the cut before the
	// assistant message that made the call.
	s.Nodes = []abi.Node{
		{Seq: 2, Type: "system/message"}, {Seq: 5, Type: "user/message"}, {Seq: 6, Type: "assistant/message"},
		{Seq: 7, Type: "user/message"}, {Seq: 9, Type: "assistant/message"}, {Seq: 11, Type: "tool/result"},
	}
	s.Messages[6], s.Messages[7] = msg("assistant", long), msg("user", "q")
	res, err = p.Manual(ctx, s, &abi.CompactionRequest{})
	require.NoError(t, err)
	require.Len(t, res.Proposals, 4)
	require.Equal(t, abi.Intent{Kind: abi.IntentReplace, StartSeq: 5, EndSeq: 7}, res.Proposals[2].Intent)
	require.Equal(t, "1", string(res.State))

	// A failing import is the plugin's error, with the host's reason.
	s.Summarizer = nil
	_, err = p.Manual(ctx, s, &abi.CompactionRequest{})
	require.ErrorContains(t, err, "summarize: not granted")

	// Configuration errors fail the load.
	_, err = plugintest.Runtime(t).Load(ctx, "bad", wasm, plugin.WithConfig([]byte(`{"maxNodes": 0}`)))
	require.ErrorContains(t, err, "compaction config: maxNodes must be an integer of at least 1")
}

// Failures checks how the host reports the failing test plugin: a plugin
// error keeps the instance, a trap quotes the guest's stderr (trapText)
// and replaces it, and the plugin goes on answering either way.
func Failures(t *testing.T, wasm []byte, trapText string) {
	ctx := context.Background()
	p := load(t, "failing", wasm)
	render := func(mode string) (string, error) {
		return p.RenderPrompt(ctx, nil, &abi.RenderRequest{HostData: []abi.KeyValue{{Key: "mode", Value: mode}}})
	}
	_, err := render("error")
	require.ErrorContains(t, err, "plugin error: asked to fail")
	require.NotContains(t, err.Error(), "instance replaced")
	got, err := render("")
	require.NoError(t, err)
	require.Equal(t, "fine", got)

	_, err = render("trap")
	require.ErrorContains(t, err, "trap")
	require.ErrorContains(t, err, trapText, "the trap quotes the guest's stderr")
	require.ErrorContains(t, err, "instance replaced")
	got, err = render("")
	require.NoError(t, err)
	require.Equal(t, "fine", got)
}

// Meter checks the wire-level test meter: observe adds the events it saw
// to the count in its state, measure reports the count.
func Meter(t *testing.T, wasm []byte) {
	ctx := context.Background()
	p := load(t, "meter", wasm)
	require.Equal(t, []abi.Kind{abi.KindTokenMeter}, p.Description().Kinds)
	state, err := p.Observe(ctx, &plugintest.Session{}, &abi.ObserveRequest{State: []byte("40"),
		Events: []abi.Event{{Seq: 1, Type: "a/b", JSON: []byte(`{}`)}, {Seq: 2, Type: "a/b", JSON: []byte(`{}`)}}})
	require.NoError(t, err)
	require.Equal(t, "42", string(state))
	m, err := p.Measure(ctx, &plugintest.Session{}, &abi.MeasureRequest{State: state})
	require.NoError(t, err)
	require.Equal(t, int64(42), m.TotalTokens)
	require.Equal(t, int64(42), m.SurfaceTokens)
	require.Equal(t, "count", m.Tokenizer)
	_, err = p.RenderPrompt(ctx, nil, &abi.RenderRequest{})
	require.Error(t, err, "not a prompt provider")
}

// load loads a guest with deadlines far above what its calls cost (at
// most tens of milliseconds), so a busy machine does not turn a correct
// call into a deadline; the deadlines themselves are tested elsewhere.
func load(t testing.TB, name string, wasm []byte, opts ...plugin.Option) *plugin.Plugin {
	t.Helper()
	for _, k := range []abi.Kind{abi.KindUnspecified, abi.KindSystemPrompt, abi.KindCompaction, abi.KindTokenMeter} {
		opts = append(opts, plugin.WithDeadline(k, 30*time.Second))
	}
	return plugintest.LoadBytes(t, name, wasm, opts...)
}

// Minor2 checks the minor-2 parts of the ABI through an SDK: describe's
// render_on_change, events and methods, compaction.region with its seqs,
// the event import, and idle_below_tokens.
// testdata/minor2 of each SDK: a prompt and compaction provider using each
// of them.
func Minor2(t *testing.T, wasm []byte) {
	p := load(t, "minor2", wasm)
	d := p.Description()
	require.True(t, d.RenderOnChange)
	require.Equal(t, []string{"minor2/region"}, d.Events)
	require.Equal(t, []abi.Method{abi.MethodCompactionRegion}, d.Methods)
	require.False(t, d.WarmState)

	ctx := context.Background()
	s := &plugintest.Session{Events: map[int64]abi.EventData{
		5: {Seq: 5, Type: "tool/result", Data: []byte(`{"turn":2,"step":3}`)},
	}}
	res, err := p.PreStep(ctx, s, &abi.CompactionRequest{Turn: 1})
	require.NoError(t, err)
	require.True(t, res.HasIdleBelowTokens)
	require.Equal(t, int64(1000), res.IdleBelowTokens)

	res, err = p.Region(ctx, s, &abi.CompactionRequest{Turn: 2, RegionStartSeq: 5, RegionEndSeq: 9})
	require.NoError(t, err)
	require.False(t, res.HasIdleBelowTokens)
	require.Len(t, res.Proposals, 1)
	require.Equal(t, "minor2/region", res.Proposals[0].Type)
	require.True(t, res.Proposals[0].Ignorable)
	require.JSONEq(t, `{"start":5,"end":9,"type":"tool/result","data":{"turn":2,"step":3}}`, string(res.Proposals[0].Data))

	_, err = p.Region(ctx, s, &abi.CompactionRequest{RegionStartSeq: 6, RegionEndSeq: 9})
	require.ErrorContains(t, err, "event: ")
}
