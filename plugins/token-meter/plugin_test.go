package tokenmeter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/plugins/token-meter/meter"
	"github.com/weirhost/weir/plugins/token-meter/native"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/sdk/tokenizer/openai"
	"github.com/weirhost/weir/surface"
)

// standalone builds the plugin alone into a module of its own: the tests
// run it under the real sandbox (the shipped first-party module, which
// holds all three plugins, runs in the conformance tests and in
// plugins.TestFirstPartyLoad).
const standalone = "./standalone"

// loadStandalone builds the standalone module (once per source change)
// and loads it under the plugin's name.
func loadStandalone(tb testing.TB, opts ...plugin.Option) *plugin.Plugin {
	tb.Helper()
	return plugintest.LoadBytes(tb, Name, plugintest.Build(tb, standalone), opts...)
}

// The module is built once per source change and compiled once per test
// binary; every test loads it into the shared plugintest runtime.

// session is a session log under construction, with the host side a
// plugin sees of it.
type session struct {
	tb         testing.TB
	log        *surface.Log
	host       *plugintest.Session
	turn, step int64
	ids        int
}

func newSession(tb testing.TB, countTokens bool) *session {
	s := &session{tb: tb, log: surface.New(surface.WithClock(func() int64 { return 1000 })),
		host: &plugintest.Session{Messages: map[int64][]byte{}}}
	if countTokens {
		s.host.Tokenizer = hostTokenizer
	}
	return s
}

// hostTokenizer is the host's count_tokens: its native tokenizers.
func hostTokenizer(name string, text []byte) (int, error) {
	switch name {
	case meter.DeepSeekV3:
		return tokenizer.DeepSeekV3().Count(string(text)), nil
	case "o200k_base":
		return openai.O200kBase.Count(string(text)), nil
	case "cl100k_base":
		return openai.Cl100kBase.Count(string(text)), nil
	}
	return 0, fmt.Errorf("no tokenizer %q", name)
}

func (s *session) add(typ string, data any, op surface.Op, sources ...int64) surface.Event {
	s.tb.Helper()
	b, err := surface.Data(data)
	require.NoError(s.tb, err)
	p := surface.Proposal{Type: typ, Data: b, Op: op}
	if len(sources) > 0 {
		p.Sources = sources
	}
	e, err := s.log.Append(p)
	require.NoError(s.tb, err)
	if m, ok := s.log.Message(e.Seq); ok {
		s.host.Messages[e.Seq], err = json.Marshal(m)
		require.NoError(s.tb, err)
	}
	return e
}

func (s *session) id() string { s.ids++; return fmt.Sprintf("m%d", s.ids) }

func (s *session) turnStart() {
	s.turn, s.step = s.turn+1, 0
	s.add(surface.TypeTurnStart, map[string]int64{"turn": s.turn}, surface.Op{})
}

func (s *session) turnEnd() {
	s.add(surface.TypeTurnEnd, map[string]any{"turn": s.turn, "reason": map[string]string{"kind": "completed"}}, surface.Op{})
}

func (s *session) stepStart() {
	s.step++
	s.add(surface.TypeStepStart, map[string]int64{"turn": s.turn, "step": s.step}, surface.Op{})
}

func (s *session) stepEnd() {
	s.add(surface.TypeStepEnd, map[string]int64{"turn": s.turn, "step": s.step}, surface.Op{})
}

func (s *session) system(text string, op surface.Op, sources ...int64) int64 {
	m := surface.SystemMessage(s.id(), "system-prompt", text)
	return s.add(surface.TypeSystemMessage, surface.StepMessage{Turn: s.turn, Step: s.step, Message: m}, op, sources...).Seq
}

func (s *session) user(text string) int64 {
	return s.add(surface.TypeUserMessage, surface.Message{ID: s.id(), Role: surface.RoleUser, Source: surface.Source{Kind: "user"},
		Content: []surface.Block{surface.Text(text)}}, surface.Append).Seq
}

func (s *session) header(provider, model string, tools ...string) {
	h := surface.Header{Config: surface.CallConfig{Provider: provider, Model: model}}
	for _, t := range tools {
		h.Tools = append(h.Tools, jsontext.Value(t))
	}
	s.add(surface.TypeRequestHeader, surface.HeaderEvent{Header: h, Reason: surface.ReasonChange}, surface.Op{})
}

