package plugin_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
)

func loadBenign(t *testing.T, opts ...plugin.Option) *plugin.Plugin {
	t.Helper()
	return plugintest.LoadBytes(t, "benign", module(t, "benign"), opts...)
}

func TestDescribe(t *testing.T) {
	p := loadBenign(t)
	d := p.Description()
	require.Equal(t, "benign", d.Name)
	require.Equal(t, "1.0.0", d.Version)
	require.Equal(t, []abi.Kind{abi.KindSystemPrompt, abi.KindCompaction, abi.KindTokenMeter}, d.Kinds)
	require.Equal(t, abi.Minor, d.AbiMinor)
	require.Equal(t, "weir-go-sdk/1.0", d.Sdk)
	require.True(t, p.Provides(abi.KindTokenMeter))
}

func TestRenderPromptRoundTrip(t *testing.T) {
	p := loadBenign(t)
	got, err := p.RenderPrompt(context.Background(), nil, &abi.RenderRequest{
		Sections: []abi.Section{{Key: "identity", Text: "You are Weir."}, {Key: "rules", Text: "Be brief. → ünïcode"}},
		Route:    abi.Route{Provider: "deepseek", Model: "chat"},
		HostData: []abi.KeyValue{{Key: "date", Value: "2025-01-02"}, {Key: "tools", Value: "read,write"}},
	})
	require.NoError(t, err)
	require.Equal(t, "identity: You are Weir.\nrules: Be brief. → ünïcode\ndate=2025-01-02\ntools=read,write\nroute=deepseek/chat", got)
}

func TestConfigReachesEveryInstance(t *testing.T) {
	p := loadBenign(t, plugin.WithConfig([]byte(`{"style":"terse"}`)), plugin.WithMaxCalls(1))
	for range 3 { // WithMaxCalls(1): each call runs on a fresh instance
		got, err := p.RenderPrompt(context.Background(), nil, &abi.RenderRequest{Route: abi.Route{Model: "config"}})
		require.NoError(t, err)
		require.Equal(t, `config={"style":"terse"}`, got)
	}
	s := p.Stats()
	require.EqualValues(t, 3, s.Started, "the load's instance serves the first call, then one per call")
	require.EqualValues(t, 3, s.Replaced)
}

// Every instance sees the same fake clock and the same random numbers.
func TestSandboxIsDeterministic(t *testing.T) {
	p := loadBenign(t, plugin.WithMaxCalls(1))
	var seen []string
	for range 3 {
		got, err := p.RenderPrompt(context.Background(), nil, &abi.RenderRequest{Route: abi.Route{Model: "entropy"}})
		require.NoError(t, err)
		seen = append(seen, got)
	}
	require.Regexp(t, `^2000-01-01T00:00:00Z [0-9a-f]+$`, seen[0])
	require.Equal(t, seen[0], seen[1], "fresh instances see the same time and randomness")
	require.Equal(t, seen[0], seen[2])
}

// The wall clock stands still: one instance reads the same time on every
// call, so a prompt that prints it does not change from call to call.
func TestWallClockIsStable(t *testing.T) {
	p := loadBenign(t)
	var times []string
	for range 3 {
		got, err := p.RenderPrompt(context.Background(), nil, &abi.RenderRequest{Route: abi.Route{Model: "entropy"}})
		require.NoError(t, err)
		times = append(times, strings.Fields(got)[0])
	}
	require.Equal(t, []string{"2000-01-01T00:00:00Z", "2000-01-01T00:00:00Z", "2000-01-01T00:00:00Z"}, times)
	require.EqualValues(t, 1, p.Stats().Started, "one instance served the calls")
}

func TestInitFailureFailsLoad(t *testing.T) {
	_, err := plugintest.Runtime(t).Load(context.Background(), "benign-bad-config", module(t, "benign"),
		plugin.WithConfig([]byte(`{"fail":true}`)))
	require.ErrorIs(t, err, plugin.ErrPluginFailed)
	require.EqualError(t, err, `plugin "benign-bad-config": load: call init: plugin error: configure: config asks to fail`)
}

func TestPluginErrorKeepsInstance(t *testing.T) {
	p := loadBenign(t)
	_, err := p.RenderPrompt(context.Background(), nil, &abi.RenderRequest{Route: abi.Route{Model: "fail"}})
	require.ErrorIs(t, err, plugin.ErrPluginFailed)
	require.EqualError(t, err, `plugin "benign": call prompt.render: plugin error: cannot render for model fail`)
	require.Zero(t, p.Stats().Replaced)
	require.EqualValues(t, 1, p.Stats().Started)
}

