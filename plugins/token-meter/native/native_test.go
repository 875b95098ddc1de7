package native_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/plugins/token-meter/meter"
	"github.com/weirhost/weir/plugins/token-meter/native"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/sdk/tokenizer/openai"
	"github.com/weirhost/weir/surface"
)

// record is a stream record of a streamed reply made of chunks.
func record(chunks ...string) jsontext.Value {
	var b strings.Builder
	b.WriteString(`{"v":1,"chunks":[`)
	for i, c := range chunks {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "[%d,%s]", i*10, c)
	}
	fmt.Fprintf(&b, `],"done":%d}`, len(chunks)*10)
	return jsontext.Value(b.String())
}

type session struct {
	t   *testing.T
	log *surface.Log
}

func (s *session) add(typ string, data any, op surface.Op) surface.Event {
	s.t.Helper()
	b, err := surface.Data(data)
	require.NoError(s.t, err)
	e, err := s.log.Append(surface.Proposal{Type: typ, Data: b, Op: op})
	require.NoError(s.t, err)
	return e
}

// call builds one turn: prompt, question, header, and an answer whose
// durable content is durable while the provider streamed stream.
func call(t *testing.T, provider string, durable []surface.Block, stream jsontext.Value, usage surface.Usage) *session {
	s := &session{t: t, log: surface.New()}
	s.add(surface.TypeTurnStart, map[string]int{"turn": 1}, surface.Op{})
	s.add(surface.TypeStepStart, map[string]int{"turn": 1, "step": 1}, surface.Op{})
	s.add(surface.TypeSystemMessage, surface.StepMessage{Turn: 1, Step: 1, Message: surface.SystemMessage("s", "system-prompt", "Answer briefly.")}, surface.Append)
	s.add(surface.TypeUserMessage, surface.Message{ID: "u", Role: "user", Source: surface.Source{Kind: "user"},
		Content: []surface.Block{surface.Text("What is the capital of France?")}}, surface.Append)
	s.add(surface.TypeRequestHeader, surface.HeaderEvent{Header: surface.Header{Config: surface.CallConfig{Provider: provider, Model: "m"}}, Reason: "initial"}, surface.Op{})
	s.add(surface.TypeAssistantMessage, surface.StepMessage{Turn: 1, Step: 1, Stream: stream, Usage: &usage,
		Message: surface.Message{ID: "a", Role: "assistant", Source: surface.Source{Kind: "model", Provider: provider, Model: "m"}, Content: durable}}, surface.Append)
	return s
}

func measure(t *testing.T, m *native.Meter, h *surface.Header) *host.Measurement {
	t.Helper()
	got, err := m.Measure(context.Background(), h)
	require.NoError(t, err)
	return got
}

func TestReassembledStreamAnchorsUsage(t *testing.T) {
	stream := record(llmtest.Role(), llmtest.Reasoning("The user asks a fact."), llmtest.Text("Paris"), llmtest.Text("."),
		llmtest.Finish("stop"), llmtest.DeepSeekUsage(0, 30, 12, 5))
	blocks, err := native.Reassemble(stream)
	require.NoError(t, err)
	answer := []surface.Block{{Type: surface.BlockReasoning, Text: "The user asks a fact."}, surface.Text("Paris.")}
	require.Equal(t, answer, blocks)

	for _, provider := range []string{"deepseek", "acme"} {
		t.Run(provider, func(t *testing.T) {
			// The durable message equals the output: delta 0, total = usage.
			s := call(t, provider, answer, stream, surface.Usage{Input: 300, Output: 12, Reasoning: 5})
			m, err := native.New(meter.Config{})
			require.NoError(t, err)
			require.Equal(t, native.ID, m.ID())
			require.NoError(t, m.Observe(s.log.Events()))
			got := measure(t, m, nil)
			require.Equal(t, meter.BaselineUsage, got.Baseline)
			require.Equal(t, int64(312), got.TotalTokens)
			require.Zero(t, got.SurfaceDeltaTokens)
			require.Len(t, got.Nodes, 3)
			require.NotNil(t, got.EstimateError)

			// An interrupted prefix as the durable message: the delta is its
			// price minus the streamed output's.
			prefix := []surface.Block{surface.Text("Par")}
			s = call(t, provider, prefix, stream, surface.Usage{Input: 300, Output: 12})
			m, err = native.New(meter.Config{})
			require.NoError(t, err)
			require.NoError(t, m.Observe(s.log.Events()))
			got = measure(t, m, nil)
			plain, err := meter.New(meter.Config{}) // durable message stands in
			require.NoError(t, err)
			for _, e := range s.log.Events() {
				require.NoError(t, plain.Observe(e))
			}
			want, err := plain.Measure(nil)
			require.NoError(t, err)
			assistant := want.Nodes[2].Tokens
			output := meter.EstimateMessage(answer)
			if provider == "deepseek" { // reasoning without tool calls is not sent back
				output = int64(2 + tokenizer.DeepSeekV3().Count("Paris."))
			}
			require.Equal(t, assistant-output, got.SurfaceDeltaTokens)
			require.Equal(t, 312+assistant-output, got.TotalTokens)
		})
	}
}

