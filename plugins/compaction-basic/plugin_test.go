package compactionbasic

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/plugins/compaction-basic/compact"
	"github.com/weirhost/weir/plugins/compaction-basic/native"
	"github.com/weirhost/weir/plugins/token-meter/meter"
	tmnative "github.com/weirhost/weir/plugins/token-meter/native"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
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

func TestDescribeAndConfig(t *testing.T) {
	p := loadStandalone(t)
	require.Equal(t, abi.Description{Name: Name, Version: "1.0.0", Kinds: []abi.Kind{abi.KindCompaction}, AbiMinor: abi.Minor,
		Sdk: "weir-go-sdk/1.0", Methods: []abi.Method{abi.MethodCompactionRegion}}, p.Description())
	wasm := plugintest.Build(t, standalone)
	for cfg, want := range map[string]string{
		`{"thresholdRatio": 0.5, "retainRatoi": 0.1}`:                         `retainRatoi`,
		`{"modelPolicies": [{"provider": "a", "model": "b", "headroom": 1}]}`: `headroom`,
		`{"thresholdRatio": 2}`:                                               `thresholdRatio`,
		`{"summarizationProvider": "deepseek"}`:                               `summarization`,
		`[1]`:                                                                 `object`,
		`{"modelPolicies": [{"provider": "a", "model": "b"}, {"provider": "a", "model": "b"}]}`: `modelPolicies[1]`,
	} {
		_, err := plugintest.Runtime(t).Load(context.Background(), Name, wasm, plugin.WithConfig([]byte(cfg)))
		require.ErrorContains(t, err, want, cfg)
		require.ErrorContains(t, err, "configure: compaction config", cfg)
	}
}

// Below the threshold a pre-step reads only the header and the measurement,
// proposes nothing and keeps the state.
func TestBelowThresholdProposesNothing(t *testing.T) {
	p := loadStandalone(t, plugin.WithConfig([]byte(`{"headroomTokens": 0}`)))
	s := &plugintest.Session{
		HeaderJSON:  []byte(`{"config":{"provider":"test","model":"m1"}}`),
		Measurement: &abi.Measurement{TotalTokens: 799, Nodes: []abi.NodeTokens{{Seq: 2, Tokens: 799, HeuristicTokens: 799}}},
	}
	res, err := p.PreStep(context.Background(), s, &abi.CompactionRequest{Turn: 3, Route: abi.Route{Provider: "test", Model: "m1"},
		Limits: abi.Limits{ContextWindow: 1000}})
	require.NoError(t, err)
	require.Empty(t, res.Proposals)
	require.False(t, res.HasState)
	require.Equal(t, []string{"Header", "Measure"}, s.Calls())

	// No header yet: nothing to measure against.
	s = &plugintest.Session{}
	res, err = p.PreStep(context.Background(), s, &abi.CompactionRequest{Turn: 1, Limits: abi.Limits{ContextWindow: 1000}})
	require.NoError(t, err)
	require.Empty(t, res.Proposals)
	require.Equal(t, []string{"Header"}, s.Calls())

	// Manual compaction inside a turn is refused.
	_, err = p.Manual(context.Background(), s, &abi.CompactionRequest{Turn: 2})
	require.ErrorContains(t, err, "plugin error: compaction is busy: turn 2 is open")
}

// A target without a usable budget is reported once (on stderr) and the
// state that remembers it is returned.
func TestConfigWarningKeepsState(t *testing.T) {
	p := loadStandalone(t)
	s := &plugintest.Session{HeaderJSON: []byte(`{"config":{"provider":"test","model":"m1"}}`)}
	req := &abi.CompactionRequest{Turn: 1, Limits: abi.Limits{ContextWindow: 1000}} // default headroom 65536 > window
	res, err := p.PreStep(context.Background(), s, req)
	require.NoError(t, err)
	require.Empty(t, res.Proposals)
	require.True(t, res.HasState)
	st, err := compact.DecodeState(res.State)
	require.NoError(t, err)
	require.Equal(t, []string{"test/m1"}, st.Warned)
	req.State = res.State
	res, err = p.PreStep(context.Background(), s, req)
	require.NoError(t, err)
	require.False(t, res.HasState, "warned once: the state is unchanged")
}

// The plugin, driven by the real agent loop through a host adapter, writes
// exactly the log the native provider writes: the same brackets, ranges,
// checkpoints, summaries and citations, byte for byte. The scenario covers
// pressure with tool calls on the surface, manual compaction between turns
// and a context-overflow recovery, with and without a token meter.
func TestSameLogAsNative(t *testing.T) {
	wasm := plugintest.Build(t, standalone)
	for _, withMeter := range []bool{false, true} {
		t.Run(fmt.Sprintf("meter=%v", withMeter), func(t *testing.T) {
			nat, err := native.New([]byte(scenarioConfig))
			require.NoError(t, err)
			want := runScenario(t, nat, withMeter)

			g := &guest{p: plugintest.LoadBytes(t, Name, wasm, plugin.WithConfig([]byte(scenarioConfig)))}
			got := runScenario(t, g, withMeter)

			require.Equal(t, eventLines(t, want), eventLines(t, got))
			counts := map[string]int{}
			for _, e := range got {
				counts[e.Type]++
			}
			require.GreaterOrEqual(t, counts[surface.TypeCompactionSummary], 3, "pressure, manual and overflow compactions ran")
			require.Equal(t, counts[surface.TypeCompactionStart], counts[surface.TypeCompactionEnd])
			require.Positive(t, g.calls)
		})
	}
}

