package llm

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/surface"
)

func newAPIClient(t *testing.T, api API, mod func(*ClientConfig)) (*Client, *llmtest.Server) {
	t.Helper()
	srv := llmtest.NewServerFor(t, string(api))
	c := newTestClient(t, srv, func(cfg *ClientConfig) {
		cfg.API = api
		if mod != nil {
			mod(cfg)
		}
	})
	return c, srv
}

// streamCase is one streamed reply and what the client must make of it.
type streamCase struct {
	name    string
	reply   llmtest.Reply
	content []surface.Block
	usage   *surface.Usage
	finish  FinishReason
	code    string // error code, "" for success
	deltas  []Delta
}

func runStreamCases(t *testing.T, api API, cases []streamCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, srv := newAPIClient(t, api, nil)
			srv.Push(tc.reply)
			on, deltas := collect()
			req := simpleRequest("p")
			res, err := c.Stream(context.Background(), req, on)
			if tc.code == "" {
				require.NoError(t, err)
			} else {
				var e *Error
				require.ErrorAs(t, err, &e)
				require.Equal(t, tc.code, e.Code, "%v", err)
			}
			require.Equal(t, tc.content, res.Content)
			require.Equal(t, tc.usage, res.Usage)
			require.Equal(t, tc.finish, res.FinishReason)
			if tc.deltas != nil {
				require.Equal(t, tc.deltas, *deltas)
			}
			requireReassembles(t, res)
			_, info, err := ReassembleInfo(res.Stream)
			require.NoError(t, err)
			require.Equal(t, api, info.API)
			require.True(t, strings.HasPrefix(string(res.Stream), `{"v":1,"api":"`+string(api)+`"`), "%s", res.Stream)
			if tc.code != "" {
				require.Equal(t, tc.code, info.Code)
			}

			got := srv.Requests()
			require.Len(t, got, 1)
			body, err := Encode(api, req)
			require.NoError(t, err)
			require.Equal(t, string(body), string(got[0].Body), "the server received exactly the encoded body")
			require.Empty(t, got[0].Header.Get("Authorization"), "the key travels in the API's own header")
			switch api {
			case APIAnthropic:
				require.Equal(t, "/v1/messages", got[0].Path)
				require.Equal(t, testKey, got[0].Header.Get("X-Api-Key"))
				require.Equal(t, AnthropicVersion, got[0].Header.Get("Anthropic-Version"))
			case APIGemini:
				require.Equal(t, "/v1beta/models/test-model:streamGenerateContent", got[0].Path)
				require.Equal(t, "alt=sse", got[0].Query)
				require.Equal(t, testKey, got[0].Header.Get("X-Goog-Api-Key"))
			}
			require.NotContains(t, string(res.Stream), testKey)
		})
	}
}

