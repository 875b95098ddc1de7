package provider_test

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/plugins/token-meter/meter"
	tmnative "github.com/weirhost/weir/plugins/token-meter/native"
	"github.com/weirhost/weir/sdk/plugintest"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

var echoTool = &host.FuncTool{ToolName: "echo", Description: "Echo the arguments.\nSecond line.",
	Fn: func(_ context.Context, args string) (string, error) { return "echo " + args, nil }}

// TestLoopWithThreeWASMProviders runs the agent loop with the prompt, the
// compaction provider and the token meter all running as WebAssembly, and
// checks that every request rebuilt from the log is what was sent.
func TestLoopWithThreeWASMProviders(t *testing.T) {
	counters := provider.WithTokenizers(map[string]tokenizer.Counter{"test-tokenizer": tokenizer.Heuristic})
	promptPlugin := load(t, "benign", "benign-prompt", provider.RoleSystemPrompt, "", provider.Limits{})
	meterPlugin := load(t, "benign", "benign-meter", provider.RoleTokenMeter, "", provider.Limits{}, counters)
	compPlugin := load(t, "checkpoint", "checkpoint", provider.RoleCompaction, `{"maxNodes":6}`, provider.Limits{})
	comp, err := compPlugin.Compaction()
	require.NoError(t, err)

	var meter *provider.Meter
	sum := &summarizer{}
	l := newLoop(t, func(s *host.Session, cfg *host.Config) {
		prompt, err := promptPlugin.SystemPrompt(s)
		require.NoError(t, err)
		meter, err = meterPlugin.Meter(s)
		require.NoError(t, err)
		cfg.Prompt, cfg.Meter, cfg.Compactors, cfg.Summarizer = prompt, meter, []host.CompactionProvider{comp}, sum
		cfg.Sections = []host.Section{{Key: "role", Text: "You are a test."}, {Key: "style", Text: "Be terse."}}
		cfg.Data = map[string]string{"date": "2025-05-01", "cwd": "/work"}
		cfg.Tools = []host.Tool{echoTool}
	})
	l.model.replies = append(l.model.replies,
		func(*llm.Request) (*llm.Result, error) { return text("hello"), nil },
		func(*llm.Request) (*llm.Result, error) {
			return &llm.Result{Content: []surface.Block{surface.ToolCall("c1", "echo", `{"x":1}`)}, FinishReason: llm.FinishToolCalls}, nil
		})
	for i := range 8 {
		require.Equal(t, surface.EndCompleted, l.turn("message "+strconv.Itoa(i)).Reason.Kind)
	}
	require.Empty(t, l.failures(), "no provider failed")
	require.Len(t, l.events(surface.TypeToolResult), 1)
	l.checkReconstruction()
	t.Logf("%d events, %d surface nodes, %d compactions, %d meter calls", l.s.Log().NextSeq(), l.s.Log().NodeCount(),
		len(l.events(surface.TypeCompactionStart)), meterPlugin.Stats().Calls)

	// The prompt is benign's rendering of the assembly.
	require.Equal(t, "role: You are a test.\nstyle: Be terse.\ncwd=/work\ndate=2025-05-01\ntools=echo: Echo the arguments.\nroute=test/m1",
		l.lastSystemPrompt())
	require.Len(t, l.events(surface.TypeSystemMessage), 1)

	// The compaction plugin compacted, reading the meter through the host.
	starts := l.events(surface.TypeCompactionStart)
	require.NotEmpty(t, starts)
	require.Equal(t, strconv.Itoa(len(starts)), string(comp.State(l.s.ID())), "the state blob counts admitted compactions")
	for _, e := range l.events(surface.TypeCompactionSummary) {
		var d struct {
			TotalTokens int64 `json:"totalTokens"`
		}
		require.NoError(t, json.Unmarshal(e.Data, &d))
		require.Positive(t, d.TotalTokens, "measure answered through the WASM meter")
	}
	require.Equal(t, len(starts), sum.calls)
	require.LessOrEqual(t, l.s.Log().NodeCount(), 8, "compaction keeps the surface small")

	// The meter folded every event, in batches, and measures the log.
	m, err := meter.Measure(context.Background(), nil)
	require.NoError(t, err)
	next := l.s.Log().NextSeq()
	require.Equal(t, next, m.LogRevision, "benign counts the events it folded")
	require.Equal(t, next, meter.Folded())
	state := meter.State()
	require.Len(t, state, 24)
	require.Equal(t, uint64(next), binary.LittleEndian.Uint64(state))
	require.Equal(t, "estimated", m.Baseline)
	require.Equal(t, m.TotalTokens, m.Breakdown.User, "benign reports no nodes: the message total stays one category")
	require.Less(t, meterPlugin.Stats().Calls, uint64(next), "events travel in batches, not one call each")
}