// reply appends an assistant/message. A text reply carries the stream
// record it was streamed as (the native meter reassembles it; the plugin
// prices the stored message, which equals it).
func (s *session) reply(content []surface.Block, usage *surface.Usage) int64 {
	d := surface.StepMessage{Turn: s.turn, Step: s.step, Usage: usage,
		Message: surface.Message{ID: s.id(), Role: surface.RoleAssistant, Source: surface.Source{Kind: "model", Provider: "p", Model: "m"}, Content: content}}
	if len(content) == 1 && content[0].Type == surface.BlockText {
		d.Stream = jsontext.Value(`{"v":1,"chunks":[[0,` + llmtest.Text(content[0].Text) + `],[5,` + llmtest.Finish("stop") + `]],"done":9}`)
	}
	return s.add(surface.TypeAssistantMessage, d, surface.Append).Seq
}

func (s *session) toolResult(callID, text string) int64 {
	m := surface.Message{ID: s.id(), Role: surface.RoleUser, Source: surface.Source{Kind: "tool", CallID: callID},
		Content: []surface.Block{surface.ToolResult(callID, false, surface.Text(text))}}
	s.add(surface.TypeToolCall, map[string]any{"turn": s.turn, "step": s.step, "callId": callID, "name": "read", "arguments": "{}"}, surface.Op{})
	return s.add(surface.TypeToolResult, surface.StepMessage{Turn: s.turn, Step: s.step, Message: m}, surface.Append).Seq
}

// text is a message of about 300 characters of mixed English and Chinese.
func text(i int) string {
	return fmt.Sprintf("Message %d: please read internal/session/log.go and explain how the fold handles a replace "+
		"whose range covers the system head; 请说明压缩如何保留最近的对话，并列出相关的测试。 Then run go test ./... and report "+
		"the failures with their file and line. (%d)", i, i*7919)
}

const tools = `{"name":"read","description":"read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}`

// scenario builds a session turn by turn and calls step after every event
// the loop commits: DeepSeek (its tokenizer), OpenAI (o200k_base through
// the host) and an estimator route, usage anchors, tool calls, a prompt
// replaced and a compaction-style replace.
func scenario(s *session, step func(e surface.Event)) {
	seen := 0
	flush := func() {
		evs := s.log.Events()
		for ; seen < len(evs); seen++ {
			step(evs[seen])
		}
	}
	s.turnStart()
	s.stepStart()
	head := s.system("You are terse. 回答要简短。", surface.Append)
	u1 := s.user(text(1))
	s.header("deepseek", "deepseek-chat", tools)
	flush()
	a1 := s.reply([]surface.Block{surface.ToolCall("c1", "read", `{"path":"a.go"}`)}, &surface.Usage{Input: 120, Output: 20})
	r1 := s.toolResult("c1", strings.Repeat("package a\n\nfunc A() int { return 1 }\n", 40))
	s.stepEnd()
	s.stepStart()
	s.reply([]surface.Block{surface.Text("It defines A forty times.")}, &surface.Usage{Input: 700, Output: 9, CacheRead: 100})
	s.stepEnd()
	s.turnEnd()
	flush()
	s.turnStart()
	s.stepStart()
	s.system("You are verbose.", surface.Replace(head, head), head)
	s.user(text(2))
	s.header("openai", "gpt-4o", tools)
	flush()
	s.reply([]surface.Block{surface.Text("Sure, here is a longer answer.")}, &surface.Usage{Input: 800, Output: 12})
	s.stepEnd()
	s.turnEnd()
	s.turnStart()
	sum := s.add(surface.TypeCompactionSummary, map[string]any{"compactionId": "c", "summary": "s",
		"shadowedRange": map[string]int64{"start": u1, "end": r1}, "shadowedSeqs": []int64{u1, a1, r1}, "shadowedTokenCount": 100}, surface.Op{}).Seq
	s.add(surface.TypeUserMessage, surface.Message{ID: s.id(), Role: surface.RoleUser, Source: surface.Source{Kind: "plugin", Plugin: "compact"},
		Content: []surface.Block{surface.Text("checkpoint: read a.go")}}, surface.Replace(u1, r1), sum, u1, a1, r1)
	s.stepStart()
	s.user(text(3))
	s.header("acme", "m1")
	s.reply([]surface.Block{surface.Text("Done.")}, nil)
	s.stepEnd()
	s.stepStart()
	s.header("deepseek", "deepseek-chat", tools)
	s.reply([]surface.Block{surface.Text("Back on DeepSeek.")}, &surface.Usage{Input: 300, Output: 5})
	s.stepEnd()
	s.turnEnd()
	flush()
}

