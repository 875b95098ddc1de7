package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/surface"
)

// scriptedReply makes reply n (unique ids) of one kind for an API.
type scriptedReply func(n int) llmtest.Reply

// replyKinds are, per API, the replies a history must survive: plain and
// blank text, an output-limit stop mid tool call, complete tool calls, a
// content-filter stop, a blocked prompt, and every block type the API
// returns.
func replyKinds(api API) map[string]scriptedReply {
	switch api {
	case APIAnthropic:
		start := func() string { return llmtest.MessageStart(10, 0, 0) }
		return map[string]scriptedReply{
			"text":  func(int) llmtest.Reply { return llmtest.AnthropicText(10, 2, "Hi", " there") },
			"blank": func(int) llmtest.Reply { return llmtest.AnthropicText(10, 1, " \n ") },
			"cut mid call": func(n int) llmtest.Reply {
				return llmtest.AnthropicStream(start(), llmtest.TextStart(0), llmtest.TextDelta(0, "Reading."), llmtest.BlockStop(0),
					llmtest.ToolUseStart(1, fmt.Sprintf("toolu_cut%d", n), "read"), llmtest.InputJSONDelta(1, `{"pa`),
					llmtest.MessageDelta("max_tokens", 5), llmtest.MessageStop())
			},
			"calls with every block": func(n int) llmtest.Reply {
				return llmtest.AnthropicStream(start(),
					llmtest.ThinkingStart(0), llmtest.ThinkingDelta(0, "plan"), llmtest.SignatureDelta(0, "sig-a"), llmtest.BlockStop(0),
					llmtest.RedactedThinkingStart(1, "ZW5j"), llmtest.BlockStop(1),
					llmtest.ThinkingStart(2), llmtest.SignatureDelta(2, "sig-b"), llmtest.BlockStop(2),
					llmtest.TextStart(3), llmtest.TextDelta(3, "  "), llmtest.BlockStop(3),
					llmtest.ToolUseStart(4, fmt.Sprintf("toolu_a%d", n), "read"), llmtest.InputJSONDelta(4, `{"path":"a"}`), llmtest.BlockStop(4),
					llmtest.ToolUseStart(5, fmt.Sprintf("toolu_b%d", n), "read"), llmtest.BlockStop(5),
					llmtest.MessageDelta("tool_use", 9), llmtest.MessageStop())
			},
			// A reply that calls a tool with no thinking before it (a
			// route that turned thinking on mid loop, reasoning another
			// API signed): the next request continues the loop.
			"calls without thinking": func(n int) llmtest.Reply {
				return llmtest.AnthropicStream(start(),
					llmtest.ToolUseStart(0, fmt.Sprintf("toolu_n%d", n), "read"), llmtest.BlockStop(0),
					llmtest.MessageDelta("tool_use", 3), llmtest.MessageStop())
			},
			"refusal": func(int) llmtest.Reply {
				return llmtest.AnthropicStream(start(), llmtest.MessageDelta("refusal", 0), llmtest.MessageStop())
			},
		}
	case APIGemini:
		resp := func(n int, finish string, parts ...string) string {
			return llmtest.GeminiResponse(fmt.Sprintf("r%d", n), finish, llmtest.GeminiUsage(10, 0, 2, 0), parts...)
		}
		return map[string]scriptedReply{
			"text":  func(n int) llmtest.Reply { return llmtest.GeminiStream(resp(n, "STOP", llmtest.GeminiTextPart("Hi"))) },
			"blank": func(n int) llmtest.Reply { return llmtest.GeminiStream(resp(n, "STOP", llmtest.GeminiTextPart(" "))) },
			"cut mid call": func(n int) llmtest.Reply {
				return llmtest.GeminiStream(resp(n, "MAX_TOKENS", llmtest.GeminiTextPart("Reading."), llmtest.GeminiCallPart("read", `{}`, "")))
			},
			"calls with every part": func(n int) llmtest.Reply {
				return llmtest.GeminiStream(
					resp(n, "", llmtest.GeminiThoughtPart("plan"), `{"text":"","thoughtSignature":"c2ln"}`,
						`{"executableCode":{"language":"PYTHON","code":"print(1)"}}`, `{"futurePart":{}}`),
					resp(n, "STOP", `{"functionCall":{"id":"fc`+fmt.Sprint(n)+`","name":"read","args":{}},"thoughtSignature":"c2ln"}`,
						llmtest.GeminiCallPart("echo", `{"a":1}`, "")))
			},
			"safety": func(n int) llmtest.Reply { return llmtest.GeminiStream(resp(n, "SAFETY")) },
			"blocked": func(int) llmtest.Reply {
				return llmtest.GeminiStream(llmtest.GeminiBlocked("SAFETY", llmtest.GeminiUsage(10, 0, 0, 0)))
			},
		}
	}
	return map[string]scriptedReply{
		"text":  func(int) llmtest.Reply { return llmtest.TextReply(10, 2, "Hi") },
		"blank": func(int) llmtest.Reply { return llmtest.TextReply(10, 1, " ") },
		"cut mid call": func(n int) llmtest.Reply {
			return llmtest.Stream(llmtest.Role(), llmtest.Text("Reading."), llmtest.ToolCall(0, fmt.Sprintf("call_cut%d", n), "read", `{"pa`), llmtest.Finish("length"))
		},
		"calls": func(n int) llmtest.Reply {
			return llmtest.Stream(llmtest.Role(), llmtest.Reasoning("plan"),
				`{"choices":[{"index":0,"delta":{"content":[{"type":"refusal","refusal":"x"},{"type":"text","text":"ok"}]}}]}`,
				llmtest.ToolCall(0, fmt.Sprintf("call_a%d", n), "read", `{}`), llmtest.ToolCall(1, fmt.Sprintf("call_b%d", n), "read", `{}`),
				llmtest.Finish("tool_calls"))
		},
		"filtered": func(int) llmtest.Reply { return llmtest.Stream(llmtest.Role(), llmtest.Finish("content_filter")) },
	}
}