func TestCompactionRoundTrip(t *testing.T) {
	p := loadBenign(t)
	var summarized *abi.SummarizeRequest
	sess := &plugintest.Session{
		Nodes: []abi.Node{
			{Seq: 0, Type: "system/message", Role: "system", Size: 40, ContentHash: []byte{1, 2}, Tokens: 12, HasTokens: true},
			{Seq: 3, Type: "user/message", Role: "user", Size: 80},
			{Seq: 4, Type: "assistant/message", Role: "assistant", Size: 90},
		},
		Messages:    map[int64][]byte{0: []byte(`{"id":"s","role":"system"}`), 3: []byte(`{"id":"u","role":"user"}`)},
		Gens:        abi.Generations{Replace: 1, Content: 2, LogLength: 9},
		HeaderJSON:  []byte(`{"config":{"provider":"p","model":"m"}}`),
		Measurement: &abi.Measurement{TotalTokens: 4321},
		Summarizer: func(_ context.Context, req *abi.SummarizeRequest) (*abi.SummarizeResult, error) {
			summarized = req
			return &abi.SummarizeResult{Text: []string{"it was ", "long"}, FinishReason: "stop"}, nil
		},
	}
	res, err := p.PreStep(context.Background(), sess, &abi.CompactionRequest{Turn: 7, Step: 2, State: []byte("ab")})
	require.NoError(t, err)
	require.Equal(t, []string{"SurfaceNodes", "Generations", "Header", "Measure", "Message", "Message", "Summarize"}, sess.Calls())
	require.NotNil(t, summarized)
	require.Equal(t, [][]byte{[]byte(`{"id":"s","role":"system"}`), []byte(`{"id":"u","role":"user"}`)}, summarized.Messages)
	require.Equal(t, "summarize", summarized.Instruction)
	require.EqualValues(t, 100, summarized.MaxTokens)

	require.True(t, res.HasState)
	require.Equal(t, "abx", string(res.State))
	require.Len(t, res.Proposals, 4)
	start, summary, checkpoint, end := res.Proposals[0], res.Proposals[1], res.Proposals[2], res.Proposals[3]
	require.Equal(t, "compaction/start", start.Type)
	require.Equal(t, `{"turn":7}`, string(start.Data))
	require.Equal(t, abi.IntentNone, start.Intent.Kind)
	require.False(t, start.HasSourceEventSeqs)
	require.Equal(t, "compaction/summary", summary.Type)
	require.JSONEq(t, `{"summary":"it was long","header":39,"total":4321,"turn":7}`, string(summary.Data))
	require.Equal(t, "user/message", checkpoint.Type)
	require.Equal(t, abi.Intent{Kind: abi.IntentReplace, StartSeq: 0, EndSeq: 3}, checkpoint.Intent)
	require.True(t, checkpoint.HasSourceEventSeqs)
	require.Equal(t, []int64{9, 10, 0, 3}, checkpoint.SourceEventSeqs)
	require.Equal(t, "compaction/end", end.Type)

	// Manual proposes nothing and keeps the state; Overflow reports an error.
	res, err = p.Manual(context.Background(), sess, &abi.CompactionRequest{CommandID: "c1"})
	require.NoError(t, err)
	require.Empty(t, res.Proposals)
	require.False(t, res.HasState)
	_, err = p.Overflow(context.Background(), sess, &abi.CompactionRequest{Failure: abi.Failure{Code: "CONTEXT_WINDOW_EXCEEDED"}})
	require.EqualError(t, err, `plugin "benign": call compaction.overflow: plugin error: overflow CONTEXT_WINDOW_EXCEEDED: nothing to compact`)
}

func TestMeterRoundTrip(t *testing.T) {
	p := loadBenign(t)
	sess := &plugintest.Session{Tokenizer: plugintest.RuneCounter}
	state, err := p.Observe(context.Background(), sess, &abi.ObserveRequest{Events: []abi.Event{
		{Seq: 0, Type: "turn/start", JSON: []byte(`{"turn":1}`)},
		{Seq: 1, Type: "user/message", JSON: []byte(`{"id":"ü"}`)},
	}})
	require.NoError(t, err)
	state, err = p.Observe(context.Background(), sess, &abi.ObserveRequest{State: state, Events: []abi.Event{
		{Seq: 2, Type: "step/start", JSON: []byte(`{}`)},
	}})
	require.NoError(t, err)
	m, err := p.Measure(context.Background(), sess, &abi.MeasureRequest{State: state, HeaderOverride: []byte(`{"a":1}`), HasHeaderOverride: true})
	require.NoError(t, err)
	require.EqualValues(t, 3, m.LogRevision)
	require.EqualValues(t, 10+10+2, m.SurfaceTokens, "runes counted by the host tokenizer")
	require.EqualValues(t, 7, m.Breakdown.ToolsTokens, "the override's size")
	require.EqualValues(t, 22+7, m.TotalTokens, "the surface and the tools")
	require.Equal(t, abi.Baseline{Kind: abi.BaselineEstimated, Tokens: 29}, m.Baseline)
}

