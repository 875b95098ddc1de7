package meter_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/plugins/token-meter/meter"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

// richSession is a session that exercises every part of the replay state:
// two routes (DeepSeek, priced with its tokenizer, and one priced with the
// estimator), tools, a header with every config field, usage anchors, tool
// calls and results, a system prompt replaced and a compaction-style
// replace.
func richSession(t testing.TB) *session {
	s := newSession(t)
	temp, maxTok := 0.25, int64(512)
	ds := route("deepseek", "deepseek-chat", `{"name":"read","parameters":{"type":"object"}}`)
	ds.Config.Temperature, ds.Config.MaxTokens, ds.Config.Stop = &temp, &maxTok, []string{}
	ds.Config.ReasoningEffort = "high"
	ds.AdapterDefaults = &surface.AdapterDefaults{MaxTokens: true}
	s.turnStart()
	s.stepStart()
	head := s.system("You are terse.", surface.Append)
	u := s.user("Read the file and summarize it, 请.")
	s.header(ds, surface.ReasonInitial)
	a := s.assistant([]surface.Block{surface.ToolCall("c1", "read", `{"path":"a.go"}`)}, nil, &surface.Usage{Input: 60, Output: 20})
	s.toolCall("c1", "read", `{"path":"a.go"}`)
	r1 := s.toolResult("c1", strings.Repeat("package a\n\nfunc A() {}\n", 20))
	s.stepEnd()
	s.stepStart()
	s.assistant([]surface.Block{surface.Text("It defines A twenty times.")}, nil, &surface.Usage{Input: 200, Output: 9, CacheRead: 50})
	s.stepEnd()
	s.turnEnd()
	s.turnStart()
	s.stepStart()
	s.system("You are verbose.", surface.Replace(head, head), head)
	s.user("Now in English only.")
	s.header(route("acme", "m1"), surface.ReasonChange) // another tokenizer: every node is repriced
	s.assistant([]surface.Block{surface.Text("Sure.")}, nil, nil)
	s.stepEnd()
	s.turnEnd()
	s.turnStart()
	start := s.add(surface.TypeCompactionStart, map[string]any{"compactionId": "c", "turn": 3}, surface.Op{}).Seq
	cp := s.userMsg(surface.Text("checkpoint"))
	s.add(surface.TypeUserMessage, cp, surface.Replace(u, r1), start, u, a, r1)
	s.stepStart()
	s.header(ds, surface.ReasonChange) // back to DeepSeek
	s.assistant([]surface.Block{surface.Text("Done.")}, nil, &surface.Usage{Input: 90, Output: 3})
	s.stepEnd()
	return s
}

// contentOf serves restored meters the content of a log's events.
func contentOf(s *session) func(int64) ([]byte, error) {
	return func(seq int64) ([]byte, error) {
		m, ok := s.log.Message(seq)
		if !ok {
			return nil, fmt.Errorf("no message at seq %d", seq)
		}
		return json.Marshal(m.Content)
	}
}

// A meter restored from its state before every event folds and measures
// exactly as one that kept running: the same state bytes and the same
// measurements, under the logged header and under overrides of both
// routes.
func TestStateRoundTripAtEveryEvent(t *testing.T) {
	s := richSession(t)
	cfg := testConfig
	cfg.Content = contentOf(s)
	live, err := meter.New(cfg)
	require.NoError(t, err)
	overrides := []*surface.Header{nil, new(route("deepseek", "deepseek-chat")), new(route("acme", "m1", `{"name":"x"}`))}
	var state []byte
	for _, e := range s.log.Events() {
		require.NoError(t, live.Observe(e), "seq %d", e.Seq)
		restored, err := meter.Restore(cfg, state)
		require.NoError(t, err, "seq %d", e.Seq)
		require.NoError(t, restored.Observe(e), "seq %d", e.Seq)
		state = restored.AppendState(nil)
		require.Equal(t, live.AppendState(nil), state, "seq %d", e.Seq)
		for _, o := range overrides {
			back, err := meter.Restore(cfg, state)
			require.NoError(t, err)
			want, err := live.Measure(o)
			require.NoError(t, err)
			got, err := back.Measure(o)
			require.NoError(t, err)
			require.Equal(t, want, got, "seq %d, override %v", e.Seq, o)
		}
	}
	final, err := live.Measure(nil)
	require.NoError(t, err)
	require.Equal(t, meter.BaselineUsage, final.Baseline, "the scenario ends on a usage anchor")
	require.Less(t, len(state), 300+8*len(final.Nodes), "a blob holds no contents: %d bytes", len(state))
}