// scenarioConfig: window 1000, no headroom, threshold 500, tail 50.
const scenarioConfig = `{"headroomTokens": 0, "thresholdRatio": 0.5, "retainTokens": 50, "maxTokens": 200}`

func runScenario(t *testing.T, c host.CompactionProvider, withMeter bool) []surface.Event {
	ctx := context.Background()
	m := &model{}
	s := host.NewSession("", surface.New(surface.WithClock(func() int64 { return 1000 })), nil, host.WithIDs(host.CounterIDs("m")))
	cfg := host.Config{Route: host.Route{Provider: "test", Model: "m1", ContextWindow: 1000}, Model: m,
		Prompt: prompt("You are helpful."), Compactors: []host.CompactionProvider{c}, Summarizer: summarizer{},
		Tools: []host.Tool{echo}}
	if withMeter {
		mt, err := tmnative.New(meter.Config{})
		require.NoError(t, err)
		cfg.Meter = mt
	}
	a, err := host.NewAgent(s, cfg)
	require.NoError(t, err)
	turn := func(text string) {
		_, err := a.Run(ctx, a.UserMessage(text))
		require.NoError(t, err)
	}
	turn("hi")
	turn("hello")
	m.then(say(words(100)))
	turn(words(300))
	m.then(callTool("c1"), callTool("c2"), say("done"))
	turn("use the tool twice")
	turn(words(200))
	changed, err := a.CompactNow(ctx)
	require.NoError(t, err)
	require.True(t, changed)
	turn(words(100))
	m.then(func(context.Context, *llm.Request) (*llm.Result, error) {
		return &llm.Result{}, &llm.Error{Code: llm.CodeContextOverflow, What: "scripted overflow"}
	}, say("recovered"))
	turn("three")
	turn(words(250))
	return s.Log().Events()
}

func eventLines(t *testing.T, evs []surface.Event) []string {
	out := make([]string, len(evs))
	for i := range evs {
		b, err := evs[i].MarshalJSON()
		require.NoError(t, err)
		out[i] = string(b)
	}
	return out
}

// guest is a host.CompactionProvider backed by the plugin: what the host
// will do for a WebAssembly compaction provider, in a few lines.
type guest struct {
	p     *plugin.Plugin
	state []byte
	calls int
}

func (g *guest) ID() string { return native.ID }

func (g *guest) Compact(ctx context.Context, v *host.View, req host.CompactionRequest) ([]surface.Proposal, error) {
	g.calls++
	in := &abi.CompactionRequest{Turn: req.Turn, Route: abi.Route{Provider: req.Route.Provider, Model: req.Route.Model},
		Limits: abi.Limits{ContextWindow: req.Route.ContextWindow, DefaultMaxTokens: req.Route.MaxTokens}, State: g.state}
	var res *abi.CompactionResult
	var err error
	h := viewHost{v: v}
	switch req.Reason {
	case host.CompactPressure:
		res, err = g.p.PreStep(ctx, h, in)
	case host.CompactOverflow:
		res, err = g.p.Overflow(ctx, h, in)
	default:
		res, err = g.p.Manual(ctx, h, in)
	}
	if err != nil {
		return nil, err
	}
	if res.HasState {
		g.state = res.State
	}
	out := make([]surface.Proposal, len(res.Proposals))
	for i, p := range res.Proposals {
		out[i] = surface.Proposal{Type: p.Type, Data: p.Data, Ignorable: p.Ignorable}
		switch p.Intent.Kind {
		case abi.IntentAppend:
			out[i].Op = surface.Append
		case abi.IntentReplace:
			out[i].Op = surface.Replace(p.Intent.StartSeq, p.Intent.EndSeq)
		}
		if p.HasSourceEventSeqs {
			out[i].Sources = p.SourceEventSeqs
		}
	}
	return out, nil
}

// viewHost answers the plugin's host imports from a provider view.
type viewHost struct{ v *host.View }

func (h viewHost) SurfaceNodes(context.Context) ([]abi.Node, error) {
	var out []abi.Node
	for _, n := range h.v.Nodes() {
		m, _ := h.v.Message(n.Seq)
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		out = append(out, abi.Node{Seq: n.Seq, Type: n.Type, Role: n.Role, Size: int64(len(b)), ContentHash: sum[:]})
	}
	return out, nil
}

func (h viewHost) Message(_ context.Context, seq int64) ([]byte, error) {
	m, ok := h.v.Message(seq)
	if !ok {
		return nil, plugin.ErrNotFound
	}
	return json.Marshal(m)
}

