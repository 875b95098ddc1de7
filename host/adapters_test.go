package host

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/surface"
)

// scriptedReply is one model reply independent of the wire protocol; each
// adapter's loopback server sends it in its API's streaming format.
type scriptedReply struct {
	id    string   // the reply's id (Gemini's responseId); call n is id-n
	text  []string // text pieces
	calls []string // tool calls to echo, by their arguments
	// input (uncached), cached input and output tokens.
	input, cached, output int
}

func (r scriptedReply) callID(n int) string { return fmt.Sprintf("%s-%d", r.id, n) }

// render is the reply in api's streaming protocol: text in pieces, each
// call's arguments split in two fragments where the API streams them so,
// and usage in the API's own field names.
func (r scriptedReply) render(api llm.API) llmtest.Reply {
	split := func(s string) (string, string) { return s[:len(s)/2], s[len(s)/2:] }
	switch api {
	case llm.APIAnthropic:
		ev := []string{llmtest.MessageStart(r.input, r.cached, 0)}
		idx := 0
		if len(r.text) > 0 {
			ev = append(ev, llmtest.TextStart(idx))
			for _, p := range r.text {
				ev = append(ev, llmtest.TextDelta(idx, p))
			}
			ev = append(ev, llmtest.BlockStop(idx), llmtest.Ping())
			idx++
		}
		for n, args := range r.calls {
			a, b := split(args)
			ev = append(ev, llmtest.ToolUseStart(idx, r.callID(n), "echo"), llmtest.InputJSONDelta(idx, a), llmtest.InputJSONDelta(idx, b), llmtest.BlockStop(idx))
			idx++
		}
		stop := "end_turn"
		if len(r.calls) > 0 {
			stop = "tool_use"
		}
		return llmtest.AnthropicStream(append(ev, llmtest.MessageDelta(stop, r.output), llmtest.MessageStop())...)
	case llm.APIGemini:
		var cs []string
		for _, p := range r.text {
			cs = append(cs, llmtest.GeminiResponse(r.id, "", "", llmtest.GeminiTextPart(p)))
		}
		for _, args := range r.calls {
			cs = append(cs, llmtest.GeminiResponse(r.id, "", "", llmtest.GeminiCallPart("echo", args, "")))
		}
		usage := llmtest.GeminiUsage(r.input+r.cached, r.cached, r.output, 0)
		return llmtest.GeminiStream(append(cs, llmtest.GeminiResponse(r.id, "STOP", usage))...)
	}
	cs := []string{llmtest.Role()}
	for _, p := range r.text {
		cs = append(cs, llmtest.Text(p))
	}
	for n, args := range r.calls {
		a, b := split(args)
		cs = append(cs, llmtest.ToolCall(n, r.callID(n), "echo", a), llmtest.ToolCall(n, "", "", b))
	}
	finish := "stop"
	if len(r.calls) > 0 {
		finish = "tool_calls"
	}
	return llmtest.Stream(append(cs, llmtest.Finish(finish), llmtest.Usage(r.input+r.cached, r.output, r.cached, 0))...)
}

// idCompactor is checkpointCompactor with the checkpoint's source naming
// its compaction, as compaction-basic's does.
type idCompactor struct{ checkpointCompactor }

func (c *idCompactor) Compact(ctx context.Context, v *View, req CompactionRequest) ([]surface.Proposal, error) {
	ps, err := c.checkpointCompactor.Compact(ctx, v, req)
	for i := range ps {
		if ps[i].Type != surface.TypeUserMessage {
			continue
		}
		var m surface.Message
		if err := json.Unmarshal(ps[i].Data, &m); err != nil {
			return nil, err
		}
		var start struct {
			ID string `json:"compactionId"`
		}
		if err := json.Unmarshal(ps[0].Data, &start); err != nil {
			return nil, err
		}
		m.Source.Unknown = jsontext.Value(`{"compactionId":"` + start.ID + `"}`)
		if ps[i].Data, err = surface.Data(m); err != nil {
			return nil, err
		}
	}
	return ps, err
}