func TestObserveSkipsFoldedEvents(t *testing.T) {
	s := call(t, "acme", []surface.Block{surface.Text("Paris.")}, record(llmtest.Text("Paris.")), surface.Usage{Input: 500, Output: 2})
	m, err := native.New(meter.Config{})
	require.NoError(t, err)
	events := s.log.Events()
	require.NoError(t, m.Observe(events[:3]))
	require.NoError(t, m.Observe(events)) // the first three are skipped
	require.NoError(t, m.Observe(events))
	got := measure(t, m, nil)
	require.Equal(t, int64(len(events)), got.LogRevision)
	require.Equal(t, int64(502), got.TotalTokens)

	// Events observed one by one, as the host's observer hands them over.
	e := s.add(surface.TypeUserMessage, surface.Message{ID: "u2", Role: "user", Source: surface.Source{Kind: "user"},
		Content: []surface.Block{surface.Text("And of Spain?")}}, surface.Append)
	require.NoError(t, m.Observe([]surface.Event{e}))
	got = measure(t, m, nil)
	require.Equal(t, 502+got.Nodes[3].Tokens, got.TotalTokens)

	_, err = m.Measure(canceled(), nil)
	require.ErrorIs(t, err, context.Canceled)
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestObserveStopsAtABadEvent(t *testing.T) {
	s := call(t, "acme", []surface.Block{surface.Text("Paris.")}, jsontext.Value(`"not a record"`), surface.Usage{Input: 500, Output: 2})
	m, err := native.New(meter.Config{})
	require.NoError(t, err)
	events := s.log.Events()
	err = m.Observe(events)
	require.ErrorContains(t, err, "seq 5 (assistant/message): the provider output cannot be reassembled")
	_, merr := m.Measure(context.Background(), nil)
	require.Equal(t, err, merr)
	require.Equal(t, err, m.Observe(events[5:]), "retrying fails identically")
}

func TestOpenAIRoutes(t *testing.T) {
	const question = "What is the capital of France?"
	for _, name := range []string{"o200k", "cl100k_base"} {
		t.Run(name, func(t *testing.T) {
			s := call(t, "openai", []surface.Block{surface.Text("Paris.")}, record(llmtest.Text("Paris.")), surface.Usage{Input: 5, Output: 2})
			m, err := native.New(meter.Config{Routes: map[string]string{"openai": name}})
			require.NoError(t, err)
			require.NoError(t, m.Observe(s.log.Events()))
			got := measure(t, m, nil)
			enc := openai.O200kBase
			if strings.HasPrefix(name, "cl100k") {
				enc = openai.Cl100kBase
			}
			require.Equal(t, enc.Name(), got.Tokenizer)
			require.Equal(t, int64(3+enc.Count(question)), got.Nodes[1].Tokens)
			require.Equal(t, int64(3+enc.Count("Answer briefly.")), got.Nodes[0].Tokens)
		})
	}
}

func TestConcurrentObserveAndMeasure(t *testing.T) {
	s := call(t, "acme", []surface.Block{surface.Text("Paris.")}, record(llmtest.Text("Paris.")), surface.Usage{Input: 500, Output: 2})
	m, err := native.New(meter.Config{})
	require.NoError(t, err)
	events := s.log.Events()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			_, err := m.Measure(context.Background(), nil)
			if err != nil {
				panic(err)
			}
		}
	}()
	for i := range events {
		require.NoError(t, m.Observe(events[:i+1]))
	}
	<-done
	require.Equal(t, int64(502), measure(t, m, nil).TotalTokens)
}