const routesConfig = `{"routes": {"openai": "o200k_base"}}`

func nativeMeter(t testing.TB) *native.Meter {
	m, err := native.New(meter.Config{Routes: map[string]string{"openai": "o200k_base"}})
	require.NoError(t, err)
	return m
}

// wantABI converts the native meter's measurement to the ABI's form.
func wantABI(t testing.TB, m *native.Meter, h *surface.Header) *abi.Measurement {
	got, err := m.Measure(context.Background(), h)
	require.NoError(t, err)
	mm := meter.Measurement{LogRevision: got.LogRevision, Baseline: got.Baseline, BaselineTokens: got.BaselineTokens,
		SurfaceDeltaTokens: got.SurfaceDeltaTokens, TotalTokens: got.TotalTokens, SurfaceTokens: got.SurfaceTokens,
		Breakdown: meter.Breakdown(got.Breakdown), EstimateError: got.EstimateError, Tokenizer: got.Tokenizer}
	for _, n := range got.Nodes {
		mm.Nodes = append(mm.Nodes, meter.Node(n))
	}
	out := toABI(&mm)
	if len(out.Nodes) == 0 {
		out.Nodes = nil // an empty repeated field decodes as nil
	}
	return out
}

func headerJSON(t testing.TB, provider, model string) []byte {
	b, err := json.Marshal(surface.Header{Config: surface.CallConfig{Provider: provider, Model: model}, Tools: []jsontext.Value{jsontext.Value(tools)}})
	require.NoError(t, err)
	return b
}