var validators = map[API]func([]byte) error{
	APIAnthropic: llmtest.ValidateAnthropic,
	APIGemini:    llmtest.ValidateGemini,
	APIOpenAI:    llmtest.ValidateOpenAI,
}

// TestAnyRepliesLeaveASendableHistory is the property: for every sequence
// of three scripted replies, each settled the way the loop settles it (the
// reply's content appended; its calls answered when it finished calling
// tools, else a new user message), every request the server receives and
// the request after the last reply pass the API's validator.
func TestAnyRepliesLeaveASendableHistory(t *testing.T) {
	for _, api := range []API{APIAnthropic, APIGemini, APIOpenAI} {
		kinds := replyKinds(api)
		var names []string
		for k := range kinds {
			names = append(names, k)
		}
		for _, a := range names {
			for _, b := range names {
				for _, c := range names {
					seq := []string{a, b, c}
					t.Run(fmt.Sprintf("%s/%s|%s|%s", api, a, b, c), func(t *testing.T) {
						checkSequence(t, api, kinds, seq)
					})
				}
			}
		}
	}
}

func checkSequence(t *testing.T, api API, kinds map[string]scriptedReply, seq []string) {
	cl, srv := newAPIClient(t, api, nil)
	validate := validators[api]
	// Thinking on (a 4096 budget where the API takes one), so the rules
	// that hold only with thinking are checked too.
	cfg := surface.CallConfig{Provider: "p", Model: "test-model", MaxTokens: i64(8000), ReasoningEffort: "low"}
	msgs := []*surface.Message{msg("s", surface.RoleSystem, surface.Text("sys")), user("u0", "hello")}
	for n, kind := range seq {
		srv.Push(kinds[kind](n))
		req := &Request{Config: cfg, Messages: msgs}
		res, _ := cl.Stream(context.Background(), req, nil)
		require.NotNil(t, res)
		if len(res.Content) > 0 {
			msgs = append(msgs, msg(fmt.Sprintf("a%d", n), surface.RoleAssistant, res.Content...))
		}
		if calls := res.ToolCalls(); res.FinishReason == FinishToolCalls && len(calls) > 0 {
			var results []surface.Block
			for _, call := range calls {
				results = append(results, surface.ToolResult(call.ID, false, surface.Text("ok")))
			}
			msgs = append(msgs, msg(fmt.Sprintf("r%d", n), surface.RoleUser, results...))
		} else {
			msgs = append(msgs, user(fmt.Sprintf("u%d", n+1), "next"))
		}
	}
	var prev []string
	for i, r := range srv.Requests() {
		require.NoError(t, validate(r.Body), "request %d: %s", i, r.Body)
		// What the model said goes back unchanged in every later request
		// (Anthropic refuses a tool loop whose thinking blocks changed).
		said := modelTurns(t, api, r.Body)
		require.GreaterOrEqual(t, len(said), len(prev), "request %d", i)
		if len(prev) > 0 {
			require.Equal(t, prev, said[:len(prev)], "request %d", i)
		}
		prev = said
	}
	body, err := Encode(api, &Request{Config: cfg, Messages: msgs})
	require.NoError(t, err)
	require.NoError(t, validate(body), "%s", body)
}

// modelTurns returns the assistant (model) messages of a body, compacted,
// without Anthropic's cache markers (which move to the newest message).
func modelTurns(t *testing.T, api API, body []byte) []string {
	var v struct {
		Messages []json.RawMessage `json:"messages"`
		Contents []json.RawMessage `json:"contents"`
	}
	require.NoError(t, json.Unmarshal(body, &v))
	var out []string
	for _, m := range append(v.Messages, v.Contents...) {
		var r struct{ Role string }
		require.NoError(t, json.Unmarshal(m, &r))
		if r.Role == "assistant" || r.Role == "model" {
			out = append(out, strings.ReplaceAll(string(m), `,"cache_control":{"type":"ephemeral"}`, ""))
		}
	}
	return out
}
