package host

import (
	"context"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/surface"
)

// sseHarness runs the loop with the real HTTP client against a loopback
// server that speaks server-sent events.
type sseHarness struct {
	*harness
	srv *llmtest.Server
}

func newSSEHarness(t *testing.T, prompt string, mod func(*Config)) *sseHarness {
	srv := llmtest.NewServer(t)
	client, err := llm.NewClient(llm.ClientConfig{BaseURL: srv.URL(), APIKey: "sk-test-secret-key-0123456789"})
	require.NoError(t, err)
	h := newHarness(t, prompt, func(c *Config) {
		c.Model = client
		c.MaxRetryWait = 20 * time.Millisecond
		if mod != nil {
			mod(c)
		}
	})
	return &sseHarness{harness: h, srv: srv}
}

// checkWire rebuilds every dispatched request from the log and compares its
// bytes with the bodies the server received.
func (h *sseHarness) checkWire() {
	reqs, order, err := Requests(h.s.Log().Events(), h.s.ID())
	require.NoError(h.t, err)
	got := h.srv.Requests()
	require.Len(h.t, got, len(order))
	for _, e := range h.s.Log().Events() {
		require.NotContains(h.t, string(surface.AppendEvent(nil, &e)), "sk-test-secret", "no secret enters the log")
	}
	for i, seq := range order {
		body, err := llm.EncodeRequest(reqs[seq])
		require.NoError(h.t, err)
		require.Equal(h.t, string(got[i].Body), string(body), "request %d (settled at seq %d)", i, seq)
	}
}

func TestSSE_StreamedToolLoop(t *testing.T) {
	h := newSSEHarness(t, "be brief", func(c *Config) { c.Tools = []Tool{echoTool} })
	h.srv.Push(
		llmtest.Stream(llmtest.Role(), llmtest.Reasoning("need "), llmtest.Reasoning("a tool"),
			llmtest.ToolCall(0, "call_1", "echo", `{"te`), llmtest.ToolCall(0, "", "", `xt":"hi"}`),
			llmtest.Finish("tool_calls"), llmtest.Usage(50, 7, 0, 3)),
		llmtest.TextReply(80, 4, "echoed ", "it"),
	)
	res := h.turn("use the tool")
	require.Equal(t, surface.EndCompleted, res.Reason.Kind)
	require.Equal(t, 2, res.Steps)
	calls := h.events(surface.TypeToolCall)
	require.Len(t, calls, 1)
	require.Contains(t, string(calls[0].Data), `"arguments":"{\"text\":\"hi\"}"`)
	last := h.s.Log().Messages()
	require.Equal(t, "echoed it", surface.TextOf(last[len(last)-1].Content))
	am := h.events(surface.TypeAssistantMessage)
	require.Contains(t, string(am[0].Data), `"usage":{"inputTokens":50,"outputTokens":7,"reasoningTokens":3}`)
	h.checkWire()
}

func TestSSE_MidStreamDisconnectEndsTurnWithError(t *testing.T) {
	h := newSSEHarness(t, "p", func(c *Config) { c.MaxRetries = -1 })
	h.srv.Push(llmtest.Drop(llmtest.Role(), llmtest.Text("partial")))
	res := h.turn("hi")
	require.Equal(t, surface.EndError, res.Reason.Kind)
	require.Equal(t, llm.CodeBrokenStream, res.Reason.Error.Code)
	require.Len(t, h.events(surface.TypeAssistantAttempt), 1)
	require.Empty(t, h.events(surface.TypeAssistantMessage))
	// The session goes on: the next turn works.
	h.srv.Push(llmtest.TextReply(10, 2, "back"))
	require.Equal(t, surface.EndCompleted, h.turn("again").Reason.Kind)
	h.checkWire()
}

func TestSSE_RateLimitRetriesAfterWait(t *testing.T) {
	cases := []struct {
		name, retryAfter string
		maxWait          time.Duration
		waitMs           string
		note             string // "": the record says nothing of a cap
	}{
		{"asked longer than the cap", "1", 20 * time.Millisecond, `"waitMs":20`,
			"the provider asked to wait 1s (Retry-After); the host waits its cap of 20ms (retry.maxWait)"},
		{"asked within the cap", "0", 5 * time.Second, `"waitMs":500`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newSSEHarness(t, "p", func(cfg *Config) { cfg.MaxRetryWait = c.maxWait })
			h.srv.Push(llmtest.RateLimited(c.retryAfter), llmtest.TextReply(10, 2, "ok"))
			res := h.turn("hi")
			require.Equal(t, surface.EndCompleted, res.Reason.Kind)
			retries := h.events(surface.TypeLLMRetry)
			require.Len(t, retries, 1)
			data := string(retries[0].Data)
			require.Contains(t, data, `"code":"RATE_LIMIT"`)
			require.Contains(t, data, c.waitMs)
			if c.note == "" {
				require.NotContains(t, data, "retryAfterMs")
				require.NotContains(t, data, "note")
			} else {
				require.Contains(t, data, `"retryAfterMs":1000`)
				require.Contains(t, data, `"note":"`+c.note+`"`)
			}
			require.Len(t, h.events(surface.TypeAssistantAttempt), 1)
			h.checkWire()
		})
	}
}

