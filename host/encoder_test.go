package host

import (
	"regexp"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/surface"
)

// cutReply is, in api's streaming protocol, a reply of reasoning, blank
// text and a tool call cut by the output limit inside its arguments.
func cutReply(api llm.API) llmtest.Reply {
	switch api {
	case llm.APIAnthropic:
		return llmtest.AnthropicStream(llmtest.MessageStart(10, 0, 0),
			llmtest.ThinkingStart(0), llmtest.ThinkingDelta(0, "think"), llmtest.SignatureDelta(0, "sig-1"), llmtest.BlockStop(0),
			llmtest.TextStart(1), llmtest.TextDelta(1, " \n"), llmtest.BlockStop(1),
			llmtest.ToolUseStart(2, "call-1", "echo"), llmtest.InputJSONDelta(2, `{"a":`),
			llmtest.MessageDelta("max_tokens", 5), llmtest.MessageStop())
	case llm.APIGemini:
		return llmtest.GeminiStream(
			llmtest.GeminiResponse("r1", "", "", llmtest.GeminiThoughtPart("think")),
			llmtest.GeminiResponse("r1", "", "", llmtest.GeminiTextPart(" \n")),
			llmtest.GeminiResponse("r1", "MAX_TOKENS", llmtest.GeminiUsage(10, 0, 5, 0), llmtest.GeminiCallPart("echo", `{}`, "")))
	}
	return llmtest.Stream(llmtest.Role(), llmtest.Reasoning("think"), llmtest.Text(" \n"),
		llmtest.ToolCall(0, "call-1", "echo", `{"a":`), llmtest.Finish("length"), llmtest.Usage(10, 5, 0, 0))
}

// okReply is a plain text reply in api's streaming protocol.
func okReply(api llm.API) llmtest.Reply {
	switch api {
	case llm.APIAnthropic:
		return llmtest.AnthropicText(10, 1, "ok")
	case llm.APIGemini:
		return llmtest.GeminiText(10, 1, "ok")
	}
	return llmtest.TextReply(10, 1, "ok")
}

// encV1 matches the "enc" member of a stream record.
var encV1 = regexp.MustCompile(`,"enc":[0-9]+`)

// asVersion1 returns events as a build of encoder version 1 logged them:
// the stream records of the settlements without their "enc" member.
func asVersion1(t *testing.T, events []surface.Event) []surface.Event {
	out := make([]surface.Event, len(events))
	for i, e := range events {
		if settles(e.Type) {
			var d map[string]jsontext.Value
			require.NoError(t, json.Unmarshal(e.Data, &d))
			d["stream"] = jsontext.Value(encV1.ReplaceAll(d["stream"], nil))
			b, err := json.Marshal(d, json.Deterministic(true))
			require.NoError(t, err)
			e.Data = b
		}
		out[i] = e
	}
	return out
}