// TestMeterFailuresDisableIt shows the meter's failure policy: errors are
// returned, events stay queued, and after three failures in a row the
// meter reads as absent (host.ErrNotGranted).
func TestMeterFailuresDisableIt(t *testing.T) {
	// benign's meter counts with "test-tokenizer", which this host lacks.
	lp := load(t, "benign", "benign-meter-broken", provider.RoleTokenMeter, "", provider.Limits{})
	l := newLoop(t, nil)
	meter, err := lp.Meter(l.s)
	require.NoError(t, err)
	l.turn("one")
	ctx := context.Background()
	for i := range 3 {
		_, err := meter.Measure(ctx, nil)
		require.ErrorContains(t, err, `plugin "benign-meter-broken": call meter.observe: plugin error: host count_tokens: not found: count_tokens: no tokenizer named "test-tokenizer" (the host has deepseek-v3, heuristic)`)
		require.Equal(t, i == 2, errors.Is(err, provider.ErrDisabled), "the third failure disables it")
		require.Zero(t, meter.Folded(), "nothing was folded")
	}
	require.True(t, meter.Disabled())
	calls := lp.Stats().Calls
	require.NoError(t, meter.Observe(l.s.Log().Events()), "a disabled meter drops events")
	_, err = meter.Measure(ctx, nil)
	require.ErrorIs(t, err, provider.ErrDisabled)
	require.ErrorIs(t, err, host.ErrNotGranted, "a disabled meter reads as no meter")
	require.Equal(t, calls, lp.Stats().Calls)
}

// TestMeterBatches checks that Observe sends at most a batch's worth of
// event JSON per call and that Measure catches up with the log.
func TestMeterBatches(t *testing.T) {
	counters := provider.WithTokenizers(map[string]tokenizer.Counter{"test-tokenizer": tokenizer.Heuristic})
	lp := load(t, "benign", "benign-meter-batches", provider.RoleTokenMeter, "", provider.Limits{}, counters,
		provider.WithObserveBatch(600))
	l := newLoop(t, nil)
	for i := range 5 {
		l.turn("turn " + strconv.Itoa(i))
	}
	meter, err := lp.Meter(l.s)
	require.NoError(t, err)
	events := l.s.Log().Events()
	size := 0
	for _, e := range events {
		size += len(e.Data)
	}
	calls := lp.Stats().Calls
	require.NoError(t, meter.Observe(events[:len(events)-3]))
	observeCalls := lp.Stats().Calls - calls
	require.GreaterOrEqual(t, observeCalls, uint64(size/600-1), "a batch carries at most 600 bytes of data")
	require.Less(t, observeCalls, uint64(len(events)), "several events per batch")
	// The last three events were never observed: Measure reads them from the log.
	m, err := meter.Measure(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, int64(len(events)), m.LogRevision)
	// Unchanged log, same measurement, no call.
	calls = lp.Stats().Calls
	m2, err := meter.Measure(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, m, m2)
	require.Equal(t, calls, lp.Stats().Calls)
	// A header override is measured afresh and reaches the plugin.
	override := &surface.Header{Config: surface.CallConfig{Provider: "p", Model: "m"}}
	m3, err := meter.Measure(context.Background(), override)
	require.NoError(t, err)
	hb, err := surface.Data(override.Canonical())
	require.NoError(t, err)
	require.Equal(t, int64(len(hb)), m3.Breakdown.Tools, "benign reports the override's size as tools tokens")
}