func TestSSE_ContextOverflowCompactsAndRetries(t *testing.T) {
	comp := &checkpointCompactor{when: func(v *View, req CompactionRequest) bool { return req.Reason == CompactOverflow }}
	h := newSSEHarness(t, "p", func(c *Config) { c.Compactors = []CompactionProvider{comp} })
	h.srv.Push(llmtest.TextReply(10, 2, "one"), llmtest.ContextOverflow(), llmtest.TextReply(10, 2, "two"))
	h.turn("first")
	res := h.turn("second")
	require.Equal(t, surface.EndCompleted, res.Reason.Kind)
	require.Len(t, h.events(surface.TypeCompactionEnd), 1)
	h.checkWire()
}

func TestSSE_CancelMidStreamRecordsDeliveredPrefix(t *testing.T) {
	h := newSSEHarness(t, "p", nil)
	reply := llmtest.Stream(llmtest.Role(), llmtest.Text("Hello"), llmtest.Text(" world"), llmtest.Finish("stop"))
	reply.Gap = 200 * time.Millisecond
	h.srv.Push(reply)
	ctx, cancel := context.WithCancel(context.Background())
	h.a.cfg.OnDelta = func(d llm.Delta) {
		if d.Text == "Hello" {
			cancel()
		}
	}
	res, err := h.a.Run(ctx, h.a.UserMessage("hi"))
	require.NoError(t, err)
	require.Equal(t, surface.EndAborted, res.Reason.Kind)
	am := h.events(surface.TypeAssistantMessage)
	require.Len(t, am, 1)
	require.Contains(t, string(am[0].Data), `"interrupted":true`)
	require.Contains(t, string(am[0].Data), `"text":"Hello"`)
	// The session resumes: the next turn runs normally.
	h.srv.Push(llmtest.TextReply(10, 2, "again"))
	require.Equal(t, surface.EndCompleted, h.turn("continue").Reason.Kind)
}

func TestSSE_RecordedSessionReconstructsByteForByte(t *testing.T) {
	armed := false
	comp := &checkpointCompactor{when: func(*View, CompactionRequest) bool { fire := armed; armed = false; return fire }}
	h := newSSEHarness(t, "v1", func(c *Config) { c.Tools = []Tool{echoTool}; c.Compactors = []CompactionProvider{comp} })
	h.srv.Push(
		llmtest.Stream(llmtest.Role(), llmtest.ToolCall(0, "c1", "echo", `{"a":1}`), llmtest.Finish("tool_calls"), llmtest.Usage(30, 5, 0, 0)),
		llmtest.TextReply(40, 3, "done one"),
		llmtest.TextReply(50, 3, "done two"),
		llmtest.Stream(llmtest.Role(), llmtest.ToolCall(0, "c2", "echo", `{"b":2}`), llmtest.Finish("tool_calls"), llmtest.Usage(30, 5, 20, 0)),
		llmtest.TextReply(60, 3, "done three"),
	)
	h.turn("one")
	h.prompt.text = "v2"
	h.turn("two")
	armed = true
	h.turn("three")
	require.Len(t, h.events(surface.TypeCompactionEnd), 1)
	require.Len(t, h.events(surface.TypeSystemMessage), 2)
	require.Equal(t, []string{"initial", "series", "series"}, h.headers())
	h.checkWire()
}

// TestSSE_FirstTokenIsLogged streams a reply whose content the server holds
// back: the settlement's stream record has the dispatch instant and a time
// to first token of at least the delay, and the rebuilt request is still
// the body the server received.
func TestSSE_FirstTokenIsLogged(t *testing.T) {
	const gap = 120 * time.Millisecond
	h := newSSEHarness(t, "p", nil)
	h.srv.Push(llmtest.Reply{Chunks: []string{llmtest.Role(), llmtest.Text("late"), llmtest.Finish("stop"), llmtest.Usage(9, 1, 0, 0)}, Gap: gap})
	before := time.Now().UnixMilli()
	res := h.turn("hi")
	require.Equal(t, surface.EndCompleted, res.Reason.Kind)
	am := h.events(surface.TypeAssistantMessage)
	require.Len(t, am, 1)
	var d surface.StepMessage
	require.NoError(t, json.Unmarshal(am[0].Data, &d))
	tm := llm.TimingOf(d.Stream)
	require.GreaterOrEqual(t, tm.First, 2*gap.Milliseconds(), "the role chunk and the text each waited a gap")
	require.GreaterOrEqual(t, tm.Sent, before, "sent is the dispatch instant (the wall clock, not the log's)")
	require.LessOrEqual(t, tm.Sent+tm.First, time.Now().UnixMilli())
	h.checkWire()
}
