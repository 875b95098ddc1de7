package meter_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/plugins/token-meter/meter"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

// words is a test tokenizer: one token per space-separated word.
type words struct{}

func (words) Name() string          { return "words" }
func (words) Count(text string) int { return len(strings.Fields(text)) }

func TestPricingDeepSeekDiffersFromHeuristic(t *testing.T) {
	ds := tokenizer.DeepSeekV3()
	const chinese = "今天天气很好，我们去公园散步吧。然后回家吃晚饭，再看一会儿书。"
	const english = "The quick brown fox jumps over the lazy dog."
	s := newSession(t)
	s.turnStart()
	s.stepStart()
	s.header(route("deepseek", "deepseek-chat"), surface.ReasonInitial)
	zh := s.user(chinese)
	en := s.user(english)
	got := s.measure(testConfig, nil)
	require.Equal(t, meter.DeepSeekV3, got.Tokenizer)

	n := got.Nodes[0]
	require.Equal(t, zh, n.Seq)
	require.Equal(t, int64(1+ds.Count(chinese)), n.Tokens, "<｜User｜> + the text")
	require.Equal(t, int64((tokenizer.UTF16Len(chinese)+3)/4+4+4), n.HeuristicTokens)
	require.NotEqual(t, n.Tokens, n.HeuristicTokens)
	require.Equal(t, meter.Node{Seq: en, Tokens: int64(1 + ds.Count(english)), HeuristicTokens: s.price(en)}, got.Nodes[1])
	require.Equal(t, got.Nodes[0].Tokens+got.Nodes[1].Tokens, got.SurfaceTokens)
	require.Equal(t, got.SurfaceTokens, got.TotalTokens)

	// The same log priced for another provider uses the estimator.
	acme := route("acme", "m1")
	other := s.measure(testConfig, &acme)
	require.Equal(t, meter.Heuristic, other.Tokenizer)
	require.Equal(t, s.sumPrices(), other.SurfaceTokens)
	for _, n := range other.Nodes {
		require.Equal(t, n.HeuristicTokens, n.Tokens)
	}
}

func TestPricingDeepSeekFraming(t *testing.T) {
	ds := tokenizer.DeepSeekV3()
	count := func(s string) int64 { return int64(ds.Count(s)) }
	call := surface.ToolCall("c1", "read_file", `{"path":"main.go"}`)
	rendered := tokenizer.RenderChat([]tokenizer.Message{{Role: "assistant",
		ToolCalls: []tokenizer.ToolCall{{Name: "read_file", Arguments: `{"path":"main.go"}`}}}}, false)

	s := newSession(t)
	s.turnStart()
	s.stepStart()
	s.header(route("deepseek", "deepseek-reasoner"), surface.ReasonInitial)
	type want struct {
		seq    int64
		tokens int64
	}
	var wants []want
	add := func(seq, tokens int64) { wants = append(wants, want{seq, tokens}) }
	add(s.system("You are a careful assistant.", surface.Append), count("You are a careful assistant."))
	add(s.add(surface.TypeUserMessage, s.userMsg(surface.Text("first part"), surface.Text("second part")), surface.Append).Seq,
		1+count("first part\n\nsecond part"))
	add(s.assistant([]surface.Block{{Type: surface.BlockReasoning, Text: "I should read it."}, call}, nil, nil),
		count(rendered)-1+count("I should read it."))
	s.toolCall("c1", "read_file", `{"path":"main.go"}`)
	add(s.toolResult("c1", "package main"), 2+count("package main"))
	add(s.assistant([]surface.Block{{Type: surface.BlockReasoning, Text: "Done."}, surface.Text("It is a main package.")}, nil, nil),
		2+count("It is a main package."))
	add(s.assistant([]surface.Block{{Type: surface.BlockReasoning, Text: "only thinking"}}, nil, nil), 0)
	add(s.system("", surface.Append), 0)

	got := s.measure(testConfig, nil)
	require.Len(t, got.Nodes, len(wants))
	for i, w := range wants {
		require.Equal(t, w.seq, got.Nodes[i].Seq)
		require.Equal(t, w.tokens, got.Nodes[i].Tokens, "node %d", i)
		require.Equal(t, s.price(w.seq), got.Nodes[i].HeuristicTokens, "node %d", i)
	}
	require.NotZero(t, got.Nodes[5].HeuristicTokens, "reasoning alone is priced by the estimator but never sent")
}