// TestCompactionReasonsMapToMethods checks that pressure, manual and
// context-overflow compaction reach prestep, manual and overflow, with the
// failure code and the route's limits.
func TestCompactionReasonsMapToMethods(t *testing.T) {
	lp := load(t, "checkpoint", "checkpoint-reasons", provider.RoleCompaction, `{"maxNodes":6}`, provider.Limits{})
	comp, err := lp.Compaction()
	require.NoError(t, err)
	l := newLoop(t, func(_ *host.Session, cfg *host.Config) { cfg.Compactors = []host.CompactionProvider{comp} })
	l.turn("one")
	l.turn("two")
	// Manual, between turns.
	done, err := l.a.CompactNow(context.Background())
	require.NoError(t, err)
	require.True(t, done)
	// Overflow: the model refuses, the plugin compacts, the step retries.
	l.model.replies = append(l.model.replies, func(*llm.Request) (*llm.Result, error) {
		return &llm.Result{}, &llm.Error{Code: llm.CodeContextOverflow, What: "too long"}
	})
	require.Equal(t, surface.EndCompleted, l.turn("three").Reason.Kind)
	// Pressure, until the surface outgrows maxNodes.
	for l.s.Log().NodeCount() <= 6 {
		l.turn("more")
	}
	l.turn("pressure")

	type start struct {
		Method        string `json:"method"`
		Failure       string `json:"failure"`
		Turn          int64  `json:"turn"`
		ContextWindow int64  `json:"contextWindow"`
	}
	var got []start
	for _, e := range l.events(surface.TypeCompactionStart) {
		var s start
		require.NoError(t, json.Unmarshal(e.Data, &s))
		got = append(got, s)
	}
	require.GreaterOrEqual(t, len(got), 3)
	require.Equal(t, start{Method: "manual", ContextWindow: 100_000}, got[0])
	require.Equal(t, start{Method: "overflow", Failure: llm.CodeContextOverflow, Turn: 3, ContextWindow: 100_000}, got[1])
	require.Equal(t, "prestep", got[2].Method)
	require.Empty(t, l.failures())
	require.Equal(t, strconv.Itoa(len(got)), string(comp.State(l.s.ID())))
	l.checkReconstruction()
}

// TestWASMMeterMatchesNative checks that the first-party token meter, as
// WebAssembly through the adapter, measures what its native build
// measures on a session with a tool result and a usage anchor: breakdown
// split, estimate error and tokenizer name included.
func TestWASMMeterMatchesNative(t *testing.T) {
	built := firstParty(t)
	require.Contains(t, built, "token-meter")
	p, err := provider.Load(context.Background(), plugintest.Runtime(t), provider.Spec{
		Name: "token-meter", Role: provider.RoleTokenMeter, Wasm: built["token-meter"]})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close(context.Background()) })

	g := newGen(t)
	g.turn(2)
	g.open()
	turn := g.turnNo
	g.add(surface.TypeStepStart, ref{turn, 1}, surface.Op{}, nil)
	g.add(surface.TypeUserMessage, surface.Message{ID: g.id(), Role: surface.RoleUser, Source: surface.Source{Kind: "user"},
		Content: []surface.Block{surface.Text("run echo")}}, surface.Append, nil)
	g.add(surface.TypeAssistantMessage, surface.StepMessage{Turn: turn, Step: 1, Usage: &surface.Usage{Input: 180, Output: 9},
		Message: surface.Message{ID: g.id(), Role: surface.RoleAssistant, Source: surface.Source{Kind: "model", Provider: "test", Model: "m1"},
			Content: []surface.Block{surface.ToolCall("c1", "echo", `{"x":1}`)}}}, surface.Append, nil)
	g.add(surface.TypeToolCall, map[string]any{"turn": turn, "step": 1, "callId": "c1", "name": "echo", "arguments": `{"x":1}`}, surface.Op{}, nil)
	g.add(surface.TypeToolResult, surface.StepMessage{Turn: turn, Step: 1, Message: surface.Message{ID: g.id(), Role: surface.RoleUser,
		Source: surface.Source{Kind: "tool", CallID: "c1"}, Content: []surface.Block{surface.ToolResult("c1", false, surface.Text("echo "+filler))}}},
		surface.Append, nil)
	g.add(surface.TypeStepEnd, ref{turn, 1}, surface.Op{}, nil)

	wasm, err := p.Meter(g.s)
	require.NoError(t, err)
	got, err := wasm.Measure(context.Background(), nil)
	require.NoError(t, err)
	nat, err := tmnative.New(meter.Config{})
	require.NoError(t, err)
	require.NoError(t, nat.Observe(g.s.Log().Events()))
	want, err := nat.Measure(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.NotNil(t, got.EstimateError, "a call reported usage")
	require.NotEmpty(t, got.Tokenizer)
	for name, n := range map[string]int64{"system": got.Breakdown.System, "user": got.Breakdown.User,
		"assistant": got.Breakdown.Assistant, "tool results": got.Breakdown.ToolResults} {
		require.Positive(t, n, name)
	}
}