// A blob keeps a stopped meter stopped, with the same error.
func TestStateKeepsTheStop(t *testing.T) {
	s := newSession(t)
	s.turnStart()
	s.stepStart()
	s.user("hi")
	events := s.log.Events()
	bad := ev(int64(len(events)), surface.TypeStepStart, `{"turn":1,"step":2}`, surface.Op{})
	live, err := meter.New(testConfig)
	require.NoError(t, err)
	for _, e := range events {
		require.NoError(t, live.Observe(e))
	}
	wantErr := live.Observe(bad)
	require.ErrorContains(t, wantErr, "step/start turn 1 step 2 while turn 1 step 1 is open")

	back, err := meter.Restore(testConfig, live.AppendState(nil))
	require.NoError(t, err)
	_, err = back.Measure(nil)
	require.EqualError(t, err, wantErr.Error())
	require.EqualError(t, back.Observe(bad), wantErr.Error(), "observing it again fails identically")
	next := ev(bad.Seq+1, surface.TypeTurnEnd, `{"turn":1}`, surface.Op{})
	require.EqualError(t, back.Observe(next), live.Observe(next).Error())
}

// A restored meter that cannot load a content it must reprice fails the
// event without stopping at it: with the content at hand the same event
// folds.
func TestStateContentLoading(t *testing.T) {
	s := newSession(t)
	s.turnStart()
	s.stepStart()
	s.user("hello there")
	s.header(route("acme", "m1"), surface.ReasonInitial)
	events := s.log.Events()
	s.header(route("deepseek", "deepseek-chat"), surface.ReasonChange)
	change := s.log.Events()[len(events)]

	live := replay(t, testConfig, events)
	state := live.AppendState(nil)

	for name, content := range map[string]func(int64) ([]byte, error){
		"no source":      nil,
		"failing source": func(int64) ([]byte, error) { return nil, errors.New("host is away") },
		"not an array":   func(int64) ([]byte, error) { return []byte(`{"type":"text"}`), nil },
	} {
		cfg := testConfig
		cfg.Content = content
		m, err := meter.Restore(cfg, state)
		require.NoError(t, err)
		err = m.Observe(change)
		require.ErrorContains(t, err, "surface node 0 (seq 2)", name)
		_, err = m.Measure(nil)
		require.NoError(t, err, "%s: the meter did not stop", name)
		require.Equal(t, state, m.AppendState(nil), name)
	}
	cfg := testConfig
	var asked []int64
	cfg.Content = func(seq int64) ([]byte, error) { asked = append(asked, seq); return contentOf(s)(seq) }
	m, err := meter.Restore(cfg, state)
	require.NoError(t, err)
	require.NoError(t, m.Observe(change))
	require.Equal(t, []int64{2}, asked)
	require.NoError(t, live.Observe(change))
	require.Equal(t, live.AppendState(nil), m.AppendState(nil))
}

// Malformed blobs are refused with an error, never a panic.
func TestStateRejectsMalformedBlobs(t *testing.T) {
	good := replay(t, testConfig, richSession(t).log.Events()).AppendState(nil)
	for i := 1; i < len(good); i++ {
		_, err := meter.Restore(testConfig, good[:i])
		require.Error(t, err, "truncated to %d bytes", i)
	}
	_, err := meter.Restore(testConfig, append(good[:len(good):len(good)], 0))
	require.EqualError(t, err, "token meter: state blob: 1 trailing bytes")
	_, err = meter.Restore(testConfig, []byte{0xC1, 1})
	require.EqualError(t, err, "token meter: state blob: not a meter state")
	_, err = meter.Restore(testConfig, []byte{0xD7, 9})
	require.EqualError(t, err, "token meter: state blob: version 9, this meter reads version 1")
	for i := range good {
		flipped := append([]byte(nil), good...)
		flipped[i] ^= 0xFF
		_, _ = meter.Restore(testConfig, flipped) // may or may not decode; must not panic
	}
}