func TestPricingRoutes(t *testing.T) {
	cfg := meter.Config{
		Reassemble: reassemble,
		Routes:     map[string]string{"acme": "words", "acme/big": meter.DeepSeekV3, "deepseek/legacy": meter.Heuristic},
		Counters:   map[string]tokenizer.Counter{"words": words{}},
	}
	s := newSession(t)
	s.turnStart()
	s.stepStart()
	s.system("be very brief", surface.Append)
	s.user("one two three")
	s.header(route("acme", "m1"), surface.ReasonInitial)
	cases := []struct {
		route surface.Header
		name  string
		nodes []int64
	}{
		{route("acme", "m1"), "words", []int64{3 + 3, 3 + 3}}, // 3 per message around the words
		{route("acme", "big"), meter.DeepSeekV3, nil},
		{route("deepseek", "legacy"), meter.Heuristic, nil},
		{route("deepseek", "deepseek-chat"), meter.DeepSeekV3, nil},
		{route("other", "x"), meter.Heuristic, nil},
	}
	for _, c := range cases {
		t.Run(c.route.Config.Provider+"/"+c.route.Config.Model, func(t *testing.T) {
			got := s.measure(cfg, &c.route)
			require.Equal(t, c.name, got.Tokenizer)
			if c.nodes != nil {
				require.Equal(t, c.nodes, []int64{got.Nodes[0].Tokens, got.Nodes[1].Tokens})
			}
		})
	}

	// A heuristic fallback prices measurements without a header; another
	// fallback can be configured.
	m, err := meter.New(meter.Config{Fallback: "words", Counters: cfg.Counters})
	require.NoError(t, err)
	got, err := m.Measure(nil)
	require.NoError(t, err)
	require.Equal(t, "words", got.Tokenizer)

	bad := map[string]meter.Config{
		"unknown route tokenizer": {Routes: map[string]string{"acme": "o300k"}},
		"unknown fallback":        {Fallback: "o300k"},
		"empty route":             {Routes: map[string]string{"": meter.Heuristic}},
		"shadowed built-in":       {Counters: map[string]tokenizer.Counter{meter.DeepSeekV3: words{}}},
		"nil counter":             {Counters: map[string]tokenizer.Counter{"x": nil}},
	}
	for name, c := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := meter.New(c)
			require.ErrorContains(t, err, "token meter: config")
		})
	}
}

func TestPricingToolsUnderTokenizer(t *testing.T) {
	const tool = `{"name": "read_file", "description": "Reads a file"}`
	s := newSession(t)
	s.turnStart()
	s.stepStart()
	s.user("hi")
	h := route("deepseek", "deepseek-chat", tool)
	s.header(h, surface.ReasonInitial)
	got := s.measure(testConfig, nil)
	want := int64(tokenizer.DeepSeekV3().Count(`[{"name":"read_file","description":"Reads a file"}]`))
	require.Equal(t, want, got.Breakdown.Tools)
	require.Equal(t, want+got.SurfaceTokens, got.TotalTokens)
}

func TestPricingAnchorFromStream(t *testing.T) {
	usage := surface.Usage{Input: 500, Output: 20}
	build := func(durable, output []surface.Block) *session {
		s := newSession(t)
		s.turnStart()
		s.stepStart()
		s.user("tell me a story")
		s.header(route("acme", "m1"), surface.ReasonInitial)
		s.assistant(durable, output, &usage)
		return s
	}
	long := []surface.Block{surface.Text(strings.Repeat("once upon a time ", 10))}
	short := []surface.Block{surface.Text("once")}

	// The durable message differs from the provider output: the delta is
	// the durable price minus the output's price.
	s := build(short, long)
	got := s.measure(testConfig, nil)
	require.Equal(t, meter.BaselineUsage, got.Baseline)
	require.Equal(t, meter.EstimateMessage(short)-meter.EstimateMessage(long), got.SurfaceDeltaTokens)
	require.Equal(t, 520+got.SurfaceDeltaTokens, got.TotalTokens)

	// Without a reassembler the durable message stands in: no delta.
	got = s.measure(meter.Config{}, nil)
	require.Zero(t, got.SurfaceDeltaTokens)
	require.Equal(t, int64(520), got.TotalTokens)

	// An output with no content prices 0.
	s = build(short, []surface.Block{})
	got = s.measure(testConfig, nil)
	require.Equal(t, meter.EstimateMessage(short), got.SurfaceDeltaTokens)

	// A stream that cannot be reassembled stops the meter at its event.
	failing := meter.Config{Reassemble: func([]byte) ([]surface.Block, error) { return nil, errors.New("truncated record") }}
	m, err := meter.New(failing)
	require.NoError(t, err)
	events := s.log.Events()
	for _, e := range events[:len(events)-1] {
		require.NoError(t, m.Observe(e))
	}
	err = m.Observe(events[len(events)-1])
	require.ErrorContains(t, err, "cannot be reassembled from the stream: truncated record")
	_, merr := m.Measure(nil)
	require.Equal(t, err, merr)
}

func TestPricingEstimateError(t *testing.T) {
	ds := tokenizer.DeepSeekV3()
	s := newSession(t)
	s.turnStart()
	s.stepStart()
	s.system("Answer briefly.", surface.Append)
	s.user("What is the capital of France?")
	s.header(route("deepseek", "deepseek-chat"), surface.ReasonInitial)
	exact := int64(ds.Count("Answer briefly.") + 1 + ds.Count("What is the capital of France?") + 2 + ds.Count("Paris."))
	s.assistant([]surface.Block{surface.Text("Paris.")}, nil, &surface.Usage{Input: exact, Output: 2})
	got := s.measure(testConfig, nil)
	require.Equal(t, meter.BaselineUsage, got.Baseline)
	require.Equal(t, exact-(exact+2), *got.EstimateError)
	require.Equal(t, exact, got.SurfaceTokens)
}

func TestObserveOutOfOrder(t *testing.T) {
	s := newSession(t)
	s.user("a")
	s.user("b")
	m, err := meter.New(testConfig)
	require.NoError(t, err)
	events := s.log.Events()
	require.ErrorContains(t, m.Observe(events[1]), "seq 1 is not contiguous: the meter expects seq 0")
	require.NoError(t, m.Observe(events[0]))
	require.ErrorContains(t, m.Observe(events[0]), "expects seq 1")
	_, err = m.Measure(nil)
	require.NoError(t, err, "a refused out-of-order event does not stop the meter")
}
