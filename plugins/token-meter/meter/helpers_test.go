package meter_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/plugins/token-meter/meter"
	"github.com/weirhost/weir/surface"
)

// The tests build sessions through surface.Log, so every event is one the
// log admits, exactly as the loop would write it. Hand-built invalid logs
// (items 112-114) are built as plain events.

// reassemble is the tests' stream reader: a test stream is the JSON array
// of the provider's output blocks.
func reassemble(stream []byte) ([]surface.Block, error) {
	var blocks []surface.Block
	if err := json.Unmarshal(stream, &blocks); err != nil {
		return nil, fmt.Errorf("test stream: %w", err)
	}
	return blocks, nil
}

var testConfig = meter.Config{Reassemble: reassemble}

// session is a session log under construction.
type session struct {
	t          testing.TB
	log        *surface.Log
	turn, step int64
	ids        int
}

func newSession(t testing.TB) *session {
	clock := int64(1_700_000_000_000)
	return &session{t: t, log: surface.New(surface.WithClock(func() int64 { clock++; return clock }))}
}

func (s *session) add(typ string, data any, op surface.Op, sources ...int64) surface.Event {
	s.t.Helper()
	b, ok := data.([]byte)
	if !ok {
		var err error
		b, err = surface.Data(data)
		require.NoError(s.t, err)
	}
	p := surface.Proposal{Type: typ, Data: b, Op: op}
	if len(sources) > 0 {
		p.Sources = sources
	}
	e, err := s.log.Append(p)
	require.NoError(s.t, err)
	return e
}

func (s *session) id() string { s.ids++; return fmt.Sprintf("m%d", s.ids) }

func (s *session) turnStart() {
	s.turn++
	s.step = 0
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

// system commits a system/message holding text, appended or replacing.
func (s *session) system(text string, op surface.Op, sources ...int64) int64 {
	m := surface.SystemMessage(s.id(), "system-prompt", text)
	return s.add(surface.TypeSystemMessage, surface.StepMessage{Turn: s.turn, Step: s.step, Message: m}, op, sources...).Seq
}

func (s *session) userMsg(content ...surface.Block) surface.Message {
	if content == nil {
		content = []surface.Block{}
	}
	return surface.Message{ID: s.id(), Role: surface.RoleUser, Source: surface.Source{Kind: "user"}, Content: content}
}

// user appends a user/message with one text block.
func (s *session) user(text string) int64 {
	return s.add(surface.TypeUserMessage, s.userMsg(surface.Text(text)), surface.Append).Seq
}

// header logs a request/header.
func (s *session) header(h surface.Header, reason string) {
	s.add(surface.TypeRequestHeader, surface.HeaderEvent{Header: h, Reason: reason}, surface.Op{})
}

// assistant appends an assistant/message whose provider stream produced
// output (nil: the durable content) and that reported usage.
func (s *session) assistant(content []surface.Block, output []surface.Block, usage *surface.Usage) int64 {
	if output == nil {
		output = content
	}
	stream, err := json.Marshal(output)
	require.NoError(s.t, err)
	m := surface.Message{ID: s.id(), Role: surface.RoleAssistant,
		Source: surface.Source{Kind: "model", Provider: "deepseek", Model: "deepseek-chat"}, Content: content}
	return s.add(surface.TypeAssistantMessage, surface.StepMessage{Turn: s.turn, Step: s.step, Message: m,
		Stream: jsontext.Value(stream), Usage: usage}, surface.Append).Seq
}

// toolResult appends a tool/result answering callID with text.
func (s *session) toolResult(callID, text string) int64 {
	m := surface.Message{ID: s.id(), Role: surface.RoleUser, Source: surface.Source{Kind: "tool", CallID: callID},
		Content: []surface.Block{surface.ToolResult(callID, false, surface.Text(text))}}
	return s.add(surface.TypeToolResult, surface.StepMessage{Turn: s.turn, Step: s.step, Message: m}, surface.Append).Seq
}

func (s *session) toolCall(callID, name, args string) {
	s.add(surface.TypeToolCall, map[string]any{"turn": s.turn, "step": s.step, "callId": callID, "name": name, "arguments": args}, surface.Op{})
}

// replay folds events into a fresh meter.
func replay(t testing.TB, cfg meter.Config, events []surface.Event) *meter.Meter {
	t.Helper()
	m, err := meter.New(cfg)
	require.NoError(t, err)
	for _, e := range events {
		require.NoError(t, m.Observe(e), "seq %d", e.Seq)
	}
	return m
}

// measure replays s's log into a fresh meter and measures it.
func (s *session) measure(cfg meter.Config, override *surface.Header) meter.Measurement {
	s.t.Helper()
	got, err := replay(s.t, cfg, s.log.Events()).Measure(override)
	require.NoError(s.t, err)
	return got
}

// project folds events into fresh projections.
func project(t testing.TB, events []surface.Event) *meter.Projections {
	t.Helper()
	p := meter.NewProjections()
	for _, e := range events {
		require.NoError(t, p.Observe(e), "seq %d", e.Seq)
	}
	return p
}

// price returns the fixed-estimator price of the surface event with seq.
func (s *session) price(seq int64) int64 {
	e, ok := s.log.Event(seq)
	require.True(s.t, ok)
	m, ok := s.log.Message(seq)
	require.True(s.t, ok)
	return meter.EstimateNode(e.Type, m)
}

// sumPrices is the fixed-estimator price of the current surface.
func (s *session) sumPrices() int64 {
	var n int64
	for _, seq := range s.log.Nodes() {
		n += s.price(seq)
	}
	return n
}

func i64(v int64) *int64 { return &v }

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// route is a request header for provider/model with optional tools.
func route(provider, model string, tools ...string) surface.Header {
	h := surface.Header{Config: surface.CallConfig{Provider: provider, Model: model}}
	for _, t := range tools {
		h.Tools = append(h.Tools, jsontext.Value(t))
	}
	return h
}

// ev hand-builds an event (for logs the session log would refuse).
func ev(seq int64, typ, data string, op surface.Op) surface.Event {
	return surface.Event{Type: typ, Seq: seq, Time: 1, Data: []byte(data), Op: op}
}