func FuzzRestore(f *testing.F) {
	f.Add(replay(f, testConfig, richSession(f).log.Events()).AppendState(nil))
	f.Fuzz(func(t *testing.T, blob []byte) {
		m, err := meter.Restore(testConfig, blob)
		if err != nil {
			return
		}
		_, _ = m.Measure(nil)
		again, err := meter.Restore(testConfig, m.AppendState(nil))
		require.NoError(t, err)
		require.Equal(t, m.AppendState(nil), again.AppendState(nil))
	})
}

// countingCounter counts through another counter and records its calls.
type countingCounter struct {
	tokenizer.Counter
	calls *int
}

func (c countingCounter) Count(text string) int { *c.calls++; return c.Counter.Count(text) }

// Config.DeepSeek replaces the embedded DeepSeek tokenizer, framing
// included: a counter that counts the same prices the same.
func TestDeepSeekCounterOverride(t *testing.T) {
	s := richSession(t)
	calls := 0
	cfg := testConfig
	cfg.DeepSeek = countingCounter{Counter: tokenizer.DeepSeekV3(), calls: &calls}
	for _, o := range []*surface.Header{nil, new(route("deepseek", "deepseek-chat"))} {
		want := s.measure(testConfig, o)
		got := s.measure(cfg, o)
		require.Equal(t, want, got)
		require.Equal(t, meter.DeepSeekV3, got.Tokenizer)
	}
	require.Positive(t, calls)
}

// A node the content source no longer has (an event the meter has yet to
// fold shadowed it) keeps its price through a route change; folding the
// shadowing event drops it, and the meter is back in step with one that
// never left memory.
func TestStateNodeGoneFromTheSource(t *testing.T) {
	s := newSession(t)
	s.turnStart()
	s.stepStart()
	u := s.user("an old message that a checkpoint will replace")
	s.user("a newer message")
	s.header(route("acme", "m1"), surface.ReasonInitial)
	events := s.log.Events()
	s.header(route("deepseek", "deepseek-chat"), surface.ReasonChange)
	start := s.add(surface.TypeCompactionStart, map[string]any{"compactionId": "c", "turn": 1}, surface.Op{}).Seq
	s.add(surface.TypeUserMessage, s.userMsg(surface.Text("checkpoint")), surface.Replace(u, u), start, u)
	later := s.log.Events()[len(events):]

	live := replay(t, testConfig, s.log.Events())
	cfg := testConfig
	cfg.Content = func(seq int64) ([]byte, error) {
		if seq == u {
			return nil, fmt.Errorf("seq %d: %w", seq, meter.ErrNoContent)
		}
		return contentOf(s)(seq)
	}
	m, err := meter.Restore(cfg, replay(t, testConfig, events).AppendState(nil))
	require.NoError(t, err)
	require.NoError(t, m.Observe(later[0]), "the route change reprices what the source still has")
	mid, err := m.Measure(nil)
	require.NoError(t, err)
	old := replay(t, testConfig, events)
	before, err := old.Measure(nil)
	require.NoError(t, err)
	require.Equal(t, before.Nodes[0], mid.Nodes[0], "the gone node keeps its price")
	for _, e := range later[1:] {
		require.NoError(t, m.Observe(e))
	}
	require.Equal(t, live.AppendState(nil), m.AppendState(nil))
	want, err := live.Measure(nil)
	require.NoError(t, err)
	got, err := m.Measure(nil)
	require.NoError(t, err)
	require.Equal(t, want, got)
}