func TestAnthropicStreams(t *testing.T) {
	call := func(id, name, args string) surface.Block { return surface.ToolCall(id, name, args) }
	thinking := surface.Block{Type: surface.BlockReasoning, Text: "let me think", Unknown: jsontext.Value(`{"signature":"sig-abc","signedBy":"anthropic"}`)}
	runStreamCases(t, APIAnthropic, []streamCase{
		{
			name:    "text",
			reply:   llmtest.AnthropicText(25, 4, "Hel", "lo", " world"),
			content: []surface.Block{surface.Text("Hello world")},
			usage:   &surface.Usage{Input: 25, Output: 4},
			finish:  FinishStop,
			deltas:  []Delta{{Kind: DeltaText, Text: "Hel"}, {Kind: DeltaText, Text: "lo"}, {Kind: DeltaText, Text: " world"}},
		},
		{
			name: "thinking, text and two split tool calls",
			reply: llmtest.AnthropicStream(
				llmtest.MessageStart(12, 300, 40),
				llmtest.ThinkingStart(0), llmtest.ThinkingDelta(0, "let me "), llmtest.ThinkingDelta(0, "think"),
				llmtest.SignatureDelta(0, "sig-abc"), llmtest.BlockStop(0),
				llmtest.TextStart(1), llmtest.TextDelta(1, "Checking."), llmtest.BlockStop(1),
				llmtest.ToolUseStart(2, "toolu_01", "read"), llmtest.InputJSONDelta(2, ""), llmtest.InputJSONDelta(2, `{"path":`),
				llmtest.Ping(), llmtest.InputJSONDelta(2, `"a.txt"}`), llmtest.BlockStop(2),
				llmtest.ToolUseStart(3, "toolu_02", "echo"), llmtest.InputJSONDelta(3, `{"text":"hi"}`), llmtest.BlockStop(3),
				llmtest.MessageDelta("tool_use", 57), llmtest.MessageStop(),
			),
			content: []surface.Block{thinking, surface.Text("Checking."), call("toolu_01", "read", `{"path":"a.txt"}`), call("toolu_02", "echo", `{"text":"hi"}`)},
			// input_tokens excludes the cache: the buckets are taken as
			// they are.
			usage:  &surface.Usage{Input: 12, CacheRead: 300, CacheWrite: 40, Output: 57},
			finish: FinishToolCalls,
		},
		{
			name: "redacted, empty signed and unknown blocks are kept whole",
			reply: llmtest.AnthropicStream(
				llmtest.MessageStart(3, 0, 0),
				llmtest.RedactedThinkingStart(0, "ZW5jcnlwdGVk"), llmtest.BlockStop(0),
				llmtest.ThinkingStart(1), llmtest.SignatureDelta(1, "sig-empty"), llmtest.BlockStop(1),
				llmtest.AnthropicEvent("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"future_block","x": [1, 2]}}`),
				llmtest.BlockStop(2),
				llmtest.TextStart(3), llmtest.TextDelta(3, "ok"), llmtest.BlockStop(3),
				llmtest.MessageDelta("end_turn", 9), llmtest.MessageStop(),
			),
			content: []surface.Block{
				{Type: "redacted_thinking", Unknown: jsontext.Value(`{"type":"redacted_thinking","data":"ZW5jcnlwdGVk"}`)},
				{Type: surface.BlockReasoning, Unknown: jsontext.Value(`{"signature":"sig-empty","signedBy":"anthropic"}`)},
				{Type: "future_block", Unknown: jsontext.Value(`{"type":"future_block","x":[1,2]}`)},
				surface.Text("ok"),
			},
			usage:  &surface.Usage{Input: 3, Output: 9},
			finish: FinishStop,
		},
		{
			name:    "max tokens",
			reply:   llmtest.AnthropicStream(llmtest.MessageStart(5, 0, 0), llmtest.TextStart(0), llmtest.TextDelta(0, "cut"), llmtest.BlockStop(0), llmtest.MessageDelta("max_tokens", 1), llmtest.MessageStop()),
			content: []surface.Block{surface.Text("cut")},
			usage:   &surface.Usage{Input: 5, Output: 1},
			finish:  FinishMaxTokens,
		},
		{
			name: "overloaded mid-stream keeps the prefix",
			reply: llmtest.AnthropicStream(llmtest.MessageStart(5, 0, 0), llmtest.TextStart(0), llmtest.TextDelta(0, "par"),
				llmtest.AnthropicStreamError("overloaded_error", "Overloaded")),
			content: []surface.Block{surface.Text("par")},
			usage:   &surface.Usage{Input: 5, Output: 1},
			code:    CodeServer,
		},
		{
			name: "overflow mid-stream",
			reply: llmtest.AnthropicStream(llmtest.MessageStart(5, 0, 0),
				llmtest.AnthropicStreamError("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum")),
			content: []surface.Block{},
			usage:   &surface.Usage{Input: 5, Output: 1},
			code:    CodeContextOverflow,
		},
		{
			name:    "stream ends without message_stop",
			reply:   llmtest.AnthropicStream(llmtest.MessageStart(5, 0, 0), llmtest.TextStart(0), llmtest.TextDelta(0, "hal")),
			content: []surface.Block{surface.Text("hal")},
			usage:   &surface.Usage{Input: 5, Output: 1},
			code:    CodeBrokenStream,
		},
	})
}

func TestGeminiStreams(t *testing.T) {
	sigCall := surface.ToolCall("resp-llmtest-0", "read", `{"path":"a.txt"}`)
	sigCall.Unknown = jsontext.Value(`{"signature":"c2ln","signedBy":"gemini"}`)
	runStreamCases(t, APIGemini, []streamCase{
		{
			name:    "text",
			reply:   llmtest.GeminiText(30, 3, "Hel", "lo", " world"),
			content: []surface.Block{surface.Text("Hello world")},
			usage:   &surface.Usage{Input: 30, Output: 3},
			finish:  FinishStop,
			deltas:  []Delta{{Kind: DeltaText, Text: "Hel"}, {Kind: DeltaText, Text: "lo"}, {Kind: DeltaText, Text: " world"}},
		},
		{
			name: "thoughts, text and calls split across chunks",
			reply: llmtest.GeminiStream(
				llmtest.GeminiParts("", "", llmtest.GeminiThoughtPart("planning")),
				llmtest.GeminiParts("", "", llmtest.GeminiTextPart("Checking.")),
				llmtest.GeminiParts("", "", llmtest.GeminiCallPart("read", `{"path": "a.txt"}`, "c2ln")),
				// promptTokenCount includes the cached tokens;
				// candidatesTokenCount excludes the thoughts.
				llmtest.GeminiParts("STOP", llmtest.GeminiUsage(1200, 1000, 20, 9), llmtest.GeminiCallPart("echo", `{"text":"hi"}`, "")),
			),
			content: []surface.Block{{Type: surface.BlockReasoning, Text: "planning"}, surface.Text("Checking."), sigCall,
				surface.ToolCall("resp-llmtest-1", "echo", `{"text":"hi"}`)},
			usage:  &surface.Usage{Input: 200, CacheRead: 1000, Output: 29, Reasoning: 9},
			finish: FinishToolCalls,
		},
		{
			name:    "safety stop",
			reply:   llmtest.GeminiStream(llmtest.GeminiParts("SAFETY", llmtest.GeminiUsage(10, 0, 0, 0))),
			content: []surface.Block{},
			usage:   &surface.Usage{Input: 10},
			finish:  FinishContentFilter,
		},
		{
			name: "error chunk mid-stream keeps the prefix",
			reply: llmtest.GeminiStream(llmtest.GeminiParts("", "", llmtest.GeminiTextPart("par")),
				llmtest.GeminiStreamError(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")),
			content: []surface.Block{surface.Text("par")},
			code:    CodeServer,
		},
		{
			name: "overflow mid-stream",
			reply: llmtest.GeminiStream(llmtest.GeminiStreamError(400, "INVALID_ARGUMENT",
				"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).")),
			content: []surface.Block{},
			code:    CodeContextOverflow,
		},
		{
			name:    "blocked prompt keeps the reason and the usage",
			reply:   llmtest.GeminiStream(llmtest.GeminiBlocked("PROHIBITED_CONTENT", llmtest.GeminiUsage(12, 0, 0, 0))),
			content: []surface.Block{},
			usage:   &surface.Usage{Input: 12},
			code:    CodePromptBlocked,
		},
		{
			name:    "stream closes before a finish reason",
			reply:   llmtest.GeminiStream(llmtest.GeminiParts("", "", llmtest.GeminiTextPart("hal"))),
			content: []surface.Block{surface.Text("hal")},
			code:    CodeBrokenStream,
		},
	})
}

// TestAdapterStatusErrors maps each API's refusals to the stable codes,
// with the provider's own wording and retry hints.
func TestAdapterStatusErrors(t *testing.T) {
	tests := []struct {
		name  string
		api   API
		reply llmtest.Reply
		code  string
		retry time.Duration
	}{
		{"anthropic rate limit", APIAnthropic, func() llmtest.Reply {
			r := llmtest.AnthropicError(http.StatusTooManyRequests, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")
			r.Header.Set("Retry-After", "7")
			return r
		}(), CodeRateLimit, 7 * time.Second},
		{"anthropic overloaded", APIAnthropic, llmtest.AnthropicError(529, "overloaded_error", "Overloaded"), CodeServer, 0},
		{"anthropic prompt too long", APIAnthropic, llmtest.AnthropicError(http.StatusBadRequest, "invalid_request_error",
			"prompt is too long: 208310 tokens > 200000 maximum"), CodeContextOverflow, 0},
		{"anthropic request too large", APIAnthropic, llmtest.AnthropicError(http.StatusRequestEntityTooLarge, "request_too_large",
			"Request exceeds the maximum allowed number of bytes."), CodeContextOverflow, 0},
		{"anthropic bad key", APIAnthropic, llmtest.AnthropicError(http.StatusUnauthorized, "authentication_error", "invalid x-api-key"), CodeAuth, 0},
		{"gemini resource exhausted", APIGemini, llmtest.GeminiError(http.StatusTooManyRequests, "RESOURCE_EXHAUSTED",
			"You exceeded your current quota, please check your plan and billing details.", "13s"), CodeRateLimit, 13 * time.Second},
		{"gemini overloaded", APIGemini, llmtest.GeminiError(http.StatusServiceUnavailable, "UNAVAILABLE", "The model is overloaded. Please try again later.", ""), CodeServer, 0},
		{"gemini input too long", APIGemini, llmtest.GeminiError(http.StatusBadRequest, "INVALID_ARGUMENT",
			"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", ""), CodeContextOverflow, 0},
		{"gemini bad key", APIGemini, llmtest.GeminiError(http.StatusBadRequest, "INVALID_ARGUMENT",
			"API key not valid. Please pass a valid API key.", ""), CodeAuth, 0},
		{"gemini permission denied", APIGemini, llmtest.GeminiError(http.StatusForbidden, "PERMISSION_DENIED",
			"Method doesn't allow unregistered callers.", ""), CodeAuth, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, srv := newAPIClient(t, tt.api, nil)
			srv.Push(tt.reply)
			res, err := c.Stream(context.Background(), simpleRequest("p"), nil)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tt.code, e.Code, "%v", err)
			require.Equal(t, tt.retry, e.RetryAfter)
			require.NotEmpty(t, e.Detail, "the provider's message is kept")
			_, info, rerr := ReassembleInfo(res.Stream)
			require.NoError(t, rerr)
			require.Equal(t, tt.reply.Status, info.Status)
			require.Equal(t, tt.api, info.API)
		})
	}
}

// TestAdapterBounds checks that the client's bounds hold for every API:
// keep-alive pings are not progress, and a server echoing the key has it
// redacted.
func TestAdapterBounds(t *testing.T) {
	t.Run("anthropic pings do not reset the idle timeout", func(t *testing.T) {
		c, srv := newAPIClient(t, APIAnthropic, func(cfg *ClientConfig) { cfg.IdleTimeout = 300 * time.Millisecond })
		r := llmtest.AnthropicStream(llmtest.Ping())
		r.End, r.Gap = llmtest.EndRepeat, 20*time.Millisecond
		srv.Push(r)
		_, err := c.Stream(context.Background(), simpleRequest("p"), nil)
		require.ErrorIs(t, err, ErrTimeout)
		require.ErrorContains(t, err, "idle timeout")
	})
	for _, api := range []API{APIAnthropic, APIGemini} {
		t.Run(string(api)+" response cap", func(t *testing.T) {
			c, srv := newAPIClient(t, api, func(cfg *ClientConfig) { cfg.MaxResponseBytes = 2048 })
			piece := llmtest.AnthropicEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+strings.Repeat("x", 500)+`"}}`)
			if api == APIGemini {
				piece = llmtest.GeminiParts("", "", llmtest.GeminiTextPart(strings.Repeat("x", 500)))
			}
			r := llmtest.Reply{Raw: []string{piece}, End: llmtest.EndRepeat}
			if api == APIAnthropic {
				r.Raw = []string{llmtest.MessageStart(1, 0, 0), llmtest.TextStart(0), piece}
			}
			srv.Push(r)
			_, err := c.Stream(context.Background(), simpleRequest("p"), nil)
			require.ErrorIs(t, err, ErrResponseTooLarge)
		})
		t.Run(string(api)+" key echoed in an error is redacted", func(t *testing.T) {
			c, srv := newAPIClient(t, api, nil)
			reply := llmtest.AnthropicError(http.StatusUnauthorized, "authentication_error", "invalid x-api-key "+testKey)
			if api == APIGemini {
				reply = llmtest.GeminiError(http.StatusBadRequest, "INVALID_ARGUMENT", "API key not valid: "+testKey, "")
			}
			srv.Push(reply)
			res, err := c.Stream(context.Background(), simpleRequest("p"), nil)
			require.Error(t, err)
			require.NotContains(t, err.Error(), testKey)
			require.NotContains(t, string(res.Stream), testKey)
			require.Contains(t, string(res.Stream), "[redacted]")
		})
	}
	t.Run("a request built for another API is refused", func(t *testing.T) {
		c, _ := newAPIClient(t, APIAnthropic, nil)
		req := simpleRequest("p")
		req.API = APIGemini
		_, err := c.Stream(context.Background(), req, nil)
		require.ErrorIs(t, err, ErrBadRequest)
		require.ErrorContains(t, err, "built for the gemini API but this client speaks anthropic")
	})
}

// TestUsageContract feeds each API's real usage fields, including the
// overlapping ones, through the client and checks the disjoint buckets.
func TestUsageContract(t *testing.T) {
	tests := []struct {
		name  string
		api   API
		reply llmtest.Reply
		want  surface.Usage
	}{
		{"openai cached_tokens inside prompt_tokens", APIOpenAI,
			llmtest.Stream(llmtest.Role(), llmtest.Text("a"), llmtest.Finish("stop"), llmtest.Usage(1000, 50, 800, 20)),
			surface.Usage{Input: 200, CacheRead: 800, Output: 50, Reasoning: 20}},
		{"deepseek hit and miss", APIOpenAI,
			llmtest.Stream(llmtest.Role(), llmtest.Text("a"), llmtest.Finish("stop"), llmtest.DeepSeekUsage(700, 300, 40, 0)),
			surface.Usage{Input: 300, CacheRead: 700, Output: 40}},
		{"anthropic input_tokens beside the cache counts", APIAnthropic,
			llmtest.AnthropicStream(llmtest.MessageStart(30, 900, 120), llmtest.TextStart(0), llmtest.TextDelta(0, "a"), llmtest.BlockStop(0),
				llmtest.MessageDelta("end_turn", 15), llmtest.MessageStop()),
			surface.Usage{Input: 30, CacheRead: 900, CacheWrite: 120, Output: 15}},
		{"anthropic message_delta repeating the input counts", APIAnthropic,
			llmtest.AnthropicStream(llmtest.MessageStart(30, 0, 0), llmtest.TextStart(0), llmtest.TextDelta(0, "a"), llmtest.BlockStop(0),
				llmtest.AnthropicEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},`+
					`"usage":{"input_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":500,"output_tokens":15}}`),
				llmtest.MessageStop()),
			surface.Usage{Input: 30, CacheRead: 500, Output: 15}},
		{"gemini cachedContentTokenCount inside promptTokenCount", APIGemini,
			llmtest.GeminiStream(llmtest.GeminiParts("STOP", llmtest.GeminiUsage(1000, 600, 40, 25), llmtest.GeminiTextPart("a"))),
			surface.Usage{Input: 400, CacheRead: 600, Output: 65, Reasoning: 25}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, srv := newAPIClient(t, tt.api, nil)
			srv.Push(tt.reply)
			res, err := c.Stream(context.Background(), simpleRequest("p"), nil)
			require.NoError(t, err)
			require.Equal(t, &tt.want, res.Usage)
			requireReassembles(t, res)
		})
	}
}

func checkpointMsg(id, text string) *surface.Message {
	return &surface.Message{ID: id, Role: surface.RoleUser,
		Source:  surface.Source{Kind: "plugin", Plugin: "compaction-basic", Unknown: jsontext.Value(`{"compactionId":"cmp-1"}`)},
		Content: []surface.Block{surface.Text(text)}}
}

var echoSchema = jsontext.Value(`{"name":"echo","description":"Echo text.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}`)

// nativeRequest is a request with a system head, a checkpoint, a tool
// round with two parallel calls, and a later system message.
func nativeRequest() *Request {
	return &Request{
		Config: surface.CallConfig{Provider: "p", Model: "m-1", Temperature: f64(0.5), Stop: []string{"END"}},
		Messages: []*surface.Message{
			msg("s", surface.RoleSystem, surface.Text("be brief")),
			checkpointMsg("c", "summary so far"),
			user("u1", "echo twice"),
			msg("a1", surface.RoleAssistant, reasoning("unsigned"), surface.Text(""),
				surface.ToolCall("t1", "echo", `{"text":"a"}`), surface.ToolCall("t2", "echo", "")),
			toolResult("r1", "t1", "a"),
			msg("r2", surface.RoleUser, surface.ToolResult("t2", true, surface.Text("no text"))),
			msg("s2", surface.RoleSystem, surface.Text("now be verbose")),
			msg("a2", surface.RoleAssistant, surface.Text("done")),
			user("u2", "thanks"),
		},
		Tools: []jsontext.Value{echoSchema},
	}
}

func TestEncodeAnthropic(t *testing.T) {
	const mark = `,"cache_control":{"type":"ephemeral"}`
	want := `{"model":"m-1","max_tokens":8192,` +
		`"system":[{"type":"text","text":"be brief"` + mark + `}],"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"summary so far"` + mark + `},{"type":"text","text":"echo twice"}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"echo","input":{"text":"a"}},{"type":"tool_use","id":"t2","name":"echo","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a"},{"type":"tool_result","tool_use_id":"t2","content":"no text","is_error":true},` +
		`{"type":"text","text":"<system>\nnow be verbose\n</system>"}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"done"}]},` +
		`{"role":"user","content":[{"type":"text","text":"thanks"` + mark + `}]}],` +
		`"tools":[{"name":"echo","description":"Echo text.","input_schema":{"type":"object","properties":{"text":{"type":"string"}}}}],` +
		`"temperature":0.5,"stop_sequences":["END"],"stream":true}`
	req := nativeRequest()
	body, err := EncodeAnthropic(req)
	require.NoError(t, err)
	require.Equal(t, want, string(body))
	again, err := Encode(APIAnthropic, nativeRequest())
	require.NoError(t, err)
	require.Equal(t, body, again, "the body is a pure function of the request")
	require.True(t, jsontext.Value(body).IsValid())

	t.Run("empty head sends no system; tools then carry the first breakpoint", func(t *testing.T) {
		req := nativeRequest()
		req.Messages[0] = msg("s", surface.RoleSystem, surface.Text(""))
		req.Messages[6] = msg("s2", surface.RoleSystem, surface.Text(" "))
		body, err := EncodeAnthropic(req)
		require.NoError(t, err)
		require.NotContains(t, string(body), `"system"`)
		require.NotContains(t, string(body), `<system>`, "an empty later system message sends nothing")
		require.Contains(t, string(body), `"properties":{"text":{"type":"string"}}}`+mark+`}]`)
		require.Equal(t, 3, strings.Count(string(body), "cache_control"))
	})
	t.Run("signed thinking is sent back, unsigned is not", func(t *testing.T) {
		req := &Request{Config: surface.CallConfig{Provider: "p", Model: "m", MaxTokens: i64(100)}, Messages: []*surface.Message{
			user("u", "q"),
			msg("a", surface.RoleAssistant, surface.Block{Type: surface.BlockReasoning, Text: "hmm", Unknown: jsontext.Value(`{"signature":"sig"}`)},
				surface.ToolCall("t", "echo", `{}`)),
			toolResult("r", "t", "ok"),
		}}
		body, err := EncodeAnthropic(req)
		require.NoError(t, err)
		require.Contains(t, string(body), `"max_tokens":100,`)
		require.Contains(t, string(body), `{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"tool_use"`)
	})
}

func TestEncodeGemini(t *testing.T) {
	want := `{"systemInstruction":{"parts":[{"text":"be brief"}]},"contents":[` +
		`{"role":"user","parts":[{"text":"summary so far"},{"text":"echo twice"}]},` +
		`{"role":"model","parts":[{"text":"unsigned","thought":true},{"functionCall":{"name":"echo","args":{"text":"a"}}},{"functionCall":{"name":"echo","args":{}}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"name":"echo","response":{"output":"a"}}},{"functionResponse":{"name":"echo","response":{"error":"no text"}}},` +
		`{"text":"<system>\nnow be verbose\n</system>"}]},` +
		`{"role":"model","parts":[{"text":"done"}]},` +
		`{"role":"user","parts":[{"text":"thanks"}]}],` +
		`"tools":[{"functionDeclarations":[{"name":"echo","description":"Echo text.","parametersJsonSchema":{"type":"object","properties":{"text":{"type":"string"}}}}]}],` +
		`"generationConfig":{"temperature":0.5,"stopSequences":["END"]}}`
	body, err := EncodeGemini(nativeRequest())
	require.NoError(t, err)
	require.Equal(t, want, string(body))
	again, err := Encode(APIGemini, nativeRequest())
	require.NoError(t, err)
	require.Equal(t, body, again)

	t.Run("empty head, max tokens and a signed call", func(t *testing.T) {
		call := surface.ToolCall("x", "echo", `{"text":"a"}`)
		call.Unknown = jsontext.Value(`{"signature":"c2ln"}`)
		req := &Request{Config: surface.CallConfig{Provider: "p", Model: "m", MaxTokens: i64(64)}, Messages: []*surface.Message{
			msg("s", surface.RoleSystem), user("u", "q"), msg("a", surface.RoleAssistant, call), toolResult("r", "x", "ok"),
		}}
		body, err := EncodeGemini(req)
		require.NoError(t, err)
		require.NotContains(t, string(body), "systemInstruction")
		require.Contains(t, string(body), `{"functionCall":{"name":"echo","args":{"text":"a"}},"thoughtSignature":"c2ln"}`)
		require.True(t, strings.HasSuffix(string(body), `"generationConfig":{"maxOutputTokens":64}}`), "%s", body)
		var v any
		require.NoError(t, json.Unmarshal(body, &v))
	})
	t.Run("a result whose call is not in the request", func(t *testing.T) {
		req := &Request{Config: surface.CallConfig{Provider: "p", Model: "m"}, Messages: []*surface.Message{toolResult("r", "gone", "ok"), user("u", "q")}}
		body, err := EncodeGemini(req)
		require.NoError(t, err)
		require.Equal(t, `{"contents":[{"role":"user","parts":[{"text":"q"}]}]}`, string(body))
	})
}

// TestAnthropicWholeMessage reads a server that answered with one
// non-streamed Message.
func TestAnthropicWholeMessage(t *testing.T) {
	c, srv := newAPIClient(t, APIAnthropic, nil)
	srv.Push(llmtest.Reply{Body: []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[` +
		`{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"a"}}],` +
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":9,"cache_read_input_tokens":4,"output_tokens":6}}`)})
	res, err := c.Stream(context.Background(), simpleRequest("p"), nil)
	require.NoError(t, err)
	require.Equal(t, []surface.Block{surface.Text("Reading."), surface.ToolCall("toolu_1", "read", `{"path":"a"}`)}, res.Content)
	require.Equal(t, &surface.Usage{Input: 9, CacheRead: 4, Output: 6}, res.Usage)
	require.Equal(t, FinishToolCalls, res.FinishReason)
	requireReassembles(t, res)
}

// TestGeminiJSONArrayBody reads a server that answered with the JSON array
// streamGenerateContent returns without alt=sse.
func TestGeminiJSONArrayBody(t *testing.T) {
	c, srv := newAPIClient(t, APIGemini, nil)
	chunk := func(s string) string {
		return strings.TrimSpace(strings.TrimPrefix(s, "data: "))
	}
	srv.Push(llmtest.Reply{Body: []byte("[" + chunk(llmtest.GeminiParts("", "", llmtest.GeminiTextPart("Hel"))) + ",\n" +
		chunk(llmtest.GeminiParts("STOP", llmtest.GeminiUsage(7, 0, 2, 0), llmtest.GeminiTextPart("lo"))) + "]")})
	res, err := c.Stream(context.Background(), simpleRequest("p"), nil)
	require.NoError(t, err)
	require.Equal(t, []surface.Block{surface.Text("Hello")}, res.Content)
	require.Equal(t, &surface.Usage{Input: 7, Output: 2}, res.Usage)
	require.Equal(t, FinishStop, res.FinishReason)
	requireReassembles(t, res)
}

// TestGeminiBlockedPrompt: a blocked prompt is its own error, not
// retryable, with the provider's reason and message kept.
func TestGeminiBlockedPrompt(t *testing.T) {
	c, srv := newAPIClient(t, APIGemini, nil)
	srv.Push(llmtest.GeminiStream(llmtest.GeminiChunk(
		`{"promptFeedback":{"blockReason":"SAFETY","blockReasonMessage":"the prompt was refused"},"usageMetadata":{"promptTokenCount":7}}`)))
	res, err := c.Stream(context.Background(), simpleRequest("p"), nil)
	require.ErrorIs(t, err, ErrPromptBlocked)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.False(t, e.Retryable())
	require.Equal(t, "SAFETY: the prompt was refused", e.Detail)
	require.Equal(t, &surface.Usage{Input: 7}, res.Usage)
	require.Empty(t, res.FinishReason)
}

// TestAnthropicBlocksGoBack: the blocks a reply returned go back in the
// next request of the tool loop unchanged and in their order: redacted
// thinking, signed thinking with empty text, unknown types, then the call.
func TestAnthropicBlocksGoBack(t *testing.T) {
	c, srv := newAPIClient(t, APIAnthropic, nil)
	srv.Push(llmtest.AnthropicStream(
		llmtest.MessageStart(3, 0, 0),
		llmtest.RedactedThinkingStart(0, "ZW5j"), llmtest.BlockStop(0),
		llmtest.ThinkingStart(1), llmtest.SignatureDelta(1, "sig-1"), llmtest.BlockStop(1),
		llmtest.AnthropicEvent("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"future_block","x":1}}`),
		llmtest.BlockStop(2),
		llmtest.ToolUseStart(3, "toolu_1", "read"), llmtest.InputJSONDelta(3, `{"path":"a"}`), llmtest.BlockStop(3),
		llmtest.MessageDelta("tool_use", 9), llmtest.MessageStop(),
	))
	req := simpleRequest("p")
	res, err := c.Stream(context.Background(), req, nil)
	require.NoError(t, err)
	next := &Request{Config: req.Config, Messages: append(append([]*surface.Message(nil), req.Messages...),
		msg("a", surface.RoleAssistant, res.Content...), toolResult("r", "toolu_1", "text of a"))}
	body, err := EncodeAnthropic(next)
	require.NoError(t, err)
	require.Contains(t, string(body), `{"role":"assistant","content":[{"type":"redacted_thinking","data":"ZW5j"},`+
		`{"type":"thinking","thinking":"","signature":"sig-1"},{"type":"future_block","x":1},`+
		`{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"a"}}]}`)
}

// TestGeminiPartsGoBack: a thoughtSignature on a text part (also one with
// no text) and the id of a functionCall go back on the same parts, and the
// functionResponse repeats the call's id; a call the API sent without an
// id goes back without one.
func TestGeminiPartsGoBack(t *testing.T) {
	c, srv := newAPIClient(t, APIGemini, nil)
	srv.Push(llmtest.GeminiStream(
		llmtest.GeminiParts("", "", `{"text":"Let me","thoughtSignature":"c2lnLXQ="}`),
		llmtest.GeminiParts("", "", llmtest.GeminiTextPart(" check.")),
		llmtest.GeminiParts("", "", `{"functionCall":{"id":"fc-7","name":"read","args":{"path":"a"}},"thoughtSignature":"c2lnLWM="}`),
		llmtest.GeminiParts("STOP", llmtest.GeminiUsage(5, 0, 3, 0), llmtest.GeminiCallPart("echo", `{}`, ""), `{"text":"","thoughtSignature":"c2lnLWU="}`),
	))
	req := simpleRequest("p")
	res, err := c.Stream(context.Background(), req, nil)
	require.NoError(t, err)
	calls := res.ToolCalls()
	require.Len(t, calls, 2)
	next := &Request{Config: req.Config, Messages: append(append([]*surface.Message(nil), req.Messages...),
		msg("a", surface.RoleAssistant, res.Content...),
		msg("r", surface.RoleUser, surface.ToolResult(calls[0].ID, false, surface.Text("A")), surface.ToolResult(calls[1].ID, false, surface.Text("E"))))}
	body, err := EncodeGemini(next)
	require.NoError(t, err)
	require.Contains(t, string(body), `{"role":"model","parts":[{"text":"Let me check.","thoughtSignature":"c2lnLXQ="},`+
		`{"functionCall":{"id":"fc-7","name":"read","args":{"path":"a"}},"thoughtSignature":"c2lnLWM="},`+
		`{"functionCall":{"name":"echo","args":{}}},{"text":"","thoughtSignature":"c2lnLWU="}]},`+
		`{"role":"user","parts":[{"functionResponse":{"id":"fc-7","name":"read","response":{"output":"A"}}},`+
		`{"functionResponse":{"name":"echo","response":{"output":"E"}}}]}`)
}

// TestGeminiUnknownPartsGoBack: parts the adapter does not map
// (executableCode, codeExecutionResult, a part added to the API later)
// are kept whole, in order, survive the log's JSON, and go back unchanged
// in the model turn, in a request the strict validator accepts; the
// Anthropic adapter does not send them.
func TestGeminiUnknownPartsGoBack(t *testing.T) {
	code := `{"executableCode":{"language":"PYTHON","code":"print(1)"}}`
	result := `{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"1\n"},"thoughtSignature":"c2ln"}`
	future := `{"futurePart":{"x":[1,2]}}`
	c, srv := newAPIClient(t, APIGemini, nil)
	srv.Push(llmtest.GeminiStream(
		llmtest.GeminiParts("", "", llmtest.GeminiTextPart("Running."), code),
		llmtest.GeminiParts("", "", result, llmtest.GeminiTextPart("Done.")),
		llmtest.GeminiParts("STOP", llmtest.GeminiUsage(5, 0, 3, 0), future, llmtest.GeminiCallPart("read", `{"path":"a"}`, "")),
	))
	req := simpleRequest("p")
	res, err := c.Stream(context.Background(), req, nil)
	require.NoError(t, err)
	types := make([]string, len(res.Content))
	for i, b := range res.Content {
		types[i] = b.Type
	}
	require.Equal(t, []string{surface.BlockText, GeminiPartBlock, GeminiPartBlock, surface.BlockText, GeminiPartBlock, surface.BlockToolCall}, types)

	stored, err := json.Marshal(msg("a", surface.RoleAssistant, res.Content...))
	require.NoError(t, err)
	var back surface.Message
	require.NoError(t, json.Unmarshal(stored, &back))
	calls := res.ToolCalls()
	require.Len(t, calls, 1)
	next := &Request{Config: req.Config, Messages: append(append([]*surface.Message(nil), req.Messages...),
		&back, toolResult("r", calls[0].ID, "text of a"))}
	body, err := EncodeGemini(next)
	require.NoError(t, err)
	require.NoError(t, llmtest.ValidateGemini(body))
	require.Contains(t, string(body), `{"role":"model","parts":[{"text":"Running."},`+code+`,`+
		`{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"1\n"},"thoughtSignature":"c2ln"},{"text":"Done."},`+future+`,`+
		`{"functionCall":{"name":"read","args":{"path":"a"}}}]}`)

	body, err = EncodeAnthropic(next)
	require.NoError(t, err)
	require.NoError(t, llmtest.ValidateAnthropic(body))
	require.NotContains(t, string(body), "executableCode")
	require.NotContains(t, string(body), GeminiPartBlock)
}

// TestOpenAIUnknownPartsKept: content parts of an OpenAI-compatible reply
// whose type is not "text" are kept whole, in order between the text
// around them, survive the log's JSON and the stream record's
// reassembly, and are not sent back: the next request carries the text
// only and the strict validator accepts it.
func TestOpenAIUnknownPartsKept(t *testing.T) {
	thinking := `{"type":"thinking","thinking":[{"type":"text","text":"hm"}]}`
	refusal := `{"type":"refusal","refusal":"no"}`
	srv := llmtest.NewServer(t)
	srv.Push(llmtest.Stream(
		`{"choices":[{"index":0,"delta":{"content":[`+thinking+`,{"type":"text","text":"Hello"}]}}]}`,
		`{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":" there"},`+refusal+`,{"text":"."}]},"finish_reason":"stop"}]}`))
	c := newTestClient(t, srv, nil)
	req := simpleRequest("p")
	res, err := c.Stream(context.Background(), req, nil)
	require.NoError(t, err)
	part := func(raw string) surface.Block {
		return surface.Block{Type: OpenAIPartBlock, Unknown: jsontext.Value(`{"type":"openai-part","part":` + raw + `}`)}
	}
	require.Equal(t, []surface.Block{part(thinking), surface.Text("Hello there"), part(refusal), surface.Text(".")}, res.Content)
	requireReassembles(t, res)

	stored, err := json.Marshal(msg("a", surface.RoleAssistant, res.Content...))
	require.NoError(t, err)
	var back surface.Message
	require.NoError(t, json.Unmarshal(stored, &back))
	require.Equal(t, res.Content, back.Content)
	next := &Request{Config: req.Config, Messages: append(append([]*surface.Message(nil), req.Messages...),
		&back, msg("u", surface.RoleUser, surface.Text("go on")))}
	body, err := EncodeRequest(next)
	require.NoError(t, err)
	require.NoError(t, llmtest.ValidateOpenAI(body))
	require.NotContains(t, string(body), "refusal")
	require.NotContains(t, string(body), OpenAIPartBlock)
	body, err = EncodeAnthropic(next)
	require.NoError(t, err)
	require.NoError(t, llmtest.ValidateAnthropic(body))
	require.NotContains(t, string(body), OpenAIPartBlock)
}
