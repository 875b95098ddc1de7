package llm

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/surface"
)

// TestSessionLogReconstruction runs a two-step turn with a tool call
// against the loopback server, records it in a surface.Log the way the
// loop does (an attempt that hit a rate limit included), and checks that
// (1) every stream record is admitted by the log, (2) each body the server
// received equals EncodeRequest of the request rebuilt from the log prefix
// before that attempt, and (3) each stored stream reassembles to the
// stored message content.
func TestSessionLogReconstruction(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Push(
		llmtest.RateLimited("1"),
		llmtest.Stream(llmtest.Role(), llmtest.Reasoning("Need the file."), llmtest.ToolCall(0, "call_1", "read", `{"path":`),
			llmtest.ToolCall(0, "", "", `"a.go"}`), llmtest.Finish("tool_calls"), llmtest.DeepSeekUsage(0, 50, 12, 4)),
		llmtest.Stream(llmtest.Reasoning("Got it."), llmtest.Text("The file is fine."), llmtest.Finish("stop"), llmtest.DeepSeekUsage(50, 30, 8, 3)),
	)
	c := newTestClient(t, srv, nil)
	clock := int64(1_700_000_000_000)
	l := surface.New(surface.WithClock(func() int64 { clock++; return clock }))
	add := func(typ string, op *surface.Op, data any) surface.Event {
		t.Helper()
		b, err := surface.Data(data)
		require.NoError(t, err)
		p := surface.Proposal{Type: typ, Data: b}
		if op != nil {
			p.Op = *op
		}
		e, err := l.Append(p)
		require.NoError(t, err, "append %s", typ)
		return e
	}
	app := surface.Append
	type turnStep struct {
		Turn int64 `json:"turn"`
		Step int64 `json:"step,omitempty"`
	}
	tool := jsontext.Value(`{"type":"function","function":{"name":"read","parameters":{"type":"object"}}}`)
	cfg := surface.CallConfig{Provider: "deepseek", Model: "deepseek-chat"}

	add(surface.TypeTurnStart, nil, turnStep{Turn: 1})
	add(surface.TypeStepStart, nil, turnStep{Turn: 1, Step: 1})
	sys := surface.SystemMessage("m-sys", "system-prompt", "You are terse.")
	add(surface.TypeSystemMessage, &app, surface.StepMessage{Turn: 1, Step: 1, Message: sys})
	add(surface.TypeUserMessage, &app, surface.Message{ID: "m-u1", Role: surface.RoleUser, Source: surface.Source{Kind: "user"}, Content: []surface.Block{surface.Text("Check a.go")}})
	add(surface.TypeRequestHeader, nil, surface.HeaderEvent{Header: surface.Header{Config: cfg, Tools: []jsontext.Value{tool}}, Reason: surface.ReasonInitial})

	var attempts []int // log length before each attempt's settlement
	var stored []jsontext.Value
	call := func(step int64) *Result {
		t.Helper()
		h := l.Header()
		req := &Request{Config: h.Config, Messages: l.Messages(), Tools: h.Tools, SessionID: "s"}
		attempts = append(attempts, l.Len())
		res, err := c.Stream(context.Background(), req, nil)
		if err != nil {
			require.ErrorIs(t, err, ErrRateLimit)
			add(surface.TypeAssistantAttempt, nil, surface.StepMessage{Turn: 1, Step: step, Stream: res.Stream})
			stored = append(stored, res.Stream)
			return nil
		}
		m := surface.Message{ID: fmt.Sprintf("m-a%d", step), Role: surface.RoleAssistant,
			Source: surface.Source{Kind: "model", Provider: cfg.Provider, Model: cfg.Model}, Content: res.Content}
		add(surface.TypeAssistantMessage, &app, surface.StepMessage{Turn: 1, Step: step, Message: m, Stream: res.Stream, Usage: res.Usage})
		stored = append(stored, res.Stream)
		return res
	}
	require.Nil(t, call(1))
	res := call(1)
	require.Equal(t, &surface.Usage{Input: 50, Output: 12, Reasoning: 4}, res.Usage)
	calls := res.ToolCalls()
	require.Len(t, calls, 1)
	add(surface.TypeToolCall, nil, map[string]any{"turn": 1, "step": 1, "callId": calls[0].ID, "name": calls[0].Name, "arguments": calls[0].Arguments})
	add(surface.TypeToolResult, &app, surface.StepMessage{Turn: 1, Step: 1, Message: surface.Message{ID: "m-r1", Role: surface.RoleUser,
		Source: surface.Source{Kind: "tool", CallID: calls[0].ID}, Content: []surface.Block{surface.ToolResult(calls[0].ID, false, surface.Text("package a"))}}})
	add(surface.TypeStepEnd, nil, turnStep{Turn: 1, Step: 1})
	add(surface.TypeStepStart, nil, turnStep{Turn: 1, Step: 2})
	res = call(2)
	require.Equal(t, "The file is fine.", surface.TextOf(res.Content))
	add(surface.TypeStepEnd, nil, turnStep{Turn: 1, Step: 2})
	add(surface.TypeTurnEnd, nil, map[string]any{"turn": 1, "reason": map[string]string{"kind": "completed"}})

	// (2) every sent body is rebuilt from the log prefix before its attempt.
	sent := srv.Requests()
	require.Len(t, sent, 3)
	for i, n := range attempts {
		prefix, err := surface.Restore(l.Events()[:n])
		require.NoError(t, err)
		h := prefix.Header()
		body, err := EncodeRequest(&Request{Config: h.Config, Messages: prefix.Messages(), Tools: h.Tools})
		require.NoError(t, err)
		require.Equal(t, string(sent[i].Body), string(body), "attempt %d", i)
	}
	require.Contains(t, string(sent[2].Body), `"reasoning_content":"Need the file."`, "DeepSeek tool sub-turn replays reasoning")

	// (3) each stored stream, read back from the event data, reassembles to
	// the stored message content.
	n := 0
	for _, e := range l.Events() {
		if e.Type != surface.TypeAssistantMessage {
			continue
		}
		var d surface.StepMessage
		require.NoError(t, json.Unmarshal(e.Data, &d))
		re, err := Reassemble(d.Stream)
		require.NoError(t, err)
		require.Equal(t, d.Message.Content, re.Content)
		require.Equal(t, d.Usage, re.Usage)
		n++
	}
	require.Equal(t, 2, n)
	_, info, err := ReassembleInfo(stored[0])
	require.NoError(t, err)
	require.Equal(t, 429, info.Status)
}