// The plugin, fed each committed event as the host's observer hands them
// over, measures exactly what the native meter measures after every event,
// under the logged header and under overrides; with DeepSeek counted by the
// host or in the guest, and with a fresh instance for every call.
func TestMatchesNative(t *testing.T) {
	wasm := plugintest.Build(t, standalone)
	cases := []struct {
		name   string
		config string
		opts   []plugin.Option
	}{
		{"host counting", routesConfig, nil},
		{"host counting, new instance every call", routesConfig, []plugin.Option{plugin.WithMaxCalls(1)}},
		{"guest counting", `{"routes": {"openai": "o200k_base"}, "counting": "guest"}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := plugintest.LoadBytes(t, Name, wasm, append(append(unhurried(), tc.opts...), plugin.WithConfig([]byte(tc.config)))...)
			ctx := context.Background()
			s := newSession(t, true)
			nat := nativeMeter(t)
			var state []byte
			overrides := [][]byte{headerJSON(t, "deepseek", "deepseek-chat"), headerJSON(t, "acme", "m1")}
			scenario(s, func(e surface.Event) {
				require.NoError(t, nat.Observe([]surface.Event{e}))
				var err error
				state, err = p.Observe(ctx, s.host, &abi.ObserveRequest{State: state, Events: []abi.Event{event(t, e)}})
				require.NoError(t, err, "seq %d", e.Seq)
				got, err := p.Measure(ctx, s.host, &abi.MeasureRequest{State: state})
				require.NoError(t, err, "seq %d", e.Seq)
				require.Equal(t, wantABI(t, nat, nil), got, "seq %d", e.Seq)
				if e.Type == surface.TypeAssistantMessage {
					for _, o := range overrides {
						var h surface.Header
						require.NoError(t, json.Unmarshal(o, &h))
						got, err := p.Measure(ctx, s.host, &abi.MeasureRequest{State: state, HeaderOverride: o, HasHeaderOverride: true})
						require.NoError(t, err, "seq %d", e.Seq)
						require.Equal(t, wantABI(t, nat, &h), got, "seq %d override %s", e.Seq, o)
					}
				}
			})
			final := wantABI(t, nat, nil)
			require.Equal(t, abi.BaselineUsage, final.Baseline.Kind, "the scenario ends on a usage anchor")
			require.True(t, final.HasEstimateError, "calls reported usage: the estimate error travels")
			require.Equal(t, "deepseek-v3", final.Tokenizer)
			require.True(t, final.Breakdown.HasSplit())
			require.NotZero(t, final.Breakdown.AssistantTokens)

			// The whole log in one call (a resumed session) measures the same.
			all := make([]abi.Event, 0, s.log.Len())
			for _, e := range s.log.Events() {
				all = append(all, event(t, e))
			}
			blob, err := p.Observe(ctx, s.host, &abi.ObserveRequest{Events: all})
			require.NoError(t, err)
			require.Equal(t, state, blob)
			again, err := p.Observe(ctx, s.host, &abi.ObserveRequest{State: blob, Events: all})
			require.NoError(t, err)
			require.Equal(t, blob, again, "folded events are skipped")
		})
	}
}

// The host answers message queries from its current surface, which may be
// ahead of the events a meter has folded (the host batches observe calls).
// Fed the whole session in batches while the host is at its end, the
// plugin measures at the end exactly what the native meter measures: nodes
// the host no longer has keep their price until the event that shadowed
// them is folded.
func TestObserveWithTheHostAhead(t *testing.T) {
	p := loadStandalone(t, append(unhurried(), plugin.WithConfig([]byte(routesConfig)), plugin.WithMaxCalls(1))...)
	ctx := context.Background()
	s := newSession(t, true)
	scenario(s, func(surface.Event) {})
	ahead := surfaceHost{s}
	nat := nativeMeter(t)
	require.NoError(t, nat.Observe(s.log.Events()))
	var state []byte
	evs := s.log.Events()
	for i := 0; i < len(evs); i += 5 {
		batch := make([]abi.Event, 0, 5)
		for _, e := range evs[i:min(i+5, len(evs))] {
			batch = append(batch, event(t, e))
		}
		var err error
		state, err = p.Observe(ctx, ahead, &abi.ObserveRequest{State: state, Events: batch})
		require.NoError(t, err, "batch at seq %d", i)
	}
	got, err := p.Measure(ctx, ahead, &abi.MeasureRequest{State: state})
	require.NoError(t, err)
	require.Equal(t, wantABI(t, nat, nil), got)
	require.Contains(t, s.host.Calls(), "Message", "route changes repriced restored nodes")
}

// surfaceHost answers message queries for the nodes on the session's
// current surface only, as the host does.
type surfaceHost struct{ s *session }

func (h surfaceHost) SurfaceNodes(ctx context.Context) ([]abi.Node, error) {
	return h.s.host.SurfaceNodes(ctx)
}

func (h surfaceHost) Message(ctx context.Context, seq int64) ([]byte, error) {
	for _, n := range h.s.log.Nodes() {
		if n == seq {
			return h.s.host.Message(ctx, seq)
		}
	}
	return nil, fmt.Errorf("no surface node holds seq %d: %w", seq, plugin.ErrNotFound)
}

func (h surfaceHost) Generations(ctx context.Context) (abi.Generations, error) {
	return h.s.host.Generations(ctx)
}
func (h surfaceHost) Header(ctx context.Context) ([]byte, error) { return h.s.host.Header(ctx) }
func (h surfaceHost) Measure(ctx context.Context) (*abi.Measurement, error) {
	return h.s.host.Measure(ctx)
}
func (h surfaceHost) Summarize(ctx context.Context, r *abi.SummarizeRequest) (*abi.SummarizeResult, error) {
	return h.s.host.Summarize(ctx, r)
}
func (h surfaceHost) CountTokens(ctx context.Context, name string, text []byte) (int, error) {
	return h.s.host.CountTokens(ctx, name, text)
}

func event(t testing.TB, e surface.Event) abi.Event {
	b, err := e.MarshalJSON()
	require.NoError(t, err)
	return abi.Event{Seq: e.Seq, Type: e.Type, JSON: b}
}

// Without count_tokens the plugin counts DeepSeek V3 itself; routes the host
// alone can count fail the call, and the state is left as it was.
func TestCountTokensNotGranted(t *testing.T) {
	p := loadStandalone(t, append(unhurried(), plugin.WithConfig([]byte(routesConfig)))...)
	ctx := context.Background()
	s := newSession(t, false)
	nat := nativeMeter(t)
	var state []byte
	var openaiErr error
	scenario(s, func(e surface.Event) {
		if openaiErr != nil {
			return
		}
		blob, err := p.Observe(ctx, s.host, &abi.ObserveRequest{State: state, Events: []abi.Event{event(t, e)}})
		if err != nil {
			openaiErr = err
			require.Contains(t, err.Error(), "count tokens with o200k_base: host count_tokens: not granted", "seq %d", e.Seq)
			return
		}
		state = blob
		require.NoError(t, nat.Observe([]surface.Event{e}))
		got, err := p.Measure(ctx, s.host, &abi.MeasureRequest{State: state})
		require.NoError(t, err)
		require.Equal(t, wantABI(t, nat, nil), got, "seq %d", e.Seq)
	})
	require.Error(t, openaiErr, "the OpenAI route needs the host")
	require.Contains(t, s.host.Calls(), "CountTokens")
}

// An event the meter cannot fold stops it, as natively: the blob keeps the
// stop and Measure reports the same error.
func TestStopsAtABadEvent(t *testing.T) {
	p := loadStandalone(t, unhurried()...)
	ctx := context.Background()
	bad := []abi.Event{
		{Seq: 0, JSON: []byte(`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}`)},
		{Seq: 1, JSON: []byte(`{"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}}`)},
		{Seq: 2, JSON: []byte(`{"type":"step/start","seq":2,"time":1,"data":{"turn":1,"step":2}}`)},
		{Seq: 3, JSON: []byte(`{"type":"step/end","seq":3,"time":1,"data":{"turn":1,"step":1}}`)},
	}
	state, err := p.Observe(ctx, nil, &abi.ObserveRequest{Events: bad})
	require.NoError(t, err)
	_, err = p.Measure(ctx, nil, &abi.MeasureRequest{State: state})
	require.ErrorContains(t, err, "plugin error: token meter: seq 2 (step/start): step/start turn 1 step 2 while turn 1 step 1 is open")

	_, err = p.Observe(ctx, nil, &abi.ObserveRequest{Events: []abi.Event{{Seq: 0, JSON: []byte(`{"type":"turn/start"}`)}}})
	require.ErrorContains(t, err, "plugin error: event seq 0: ")
}

func TestConfig(t *testing.T) {
	p := loadStandalone(t, unhurried()...)
	require.Equal(t, []abi.Kind{abi.KindTokenMeter}, p.Description().Kinds)
	wasm := plugintest.Build(t, standalone)
	for cfg, want := range map[string]string{
		`{"route": {}}`:                                `unknown object member name "route"`,
		`{"routes": {"openai": "gpt2"}}`:               `route "openai" names unknown tokenizer "gpt2"`,
		`{"fallback": "words"}`:                        `fallback tokenizer "words" is unknown`,
		`{"counting": "remote"}`:                       `counting is "remote", want "host" or "guest"`,
		`{"routes": {"": "heuristic"}}`:                `a route key is empty`,
		`{"routes": {"acme": "o200k", "x": "cl100k"}}`: ``,
	} {
		_, err := plugintest.Runtime(t).Load(context.Background(), Name, wasm, plugin.WithConfig([]byte(cfg)))
		if want == "" {
			require.NoError(t, err, cfg)
			continue
		}
		require.ErrorContains(t, err, want, cfg)
	}
}

var _ host.Meter = (*native.Meter)(nil)

// unhurried gives the plugin deadlines far above its real cost, so that
// these tests, which check results and not speed, pass on a loaded machine
// (a fresh instance counting in the guest first loads the tokenizer).
func unhurried() []plugin.Option {
	return []plugin.Option{
		plugin.WithDeadline(abi.KindUnspecified, 30*time.Second),
		plugin.WithDeadline(abi.KindTokenMeter, 30*time.Second),
	}
}