// adapterSession runs one scripted multi-turn session (a tool round with
// two parallel calls, a prompt change, a compaction, an overflow recovered
// by compaction) through api's client and loopback server, checks that
// every request rebuilt from the log is byte for byte what the server
// received, and returns the log.
func adapterSession(t *testing.T, api llm.API) *surface.Log {
	srv := llmtest.NewServerFor(t, string(api))
	client, err := llm.NewClient(llm.ClientConfig{API: api, BaseURL: srv.URL(), APIKey: "sk-test-secret-key-0123456789"})
	require.NoError(t, err)
	armed := false
	comp := &idCompactor{checkpointCompactor{when: func(_ *View, req CompactionRequest) bool {
		fire := armed || req.Reason == CompactOverflow
		armed = false
		return fire
	}}}
	h := newHarness(t, "v1", func(c *Config) {
		c.Model = client
		c.Route.Provider = "provider-" + string(api)
		c.MaxRetryWait = 20 * time.Millisecond
		c.Tools = []Tool{echoTool}
		c.Compactors = []CompactionProvider{comp}
	})
	replies := []scriptedReply{
		{id: "r1", text: []string{"Calling ", "twice."}, calls: []string{`{"a":1}`, `{"b":"two"}`}, input: 30, output: 5},
		{id: "r2", text: []string{"done ", "one"}, input: 12, cached: 30, output: 3},
		{id: "r3", text: []string{"done two"}, input: 20, cached: 40, output: 3},
		{id: "r4", calls: []string{`{"c":3}`}, input: 25, cached: 10, output: 4},
		{id: "r5", text: []string{"done ", "three"}, input: 8, cached: 35, output: 3},
		{id: "r6", text: []string{"after ", "overflow"}, input: 9, cached: 0, output: 2},
	}
	for _, r := range replies[:5] {
		srv.Push(r.render(api))
	}
	overflow := map[llm.API]llmtest.Reply{
		llm.APIOpenAI:    llmtest.ContextOverflow(),
		llm.APIAnthropic: llmtest.AnthropicError(400, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"),
		llm.APIGemini: llmtest.GeminiError(400, "INVALID_ARGUMENT",
			"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", ""),
	}[api]
	srv.Push(overflow, replies[5].render(api))

	require.Equal(t, surface.EndCompleted, h.turn("one").Reason.Kind)
	h.prompt.text = "v2"
	require.Equal(t, surface.EndCompleted, h.turn("two").Reason.Kind)
	armed = true
	require.Equal(t, surface.EndCompleted, h.turn("three").Reason.Kind)
	require.Equal(t, surface.EndCompleted, h.turn("four").Reason.Kind)
	require.Len(t, h.events(surface.TypeCompactionEnd), 2, "one compaction asked for, one for the overflow")
	require.Equal(t, 0, srv.Pending())

	// Every request rebuilt from the log is the body the server received.
	events := h.s.Log().Events()
	reqs, order, err := Requests(events, h.s.ID())
	require.NoError(t, err)
	got := srv.Requests()
	require.Len(t, got, len(order))
	for i, seq := range order {
		require.Equal(t, api, cmpAPI(reqs[seq].API), "request %d names its API", i)
		body, err := reqs[seq].Body()
		require.NoError(t, err)
		require.Equal(t, string(got[i].Body), string(body), "request %d (settled at seq %d)", i, seq)
		at, err := RequestAt(events, seq, h.s.ID())
		require.NoError(t, err)
		again, err := at.Body()
		require.NoError(t, err)
		require.Equal(t, body, again)
	}
	for _, e := range events {
		require.NotContains(t, string(surface.AppendEvent(nil, &e)), "sk-test-secret", "no secret enters the log")
	}
	if api == llm.APIAnthropic {
		// Breakpoints: the system prompt, the last message, and once a
		// compaction committed, the checkpoint (one breakpoint when it is
		// the last message, as after the overflow).
		const cp = `"text":"<compacted-summary>summary</compacted-summary>","cache_control":{"type":"ephemeral"}}`
		var marks []int
		for _, g := range got {
			b := string(g.Body)
			require.Contains(t, b, `"system":[{"type":"text","text":"v`)
			require.True(t, strings.Contains(b, `"cache_control":{"type":"ephemeral"}}]}],"tools"`), "the last message is a breakpoint: %s", b)
			n := strings.Count(b, `"cache_control"`)
			if strings.Contains(b, "compacted-summary") {
				require.Contains(t, b, cp)
			}
			marks = append(marks, n)
		}
		require.Equal(t, []int{2, 2, 2, 3, 3, 3, 2}, marks)
	}
	return h.s.Log()
}

func cmpAPI(a llm.API) llm.API {
	if a == "" {
		return llm.APIOpenAI
	}
	return a
}

// TestAdapters_SameConversationSameSurface runs one scripted conversation
// through each adapter: the surface (messages, usage buckets, finish) is
// the same, only the recorded wire bodies and provider names differ.
func TestAdapters_SameConversationSameSurface(t *testing.T) {
	type outcome struct {
		Messages []*surface.Message
		Usage    []*surface.Usage
	}
	surfaces := map[llm.API]outcome{}
	for _, api := range llm.APIs {
		t.Run(string(api), func(t *testing.T) {
			l := adapterSession(t, api)
			var o outcome
			for _, m := range l.Messages() {
				m.Source.Provider = ""
				o.Messages = append(o.Messages, m)
			}
			for _, e := range l.Events() {
				if e.Type != surface.TypeAssistantMessage {
					continue
				}
				var sm surface.StepMessage
				require.NoError(t, json.Unmarshal(e.Data, &sm))
				require.Equal(t, "provider-"+string(api), sm.Message.Source.Provider)
				o.Usage = append(o.Usage, sm.Usage)
			}
			surfaces[api] = o
		})
	}
	base := surfaces[llm.APIOpenAI]
	require.NotEmpty(t, base.Messages)
	require.Equal(t, &surface.Usage{Input: 12, CacheRead: 30, Output: 3}, base.Usage[1])
	for _, api := range []llm.API{llm.APIAnthropic, llm.APIGemini} {
		require.Equal(t, base, surfaces[api], "%s gives the surface the openai adapter gives", api)
	}
}