func TestGrantsPerKind(t *testing.T) {
	p := loadBenign(t)
	sess := &plugintest.Session{
		Tokenizer: plugintest.RuneCounter,
		Summarizer: func(context.Context, *abi.SummarizeRequest) (*abi.SummarizeResult, error) {
			return &abi.SummarizeResult{}, nil
		},
	}
	// count_tokens is granted to prompt providers.
	got, err := p.RenderPrompt(context.Background(), sess, &abi.RenderRequest{
		Sections: []abi.Section{{Text: "héllo"}}, Route: abi.Route{Model: "count"}})
	require.NoError(t, err)
	require.Equal(t, "tokens=5", got)
	// summarize and surface_nodes are not, even when the Host offers them.
	_, err = p.RenderPrompt(context.Background(), sess, &abi.RenderRequest{Route: abi.Route{Model: "summarize"}})
	require.EqualError(t, err, `plugin "benign": call prompt.render: plugin error: host summarize: not granted: summarize is not granted to system-prompt calls`)
	_, err = p.RenderPrompt(context.Background(), sess, &abi.RenderRequest{Route: abi.Route{Model: "nodes"}})
	require.EqualError(t, err, `plugin "benign": call prompt.render: plugin error: host surface_nodes: not granted: surface_nodes is not granted to system-prompt calls`)
	require.Equal(t, []string{"CountTokens"}, sess.Calls(), "ungranted imports never reach the Host")
	// A nil Host grants nothing.
	_, err = p.RenderPrompt(context.Background(), nil, &abi.RenderRequest{Sections: []abi.Section{{Text: "x"}}, Route: abi.Route{Model: "count"}})
	require.ErrorContains(t, err, "host count_tokens: not granted")
	// A Host without the capability answers not granted too.
	_, err = p.RenderPrompt(context.Background(), &plugintest.Session{}, &abi.RenderRequest{Sections: []abi.Section{{Text: "x"}}, Route: abi.Route{Model: "count"}})
	require.ErrorContains(t, err, "host count_tokens: not granted: count_tokens: not granted")
}

func TestHostErrorsReachTheGuest(t *testing.T) {
	p := loadBenign(t)
	sess := &plugintest.Session{
		Nodes:       []abi.Node{{Seq: 1}, {Seq: 2}},
		Messages:    map[int64][]byte{1: []byte(`{}`), 2: []byte(`{}`)},
		Measurement: &abi.Measurement{},
		Summarizer: func(context.Context, *abi.SummarizeRequest) (*abi.SummarizeResult, error) {
			return nil, errors.New("model is overloaded")
		},
	}
	_, err := p.PreStep(context.Background(), sess, &abi.CompactionRequest{})
	require.ErrorIs(t, err, plugin.ErrPluginFailed)
	require.EqualError(t, err, `plugin "benign": call compaction.prestep: plugin error: host summarize: host failed: summarize: model is overloaded`)
	sess.Messages = nil
	_, err = p.PreStep(context.Background(), sess, &abi.CompactionRequest{})
	require.EqualError(t, err, `plugin "benign": call compaction.prestep: plugin error: host message: not found: message: not found`)
}

// Summarize time does not count against the guest's own call deadline (the
// host's per-compaction wall clock, host.CompactionBudget, does count it).
func TestSummarizeTimeIsNotBilled(t *testing.T) {
	p := loadBenign(t, plugin.WithDeadline(abi.KindCompaction, time.Second))
	sess := &plugintest.Session{
		Nodes:       []abi.Node{{Seq: 1}, {Seq: 2}},
		Messages:    map[int64][]byte{1: []byte(`{}`), 2: []byte(`{}`)},
		Measurement: &abi.Measurement{},
		Summarizer: func(ctx context.Context, req *abi.SummarizeRequest) (*abi.SummarizeResult, error) {
			select {
			case <-time.After(2 * time.Second):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &abi.SummarizeResult{Text: []string{strings.Repeat("s", 100)}}, nil
		},
	}
	res, err := p.PreStep(context.Background(), sess, &abi.CompactionRequest{})
	require.NoError(t, err)
	require.Len(t, res.Proposals, 4)
}

func TestUnsupportedKind(t *testing.T) {
	p := plugintest.LoadBytes(t, "loop", module(t, "hostile/loop"))
	_, err := p.Measure(context.Background(), nil, &abi.MeasureRequest{})
	require.ErrorIs(t, err, plugin.ErrUnsupported)
	require.EqualError(t, err, `plugin "loop": call meter.measure: plugin does not provide token-meter`)
	// A method number the guest does not know reaches it and is refused there.
	_, err = p.Call(context.Background(), nil, abi.Method(5), nil)
	require.ErrorIs(t, err, plugin.ErrUnsupported)
	require.EqualError(t, err, `plugin "loop": call method(5): unsupported: unknown method method(5)`)
}