func (h viewHost) Generations(context.Context) (abi.Generations, error) {
	r, c := h.v.Generations()
	return abi.Generations{Replace: int64(r), Content: int64(c), LogLength: h.v.NextSeq()}, nil
}

func (h viewHost) Header(context.Context) ([]byte, error) {
	hd := h.v.Header()
	if hd == nil {
		return nil, plugin.ErrNotFound
	}
	return json.Marshal(hd)
}

func (h viewHost) Measure(ctx context.Context) (*abi.Measurement, error) {
	m, err := h.v.Measure(ctx, nil)
	if errors.Is(err, host.ErrNotGranted) {
		return nil, plugin.ErrNotGranted
	}
	if err != nil {
		return nil, err
	}
	out := &abi.Measurement{LogRevision: m.LogRevision, TotalTokens: m.TotalTokens, SurfaceTokens: m.SurfaceTokens,
		SurfaceDeltaTokens: m.SurfaceDeltaTokens}
	for _, n := range m.Nodes {
		out.Nodes = append(out.Nodes, abi.NodeTokens{Seq: n.Seq, Tokens: n.Tokens, HeuristicTokens: n.HeuristicTokens})
	}
	return out, nil
}

// Summarize sends the input messages followed by the instruction as a final
// user message, as the native provider's request does.
func (h viewHost) Summarize(ctx context.Context, req *abi.SummarizeRequest) (*abi.SummarizeResult, error) {
	sr := host.SummaryRequest{Provider: req.Route.Provider, Model: req.Route.Model, MaxTokens: req.MaxTokens}
	for _, b := range req.Messages {
		m := new(surface.Message)
		if err := json.Unmarshal(b, m); err != nil {
			return nil, err
		}
		sr.Messages = append(sr.Messages, m)
	}
	sr.Messages = append(sr.Messages, &surface.Message{ID: "compact-instruction", Role: surface.RoleUser,
		Source: surface.Source{Kind: "plugin", Plugin: compact.PluginID}, Content: []surface.Block{surface.Text(req.Instruction)}})
	if len(req.Tools) > 0 {
		if err := json.Unmarshal(req.Tools, &sr.Tools); err != nil {
			return nil, err
		}
	}
	r, err := h.v.Summarize(ctx, sr)
	if err != nil {
		return nil, err
	}
	out := &abi.SummarizeResult{FinishReason: r.FinishReason, Route: abi.Route{Provider: r.Provider, Model: r.Model}}
	for _, b := range r.Content {
		if b.Type == surface.BlockText {
			out.Text = append(out.Text, b.Text)
		}
	}
	if out.RawOutput, err = json.Marshal(r.Content); err != nil {
		return nil, err
	}
	if r.Usage != nil {
		if out.Usage, err = json.Marshal(r.Usage); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (viewHost) CountTokens(context.Context, string, []byte) (int, error) {
	return 0, plugin.ErrNotGranted
}

// model plays scripted replies (default "ok").
type model struct {
	replies []func(context.Context, *llm.Request) (*llm.Result, error)
}

func (m *model) Stream(ctx context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Result, error) {
	if len(m.replies) == 0 {
		return say("ok")(ctx, req)
	}
	next := m.replies[0]
	m.replies = m.replies[1:]
	return next(ctx, req)
}

func (m *model) then(fns ...func(context.Context, *llm.Request) (*llm.Result, error)) {
	m.replies = append(m.replies, fns...)
}

func say(text string) func(context.Context, *llm.Request) (*llm.Result, error) {
	return func(context.Context, *llm.Request) (*llm.Result, error) {
		return &llm.Result{Content: []surface.Block{surface.Text(text)}, FinishReason: llm.FinishStop}, nil
	}
}

func callTool(id string) func(context.Context, *llm.Request) (*llm.Result, error) {
	return func(context.Context, *llm.Request) (*llm.Result, error) {
		return &llm.Result{Content: []surface.Block{surface.ToolCall(id, "echo", `{"say":"`+strings.Repeat("x", 400)+`"}`)},
			FinishReason: llm.FinishToolCalls}, nil
	}
}

// summarizer answers every summarization with a short checkpoint that
// echoes how many messages it read.
type summarizer struct{}

func (summarizer) Summarize(_ context.Context, req host.SummaryRequest) (*host.SummaryResult, error) {
	return &host.SummaryResult{Content: []surface.Block{surface.Text(fmt.Sprintf("## Primary Request and Intent\n- %d messages read", len(req.Messages)))},
		FinishReason: "stop", Usage: &surface.Usage{Input: 100, Output: 10}}, nil
}

type prompt string

func (p prompt) ID() string                                             { return "system-prompt" }
func (p prompt) Render(context.Context, *host.Assembly) (string, error) { return string(p), nil }

var echo = &host.FuncTool{ToolName: "echo", Description: "echo the arguments", Parameters: jsontext.Value(`{"type":"object"}`),
	Fn: func(_ context.Context, args string) (string, error) { return "echo " + args, nil }}

func words(n int) string { return strings.Repeat("word ", n) }