// TestRequestAtOldEncoder: request --at prints the body an attempt was
// sent with, also for an attempt logged by encoder version 1 (a stream
// record with no "enc" member), whose rules differ: the reply before it
// was cut by the output limit inside a tool call after blank text and
// reasoning, on a route with a reasoning effort. Version 2 drops the
// unanswered call and the blank text, sends thinking and Gemini's
// thought part; the bodies version 1 sent (wantV1, written out from its
// rules: every call sent, only empty text left out, no thinking setting,
// no Gemini reasoning) are what the rebuild of the old log gives.
func TestRequestAtOldEncoder(t *testing.T) {
	const sys = `"system":[{"type":"text","text":"v1","cache_control":{"type":"ephemeral"}}]`
	const tool = `{"name":"echo","description":"echo the arguments","input_schema":{"type":"object","properties":{}}}`
	wantV1 := map[llm.API]string{
		llm.APIOpenAI: `{"model":"m1","messages":[{"role":"system","content":"v1"},{"role":"user","content":"one"},` +
			`{"role":"assistant","content":" \n","tool_calls":[{"id":"call-1","type":"function","function":{"name":"echo","arguments":"{\"a\":"}}]},` +
			`{"role":"user","content":"two"}],` +
			`"tools":[{"type":"function","function":{"name":"echo","description":"echo the arguments","parameters":{"type":"object","properties":{}}}}],` +
			`"max_tokens":4000,"reasoning_effort":"low","stream":true,"stream_options":{"include_usage":true}}`,
		llm.APIAnthropic: `{"model":"m1","max_tokens":4000,` + sys + `,"messages":[{"role":"user","content":[{"type":"text","text":"one"}]},` +
			`{"role":"assistant","content":[{"type":"thinking","thinking":"think","signature":"sig-1"},{"type":"text","text":" \n"},{"type":"tool_use","id":"call-1","name":"echo","input":{}}]},` +
			`{"role":"user","content":[{"type":"text","text":"two","cache_control":{"type":"ephemeral"}}]}],` +
			`"tools":[` + tool + `],"stream":true}`,
		llm.APIGemini: `{"systemInstruction":{"parts":[{"text":"v1"}]},"contents":[{"role":"user","parts":[{"text":"one"}]},` +
			`{"role":"model","parts":[{"text":" \n"},{"functionCall":{"name":"echo","args":{}}}]},` +
			`{"role":"user","parts":[{"text":"two"}]}],` +
			`"tools":[{"functionDeclarations":[{"name":"echo","description":"echo the arguments","parametersJsonSchema":{"type":"object","properties":{}}}]}],` +
			`"generationConfig":{"maxOutputTokens":4000}}`,
	}
	for _, api := range llm.APIs {
		t.Run(string(api), func(t *testing.T) {
			srv := llmtest.NewServerFor(t, string(api))
			client, err := llm.NewClient(llm.ClientConfig{API: api, BaseURL: srv.URL()})
			require.NoError(t, err)
			h := newHarness(t, "v1", func(c *Config) {
				c.Model = client
				c.Route.ReasoningEffort = "low"
				c.Route.MaxTokens = 4000
				c.Route.ContextWindow = 100000
				c.Tools = []Tool{echoTool}
			})
			srv.Push(cutReply(api), okReply(api))
			require.Equal(t, surface.EndMaxTokens, h.turn("one").Reason.Kind)
			require.Equal(t, surface.EndCompleted, h.turn("two").Reason.Kind)
			sent := srv.Requests()
			require.Len(t, sent, 2)

			events := h.s.Log().Events()
			_, order, err := Requests(events, h.s.ID())
			require.NoError(t, err)
			require.Len(t, order, 2)
			at := order[1]
			now, err := RequestAt(events, at, h.s.ID())
			require.NoError(t, err)
			require.Equal(t, llm.EncoderVersion, now.Encoder)
			body, err := now.Body()
			require.NoError(t, err)
			require.Equal(t, string(sent[1].Body), string(body), "a version 2 attempt rebuilds to the body sent")
			require.NotContains(t, string(body), `"call-1"`, "version 2 sends no unanswered call")
			if api == llm.APIAnthropic {
				require.NotContains(t, string(body), `" \n"`, "version 2 sends Anthropic no blank text")
			}

			old := asVersion1(t, events)
			require.NotContains(t, string(old[at].Data), `"enc"`)
			then, err := RequestAt(old, at, h.s.ID())
			require.NoError(t, err)
			require.Equal(t, 1, then.Encoder)
			oldBody, err := then.Body()
			require.NoError(t, err)
			require.Equal(t, wantV1[api], string(oldBody), "a version 1 attempt rebuilds to the body version 1 sent")
			reqs, _, err := Requests(old, h.s.ID())
			require.NoError(t, err)
			again, err := reqs[at].Body()
			require.NoError(t, err)
			require.Equal(t, oldBody, again, "Requests and RequestAt agree")
		})
	}
}
