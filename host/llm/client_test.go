package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/surface"
)

const testKey = "sk-test-0123456789abcdef0123456789abcdef"

func newTestClient(t *testing.T, srv *llmtest.Server, mod func(*ClientConfig)) *Client {
	t.Helper()
	cfg := ClientConfig{BaseURL: srv.URL(), APIKey: testKey}
	if mod != nil {
		mod(&cfg)
	}
	c, err := NewClient(cfg)
	require.NoError(t, err)
	return c
}

func simpleRequest(provider string) *Request {
	return &Request{
		Config:    surface.CallConfig{Provider: provider, Model: "test-model", MaxTokens: i64(1000)},
		Messages:  []*surface.Message{msg("s", surface.RoleSystem, surface.Text("sys")), user("u", "hello")},
		SessionID: "sess-1",
	}
}

func TestClientStreams(t *testing.T) {
	tests := []struct {
		name     string
		provider string
		reply    llmtest.Reply
		content  []surface.Block
		usage    *surface.Usage
		finish   FinishReason
		deltas   []Delta
	}{
		{
			name:    "text",
			reply:   llmtest.TextReply(20, 3, "Hel", "lo", " world"),
			content: []surface.Block{surface.Text("Hello world")},
			usage:   &surface.Usage{Input: 20, Output: 3},
			finish:  FinishStop,
			deltas:  []Delta{{Kind: DeltaText, Text: "Hel"}, {Kind: DeltaText, Text: "lo"}, {Kind: DeltaText, Text: " world"}},
		},
		{
			name:     "reasoning then text, DeepSeek usage",
			provider: "deepseek",
			reply: llmtest.Stream(llmtest.Role(), llmtest.Reasoning("Let me "), llmtest.Reasoning("think."),
				llmtest.Text("Answer: "), llmtest.Text("42"), llmtest.Finish("stop"), llmtest.DeepSeekUsage(64, 36, 12, 5)),
			content: []surface.Block{reasoning("Let me think."), surface.Text("Answer: 42")},
			usage:   &surface.Usage{Input: 36, CacheRead: 64, Output: 12, Reasoning: 5},
			finish:  FinishStop,
			deltas: []Delta{{Kind: DeltaReasoning, Text: "Let me "}, {Kind: DeltaReasoning, Text: "think."},
				{Kind: DeltaText, Text: "Answer: "}, {Kind: DeltaText, Text: "42"}},
		},
		{
			name: "tool calls split across chunks, interleaved",
			reply: llmtest.Stream(llmtest.Role(), llmtest.Text("Reading."),
				llmtest.ToolCall(0, "call_a", "read", ""), llmtest.ToolCall(0, "", "", `{"pa`),
				llmtest.ToolCall(1, "call_b", "grep", `{"q":`), llmtest.ToolCall(0, "", "", `th":"x"}`),
				llmtest.ToolCall(1, "", "", `"y"}`), llmtest.Finish("tool_calls"), llmtest.Usage(100, 30, 80, 0)),
			content: []surface.Block{surface.Text("Reading."), surface.ToolCall("call_a", "read", `{"path":"x"}`), surface.ToolCall("call_b", "grep", `{"q":"y"}`)},
			usage:   &surface.Usage{Input: 20, CacheRead: 80, Output: 30},
			finish:  FinishToolCalls,
			deltas: []Delta{{Kind: DeltaText, Text: "Reading."},
				{Kind: DeltaToolCall, Call: 0, ID: "call_a", Name: "read"}, {Kind: DeltaToolCall, Call: 0, Text: `{"pa`},
				{Kind: DeltaToolCall, Call: 1, ID: "call_b", Name: "grep", Text: `{"q":`}, {Kind: DeltaToolCall, Call: 0, Text: `th":"x"}`},
				{Kind: DeltaToolCall, Call: 1, Text: `"y"}`}},
		},
		{
			name:    "length is max-tokens",
			reply:   llmtest.Stream(llmtest.Text("cut"), llmtest.Finish("length"), llmtest.Usage(5, 1000, 0, 0)),
			content: []surface.Block{surface.Text("cut")},
			usage:   &surface.Usage{Input: 5, Output: 1000},
			finish:  FinishMaxTokens,
			deltas:  []Delta{{Kind: DeltaText, Text: "cut"}},
		},
		{
			name:    "content filter, no usage",
			reply:   llmtest.Stream(llmtest.Text("x"), llmtest.Finish("content_filter")),
			content: []surface.Block{surface.Text("x")},
			finish:  FinishContentFilter,
			deltas:  []Delta{{Kind: DeltaText, Text: "x"}},
		},
		{
			name:    "clean close after finish, no DONE",
			reply:   llmtest.Reply{Chunks: []string{llmtest.Text("ok"), llmtest.Finish("stop")}, End: llmtest.EndClean},
			content: []surface.Block{surface.Text("ok")},
			finish:  FinishStop,
			deltas:  []Delta{{Kind: DeltaText, Text: "ok"}},
		},
		{
			name:    "DONE without finish_reason",
			reply:   llmtest.Stream(llmtest.Text("ok")),
			content: []surface.Block{surface.Text("ok")},
			finish:  FinishStop,
			deltas:  []Delta{{Kind: DeltaText, Text: "ok"}},
		},
		{
			name: "raw CRLF, comments, multi-line data, keepalives",
			reply: llmtest.Reply{Raw: []string{
				": keepalive\r\n\r\n",
				"data: {\"choices\":[{\"index\":0,\r\ndata: \"delta\":{\"content\":\"A\"}}]}\r\n\r\n",
				": ping\r\n",
				"data:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"B\"},\"finish_reason\":\"stop\"}]}\r\n\r\n",
				"data: [DONE]\r\n\r\n",
			}},
			content: []surface.Block{surface.Text("AB")},
			finish:  FinishStop,
			deltas:  []Delta{{Kind: DeltaText, Text: "A"}, {Kind: DeltaText, Text: "B"}},
		},
		{
			name: "non-streamed JSON body",
			reply: llmtest.Reply{Body: []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"whole",` +
				`"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],` +
				`"usage":{"prompt_tokens":9,"completion_tokens":2}}`)},
			content: []surface.Block{surface.Text("whole"), surface.ToolCall("c", "f", "{}")},
			usage:   &surface.Usage{Input: 9, Output: 2},
			finish:  FinishToolCalls,
			deltas:  []Delta{{Kind: DeltaText, Text: "whole"}, {Kind: DeltaToolCall, ID: "c", Name: "f", Text: "{}"}},
		},
		{
			name: "vLLM reasoning member, tool call without id",
			reply: llmtest.Stream(`{"choices":[{"index":0,"delta":{"reasoning":"hm"}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":{"a":1}}}]},"finish_reason":"tool_calls"}]}`),
			content: []surface.Block{reasoning("hm"), surface.ToolCall("call_0", "f", `{"a":1}`)},
			finish:  FinishToolCalls,
			deltas:  []Delta{{Kind: DeltaReasoning, Text: "hm"}, {Kind: DeltaToolCall, Name: "f", Text: `{"a":1}`}},
		},
		{
			name: "other choices and unknown members ignored",
			reply: llmtest.Stream(`{"choices":[{"index":1,"delta":{"content":"no"}},{"index":0,"delta":{"content":"yes","extra":[1,2]}}],"system_fingerprint":"fp"}`,
				`{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":" parts"}]},"finish_reason":"stop"}]}`),
			content: []surface.Block{surface.Text("yes parts")},
			finish:  FinishStop,
			deltas:  []Delta{{Kind: DeltaText, Text: "yes"}, {Kind: DeltaText, Text: " parts"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Push(tt.reply)
			c := newTestClient(t, srv, nil)
			req := simpleRequest(tt.provider)
			on, deltas := collect()
			res, err := c.Stream(context.Background(), req, on)
			require.NoError(t, err)
			require.Equal(t, tt.content, res.Content)
			require.Equal(t, tt.usage, res.Usage)
			require.Equal(t, tt.finish, res.FinishReason)
			require.Equal(t, tt.deltas, *deltas)
			requireReassembles(t, res)
			require.NotContains(t, string(res.Stream), `"error"`)

			reqs := srv.Requests()
			require.Len(t, reqs, 1)
			want, err := EncodeRequest(req)
			require.NoError(t, err)
			require.Equal(t, string(want), string(reqs[0].Body), "the body sent is exactly EncodeRequest")
			require.Equal(t, "/v1/chat/completions", reqs[0].Path)
			require.Equal(t, "Bearer "+testKey, reqs[0].Header.Get("Authorization"))
			require.Equal(t, "application/json", reqs[0].Header.Get("Content-Type"))
			require.Equal(t, "text/event-stream", reqs[0].Header.Get("Accept"))
			require.Equal(t, "sess-1", reqs[0].Header.Get("X-Session-Id"))
		})
	}
}

func TestClientStreamRecord(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Push(llmtest.Stream(llmtest.Text("a"), llmtest.Finish("stop")))
	res, err := newTestClient(t, srv, nil).Stream(context.Background(), simpleRequest(""), nil)
	require.NoError(t, err)
	var rec struct {
		V      int                `json:"v"`
		Enc    int                `json:"enc"`
		Sent   int64              `json:"sent"`
		Chunks [][]jsontext.Value `json:"chunks"`
		First  *int64             `json:"first"`
		Done   *int64             `json:"done"`
	}
	before := time.Now().UnixMilli()
	require.NoError(t, json.Unmarshal(res.Stream, &rec, json.RejectUnknownMembers(true)))
	require.Equal(t, 1, rec.V)
	require.InDelta(t, before, rec.Sent, float64(time.Minute.Milliseconds()), "sent is the dispatch instant in Unix ms")
	require.NotNil(t, rec.First, "the text chunk is the first content delta")
	require.Equal(t, EncoderVersion, rec.Enc, "the record names the encoder version of the body sent")
	require.Len(t, rec.Chunks, 2)
	require.Equal(t, llmtest.Text("a"), string(rec.Chunks[0][1]), "chunks are kept verbatim")
	require.Equal(t, llmtest.Finish("stop"), string(rec.Chunks[1][1]))
	require.NotNil(t, rec.Done)
	_, info, err := ReassembleInfo(res.Stream)
	require.NoError(t, err)
	require.Equal(t, StreamInfo{Encoder: EncoderVersion, Done: true, Chunks: 2}, info)
	require.Equal(t, Timing{Sent: rec.Sent, First: *rec.First}, TimingOf(res.Stream))
}

// TestClientFirstToken streams from a loopback server that holds every
// chunk back by a known gap: the first chunk only names the role, so the
// first content delta is the second chunk, and the recorded time to first
// token is at least two gaps and exactly that chunk's recorded time. A
// reply that delivers no content records none.
func TestClientFirstToken(t *testing.T) {
	const gap = 150 * time.Millisecond
	tests := []struct {
		name    string
		reply   llmtest.Reply
		chunk   int // the chunk that delivers the first content; -1 none
		atLeast time.Duration
	}{
		{"text", llmtest.Reply{Chunks: []string{llmtest.Role(), llmtest.Text("hi"), llmtest.Finish("stop")}, Gap: gap}, 1, 2 * gap},
		{"reasoning", llmtest.Reply{Chunks: []string{llmtest.Role(), llmtest.Reasoning("hmm"), llmtest.Text("hi"), llmtest.Finish("stop")}, Gap: gap}, 1, 2 * gap},
		{"tool call", llmtest.Reply{Chunks: []string{llmtest.Role(), llmtest.ToolCall(0, "c1", "f", `{}`), llmtest.Finish("tool_calls")}, Gap: gap}, 1, 2 * gap},
		{"no content", llmtest.Reply{Chunks: []string{llmtest.Role(), llmtest.Finish("stop")}, Gap: gap}, -1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Push(tt.reply)
			res, err := newTestClient(t, srv, nil).Stream(context.Background(), simpleRequest(""), nil)
			require.NoError(t, err)
			var rec struct {
				Chunks [][]jsontext.Value `json:"chunks"`
				First  *int64             `json:"first"`
			}
			require.NoError(t, json.Unmarshal(res.Stream, &rec))
			tm := TimingOf(res.Stream)
			require.NotZero(t, tm.Sent)
			if tt.chunk < 0 {
				require.Nil(t, rec.First, "no content: no first token")
				require.Equal(t, int64(-1), tm.First)
				return
			}
			require.NotNil(t, rec.First)
			at, err := strconv.ParseInt(string(rec.Chunks[tt.chunk][0]), 10, 64)
			require.NoError(t, err)
			require.Equal(t, at, *rec.First, "the first content delta's chunk time")
			require.GreaterOrEqual(t, *rec.First, tt.atLeast.Milliseconds(), "the server held the content back")
			require.Equal(t, *rec.First, tm.First)
			again, err := Reassemble(res.Stream)
			require.NoError(t, err)
			require.Equal(t, res.Content, again.Content, "the new members do not change the reassembled reply")
		})
	}
}

// TestTimingOf reads old records (no members: unknown) and bad values.
func TestTimingOf(t *testing.T) {
	for rec, want := range map[string]Timing{
		`{"v":1,"enc":2,"chunks":[[0,{}]],"done":1}`:                 {First: -1},
		`{"v":1,"enc":2,"sent":1767268800000,"chunks":[],"first":0}`: {Sent: 1767268800000, First: 0},
		`{"v":1,"sent":"x","first":-4}`:                              {First: -1},
		`not json`:                                                   {First: -1},
		`{"v":1,"chunks":[[0,{"a":[1,2,{"first":9}]}]],"first":12}`:  {First: 12},
	} {
		require.Equal(t, want, TimingOf(jsontext.Value(rec)), rec)
	}
}

func TestClientErrors(t *testing.T) {
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name       string
		reply      llmtest.Reply
		code       string
		status     int
		retryAfter time.Duration // checked within 2s when > 0
		detail     string
		content    []surface.Block
	}{
		{name: "401", reply: llmtest.Unauthorized(), code: CodeAuth, status: 401, detail: "api key is invalid"},
		{name: "403", reply: llmtest.Error(403, "permission_error", "", "model not allowed"), code: CodeAuth, status: 403},
		{name: "402", reply: llmtest.Error(402, "", "", "Insufficient Balance"), code: CodeQuota, status: 402},
		{name: "429 seconds", reply: llmtest.RateLimited("7"), code: CodeRateLimit, status: 429, retryAfter: 7 * time.Second},
		{name: "429 date", reply: llmtest.RateLimited(date), code: CodeRateLimit, status: 429, retryAfter: 90 * time.Second},
		{name: "429 retry-after-ms", reply: llmtest.Reply{Status: 429, Header: http.Header{"Retry-After-Ms": {"1500"}}, Body: []byte(`{}`)}, code: CodeRateLimit, status: 429, retryAfter: 1500 * time.Millisecond},
		{name: "429 none", reply: llmtest.RateLimited(""), code: CodeRateLimit, status: 429},
		{name: "overflow OpenAI", reply: llmtest.ContextOverflow(), code: CodeContextOverflow, status: 400, detail: "maximum context length is 128000"},
		{name: "overflow DeepSeek", reply: llmtest.Error(400, "invalid_request_error", "invalid_request_error",
			"This model's maximum context length is 65536 tokens. However, you requested 70012 tokens (62012 in the messages, 8000 in the completion). Please reduce the length of the messages or completion."),
			code: CodeContextOverflow, status: 400},
		{name: "overflow vLLM", reply: llmtest.Reply{Status: 400, Body: []byte(`{"object":"error","message":"The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that ` + "`max_model_len`" + ` is no smaller than the number of text tokens.","type":"BadRequestError","param":null,"code":400}`)},
			code: CodeContextOverflow, status: 400},
		{name: "overflow llama.cpp", reply: llmtest.Reply{Status: 400, Body: []byte(`{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}`)},
			code: CodeContextOverflow, status: 400},
		{name: "plain 400", reply: llmtest.Error(400, "invalid_request_error", "", "Invalid value for 'temperature'"), code: CodeBadRequest, status: 400, detail: "temperature"},
		{name: "404", reply: llmtest.Error(404, "invalid_request_error", "model_not_found", "The model does not exist"), code: CodeBadRequest, status: 404},
		{name: "500 text body", reply: llmtest.Reply{Status: 500, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("upstream exploded")}, code: CodeServer, status: 500, detail: "upstream exploded"},
		{name: "503", reply: llmtest.Error(503, "server_error", "", "Service Unavailable"), code: CodeServer, status: 503},
		{
			name:    "mid-stream disconnect",
			reply:   llmtest.Drop(llmtest.Reasoning("hmm"), llmtest.Text("partial "), llmtest.Text("answ"), llmtest.ToolCall(0, "c", "bash", `{"x`)),
			code:    CodeBrokenStream,
			detail:  "unexpected EOF",
			content: []surface.Block{reasoning("hmm"), surface.Text("partial answ"), surface.ToolCall("c", "bash", `{"x`)},
		},
		{
			name:    "clean close before finish",
			reply:   llmtest.Reply{Chunks: []string{llmtest.Text("half")}, End: llmtest.EndClean},
			code:    CodeBrokenStream,
			content: []surface.Block{surface.Text("half")},
		},
		{
			name:    "error object mid-stream",
			reply:   llmtest.Stream(llmtest.Text("so far"), `{"error":{"message":"upstream overloaded","type":"server_error"}}`),
			code:    CodeServer,
			detail:  "upstream overloaded",
			content: []surface.Block{surface.Text("so far")},
		},
		{
			name:   "overflow as an error event",
			reply:  llmtest.Reply{Raw: []string{"event: error\ndata: {\"message\":\"prompt is too long: 210000 tokens > 200000 maximum\"}\n\n"}},
			code:   CodeContextOverflow,
			detail: "prompt is too long",
		},
		{
			name:    "error event with text data",
			reply:   llmtest.Reply{Raw: []string{"data: " + llmtest.Text("a") + "\n\nevent: error\ndata: overloaded, try later\n\n"}},
			code:    CodeServer,
			detail:  "overloaded, try later",
			content: []surface.Block{surface.Text("a")},
		},
		{
			name:    "DeepSeek insufficient resources",
			reply:   llmtest.Stream(llmtest.Text("cut"), llmtest.Finish("insufficient_system_resource")),
			code:    CodeServer,
			content: []surface.Block{surface.Text("cut")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Push(tt.reply)
			res, err := newTestClient(t, srv, nil).Stream(context.Background(), simpleRequest("prov"), nil)
			require.Error(t, err)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tt.code, e.Code, "error: %v", err)
			require.True(t, errors.Is(err, &Error{Code: tt.code}))
			require.Equal(t, tt.status, e.Status)
			require.Equal(t, "prov", e.Provider)
			if tt.retryAfter > 0 {
				require.InDelta(t, tt.retryAfter.Seconds(), e.RetryAfter.Seconds(), 2)
			} else {
				require.Zero(t, e.RetryAfter)
			}
			if tt.detail != "" {
				require.Contains(t, e.Detail, tt.detail)
				require.Contains(t, err.Error(), tt.detail)
			}
			require.NotEmpty(t, e.Hint)
			require.NotNil(t, res, "a dispatched request always yields a result")
			require.Equal(t, tt.content, nilIfEmpty(res.Content))
			requireReassembles(t, res)
			_, info, rerr := ReassembleInfo(res.Stream)
			require.NoError(t, rerr)
			require.Equal(t, tt.code, info.Code)
			require.Equal(t, tt.status, info.Status)
			require.Equal(t, e.Error(), info.Message)
		})
	}
}

func nilIfEmpty(b []surface.Block) []surface.Block {
	if len(b) == 0 {
		return nil
	}
	return b
}

func TestClientRetryable(t *testing.T) {
	for code, want := range map[string]bool{CodeRateLimit: true, CodeServer: true, CodeBrokenStream: true, CodeTimeout: true,
		CodeNetwork: true, CodeAuth: false, CodeContextOverflow: false, CodeBadRequest: false, CodeCancelled: false, CodeQuota: false} {
		require.Equal(t, want, (&Error{Code: code}).Retryable(), code)
	}
}

// echo answers with the request's Authorization header inside the body.
func echo(status int, stream bool) func(int, llmtest.Request) llmtest.Reply {
	return func(_ int, r llmtest.Request) llmtest.Reply {
		h := r.Header.Get("Authorization")
		if stream {
			return llmtest.Drop(llmtest.Text("you sent "+h), `{"error":{"message":"bad key `+h+`"}}`)
		}
		return llmtest.Error(status, "invalid_request_error", "", "Incorrect API key provided: "+h+". Header was "+h)
	}
}

func TestClientNeverLeaksKey(t *testing.T) {
	tests := []struct {
		name    string
		handler func(int, llmtest.Request) llmtest.Reply
	}{
		{"401 echo", echo(401, false)},
		{"400 echo", echo(400, false)},
		{"500 echo", echo(500, false)},
		{"stream echo", echo(0, true)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.SetFallback(tt.handler)
			c := newTestClient(t, srv, nil)
			res, err := c.Stream(context.Background(), simpleRequest("openai"), nil)
			require.Error(t, err)
			require.Equal(t, "Bearer "+testKey, srv.Requests()[0].Header.Get("Authorization"), "the key was sent")
			require.NotContains(t, err.Error(), testKey)
			for e := err; e != nil; e = errors.Unwrap(e) {
				require.NotContains(t, e.Error(), testKey)
			}
			require.NotContains(t, string(res.Stream), testKey)
			for _, b := range res.Content {
				require.NotContains(t, b.Text, testKey)
			}
			require.Contains(t, string(res.Stream)+err.Error(), "[redacted]")
		})
	}
	cfg := ClientConfig{BaseURL: "http://x", APIKey: testKey}
	for _, s := range []string{fmtV(cfg), fmtPlusV(cfg), fmtSharpV(cfg)} {
		require.NotContains(t, s, testKey)
	}
}

func TestClientNetworkError(t *testing.T) {
	srv := llmtest.NewServer(t)
	url := srv.URL()
	srv.Close()
	c, err := NewClient(ClientConfig{BaseURL: url, APIKey: testKey})
	require.NoError(t, err)
	res, err := c.Stream(context.Background(), simpleRequest("p"), nil)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, CodeNetwork, e.Code)
	require.NotContains(t, err.Error(), testKey)
	requireReassembles(t, res)
}

func TestClientCancelAndTimeouts(t *testing.T) {
	t.Run("cancel mid-stream keeps the prefix", func(t *testing.T) {
		srv := llmtest.NewServer(t)
		srv.Push(llmtest.Reply{Chunks: []string{llmtest.Reasoning("r"), llmtest.Text("first")}, End: llmtest.EndStall})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		res, err := newTestClient(t, srv, nil).Stream(ctx, simpleRequest("p"), func(d Delta) {
			if d.Kind == DeltaText {
				cancel()
			}
		})
		require.ErrorIs(t, err, ErrCancelled)
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, []surface.Block{reasoning("r"), surface.Text("first")}, res.Content)
		require.Empty(t, res.FinishReason)
		requireReassembles(t, res)
	})
	t.Run("caller's deadline before headers", func(t *testing.T) {
		srv := llmtest.NewServer(t)
		// The server answers only when the test ends (this cleanup runs
		// before the server's own).
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		srv.SetFallback(func(int, llmtest.Request) llmtest.Reply {
			<-release
			return llmtest.TextReply(1, 1, "late")
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		_, err := newTestClient(t, srv, nil).Stream(ctx, simpleRequest("p"), nil)
		var e *Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, CodeTimeout, e.Code)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Contains(t, e.What, "caller's deadline")
	})
	t.Run("idle timeout keeps the partial reply", func(t *testing.T) {
		srv := llmtest.NewServer(t)
		srv.Push(llmtest.Reply{Chunks: []string{llmtest.Text("x")}, End: llmtest.EndKeepAlive})
		c := newTestClient(t, srv, func(c *ClientConfig) { c.Route = "test" })
		idle := manualClock(c)
		// The idle timer fires once "x" arrived: no real time is involved.
		res, err := c.Stream(context.Background(), simpleRequest("p"), func(d Delta) { idle.fire() })
		var e *Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, CodeTimeout, e.Code)
		require.ErrorIs(t, err, errIdle)
		require.Contains(t, e.What, "no progress for 2m0s")
		require.Contains(t, e.Hint, "models.test.idleTimeout")
		require.Equal(t, []surface.Block{surface.Text("x")}, res.Content)
		requireReassembles(t, res)
	})
}

// manualTimer is an idle timer that fires only when told to.
type manualTimer struct {
	mu     sync.Mutex
	f      func()
	resets int
}

func (m *manualTimer) Reset(time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resets++
	return true
}

func (m *manualTimer) Stop() bool { return true }

func (m *manualTimer) fire() { m.f() }

// manualClock makes c's idle timer a manualTimer, returned once armed.
func manualClock(c *Client) *manualTimer {
	m := &manualTimer{}
	c.afterFunc = func(_ time.Duration, f func()) timer {
		m.f = f
		return m
	}
	return m
}

// TestHangingServersAreStopped runs the client against servers that never
// finish: each must end with the error of the bound that stops it. The
// servers block until the client leaves or the test ends; the bounds are
// short, and only the kind of error is checked, never how fast it came.
func TestHangingServersAreStopped(t *testing.T) {
	keepAlive := func(chunks ...string) llmtest.Reply {
		return llmtest.Reply{Chunks: chunks, End: llmtest.EndKeepAlive}
	}
	endless := llmtest.Reply{Chunks: []string{llmtest.Text("xxxxxxxx")}, End: llmtest.EndRepeat}
	tests := []struct {
		name  string
		reply llmtest.Reply
		cfg   ClientConfig
		code  string
		cause error
		key   string
	}{
		{name: "keep-alives only", reply: keepAlive(),
			cfg: ClientConfig{IdleTimeout: 200 * time.Millisecond, Timeout: -1, MaxResponseBytes: -1}, code: CodeTimeout, cause: errIdle, key: "models.test.idleTimeout"},
		{name: "keep-alives after content", reply: keepAlive(llmtest.Role(), llmtest.Text("partial")),
			cfg: ClientConfig{IdleTimeout: 200 * time.Millisecond, Timeout: -1, MaxResponseBytes: -1}, code: CodeTimeout, cause: errIdle, key: "models.test.idleTimeout"},
		{name: "empty chunks are not progress", reply: llmtest.Reply{Chunks: []string{llmtest.Role(), `{"choices":[{"index":0,"delta":{}}]}`, `{"choices":[]}`},
			End: llmtest.EndRepeat, Gap: 5 * time.Millisecond},
			cfg: ClientConfig{IdleTimeout: 200 * time.Millisecond, Timeout: -1, MaxResponseBytes: -1}, code: CodeTimeout, cause: errIdle, key: "models.test.idleTimeout"},
		{name: "endless content, overall timeout", reply: endless,
			cfg: ClientConfig{IdleTimeout: -1, Timeout: 200 * time.Millisecond, MaxResponseBytes: -1}, code: CodeTimeout, cause: errTimeout, key: "models.test.timeout"},
		{name: "endless content, size cap", reply: endless,
			cfg: ClientConfig{IdleTimeout: -1, Timeout: -1, MaxResponseBytes: 64 << 10}, code: CodeResponseTooLarge, cause: errTooLarge, key: "models.test.maxResponseMiB"},
		{name: "endless keep-alives, size cap", reply: llmtest.Reply{End: llmtest.EndKeepAlive, Tick: time.Millisecond},
			cfg: ClientConfig{IdleTimeout: -1, Timeout: -1, MaxResponseBytes: 4 << 10}, code: CodeResponseTooLarge, cause: errTooLarge, key: "models.test.maxResponseMiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Push(tt.reply)
			c := newTestClient(t, srv, func(c *ClientConfig) {
				c.Route, c.Timeout, c.IdleTimeout, c.MaxResponseBytes = "test", tt.cfg.Timeout, tt.cfg.IdleTimeout, tt.cfg.MaxResponseBytes
			})
			res, err := streamOrHang(t, c)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tt.code, e.Code)
			require.ErrorIs(t, err, tt.cause)
			require.Contains(t, err.Error(), tt.key, "the message names the key that raises the bound")
			require.False(t, e.Retryable() && tt.code == CodeResponseTooLarge, "a response over the cap is not retried")
			requireReassembles(t, res)
			info := streamInfo(t, res)
			require.Equal(t, tt.code, info.Code, "the record ends with the failure")
			require.False(t, info.Done)
		})
	}
}

// streamOrHang streams a simple request, failing the test if the client
// does not return within a minute: a hang, not a slow machine.
func streamOrHang(t *testing.T, c *Client) (*Result, error) {
	t.Helper()
	type out struct {
		res *Result
		err error
	}
	ch := make(chan out, 1)
	go func() {
		res, err := c.Stream(context.Background(), simpleRequest("p"), nil)
		ch <- out{res, err}
	}()
	select {
	case o := <-ch:
		return o.res, o.err
	case <-time.After(time.Minute):
		t.Fatal("the client did not stop a hanging server")
		return nil, nil
	}
}

func streamInfo(t *testing.T, res *Result) StreamInfo {
	t.Helper()
	_, info, err := ReassembleInfo(res.Stream)
	require.NoError(t, err)
	return info
}

// TestSizeCap checks the cap at its boundary, for a streamed reply and a
// non-streamed body, and that the part read before it is kept.
func TestSizeCap(t *testing.T) {
	body := []byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("a", 1000) + `"},"finish_reason":"stop"}]}`)
	stream := "data: " + llmtest.Text("hello") + "\n\n" + "data: " + llmtest.Text(strings.Repeat("b", 1000)) + "\n\n" +
		"data: " + llmtest.Finish("stop") + "\n\n" + "data: [DONE]\n\n"
	first := len("data: " + llmtest.Text("hello") + "\n\n")
	tests := []struct {
		name    string
		reply   llmtest.Reply
		cap     int64
		code    string
		content []surface.Block
	}{
		{name: "body at the cap", reply: llmtest.Reply{Body: body}, cap: int64(len(body)), content: []surface.Block{surface.Text(strings.Repeat("a", 1000))}},
		{name: "body one byte over", reply: llmtest.Reply{Body: body}, cap: int64(len(body)) - 1, code: CodeResponseTooLarge, content: []surface.Block{}},
		{name: "stream at the cap", reply: llmtest.Reply{Raw: []string{stream}}, cap: int64(len(stream)),
			content: []surface.Block{surface.Text("hello" + strings.Repeat("b", 1000))}},
		{name: "stream one byte over", reply: llmtest.Reply{Raw: []string{stream}}, cap: int64(len(stream)) - 1, code: CodeResponseTooLarge,
			content: []surface.Block{surface.Text("hello" + strings.Repeat("b", 1000))}},
		{name: "stream cut in its second chunk keeps the first", reply: llmtest.Reply{Raw: []string{stream}}, cap: int64(first) + 10, code: CodeResponseTooLarge,
			content: []surface.Block{surface.Text("hello")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Push(tt.reply)
			res, err := newTestClient(t, srv, func(c *ClientConfig) { c.MaxResponseBytes = tt.cap }).Stream(context.Background(), simpleRequest("p"), nil)
			if tt.code == "" {
				require.NoError(t, err)
			} else {
				var e *Error
				require.ErrorAs(t, err, &e)
				require.Equal(t, tt.code, e.Code)
				require.ErrorIs(t, err, ErrResponseTooLarge)
				require.False(t, e.Retryable())
				require.Contains(t, e.What, fmt.Sprintf("size cap of %d bytes", tt.cap))
				require.Contains(t, e.Hint, "models.NAME.maxResponseMiB")
			}
			require.Equal(t, tt.content, res.Content)
			requireReassembles(t, res)
		})
	}
}

// TestProgress checks what resets the idle timer: payloads that advance
// the reply, never comments, empty or malformed chunks.
func TestProgress(t *testing.T) {
	data := func(p string) string { return "data: " + p + "\n\n" }
	tests := []struct {
		name   string
		stream string
		want   int
	}{
		{"text and reasoning", data(llmtest.Text("a")) + data(llmtest.Reasoning("r")) + data(llmtest.Text("b")), 3},
		{"keep-alive comments", ": keep-alive\n\n:\n\n: OPENROUTER PROCESSING\n\n", 0},
		{"role and empty deltas", data(llmtest.Role()) + data(`{"choices":[{"index":0,"delta":{}}]}`) + data(`{"choices":[]}`) + data(`{}`) + data(llmtest.Text("")), 0},
		{"malformed chunks", data(`{"choices":`) + data("not json") + "data:\n\n", 0},
		{"tool-call fragments", data(llmtest.ToolCall(0, "call_1", "read", "")) + data(llmtest.ToolCall(0, "", "", `{"p":1}`)) + data(llmtest.ToolCall(0, "", "", "")), 2},
		{"finish and usage", data(llmtest.Finish("stop")) + data(llmtest.Usage(1, 1, 0, 0)), 2},
		{"comments between text", data(llmtest.Text("a")) + ": keep-alive\n\n" + data(llmtest.Text("b")), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewClient(ClientConfig{BaseURL: "http://127.0.0.1"})
			require.NoError(t, err)
			n := 0
			_, err = c.pump(strings.NewReader(tt.stream), &assembler{}, newRecorder(APIOpenAI, EncoderVersion), func() int64 { return 0 }, func() { n++ })
			require.ErrorIs(t, err, io.EOF)
			require.Equal(t, tt.want, n)
		})
	}
}

// TestMalformedChunksWarnOnce checks that an attempt with malformed chunks
// logs one warning, however many there were, and one without logs none.
func TestMalformedChunksWarnOnce(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		warns  int
	}{
		{"three malformed", []string{"{oops", llmtest.Text("a"), "not json", "{", llmtest.Finish("stop")}, 1},
		{"none", []string{llmtest.Text("a"), llmtest.Finish("stop")}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Push(llmtest.Stream(tt.chunks...))
			var buf bytes.Buffer
			log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Warn})
			res, err := newTestClient(t, srv, func(c *ClientConfig) { c.Logger, c.Route = log, "test" }).Stream(context.Background(), simpleRequest("p"), nil)
			require.NoError(t, err)
			require.Equal(t, []surface.Block{surface.Text("a")}, res.Content)
			require.Equal(t, tt.warns, strings.Count(buf.String(), "malformed stream chunks"), buf.String())
			if tt.warns > 0 {
				require.Contains(t, buf.String(), "count=3")
				require.Contains(t, buf.String(), "route=test")
			}
		})
	}
}

func TestClientDefaults(t *testing.T) {
	c, err := NewClient(ClientConfig{BaseURL: "http://127.0.0.1"})
	require.NoError(t, err)
	require.Equal(t, DefaultTimeout, c.cfg.Timeout)
	require.Equal(t, DefaultIdleTimeout, c.cfg.IdleTimeout)
	require.Equal(t, int64(DefaultMaxResponseBytes), c.cfg.MaxResponseBytes)
}

func TestNewClientConfig(t *testing.T) {
	_, err := NewClient(ClientConfig{})
	require.ErrorContains(t, err, "no base URL")
	_, err = NewClient(ClientConfig{BaseURL: "api.deepseek.com"})
	require.ErrorContains(t, err, "must start with http")
	c, err := NewClient(ClientConfig{BaseURL: "https://api.deepseek.com/ "})
	require.NoError(t, err)
	require.Equal(t, "https://api.deepseek.com/chat/completions", c.URL())
}

func TestClientExtraHeadersAndNoKey(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Push(llmtest.TextReply(1, 1, "x"))
	c := newTestClient(t, srv, func(c *ClientConfig) {
		c.APIKey = ""
		c.Header = http.Header{"Openai-Organization": {"org-1"}}
		c.UserAgent = "weir-test"
	})
	_, err := c.Stream(context.Background(), simpleRequest("p"), nil)
	require.NoError(t, err)
	h := srv.Requests()[0].Header
	require.Empty(t, h.Get("Authorization"))
	require.Equal(t, "org-1", h.Get("Openai-Organization"))
	require.Equal(t, "weir-test", h.Get("User-Agent"))
}

func TestClientEncodeFailure(t *testing.T) {
	srv := llmtest.NewServer(t)
	res, err := newTestClient(t, srv, nil).Stream(context.Background(), &Request{Config: surface.CallConfig{Provider: "p"}}, nil)
	require.ErrorIs(t, err, ErrBadRequest)
	require.Nil(t, res, "nothing was dispatched")
	require.Empty(t, srv.Requests())
}

func TestFinishOf(t *testing.T) {
	for raw, want := range map[string]FinishReason{"stop": FinishStop, "length": FinishMaxTokens, "tool_calls": FinishToolCalls,
		"function_call": FinishToolCalls, "content_filter": FinishContentFilter, "weird": "weird"} {
		require.Equal(t, want, finishOf(raw), raw)
	}
}

func TestIsOverflowWordings(t *testing.T) {
	require.True(t, isOverflow("Context Window exceeded"))
	require.False(t, isOverflow("Invalid value for temperature"))
	require.False(t, strings.Contains(shorten(strings.Repeat("é", 600)), "\uFFFD"), "shorten cuts at rune boundaries")
}

// TestRetryAfter checks the provider's requested delay: seconds, an HTTP
// date, milliseconds, and values that must not overflow or go negative.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"none", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{"fraction", http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{"date", http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{"date in the past", http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0},
		{"milliseconds win", http.Header{"Retry-After": {"7"}, "Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{"an hour is kept whole", http.Header{"Retry-After": {"3600"}}, time.Hour},
		{"huge seconds are capped", http.Header{"Retry-After": {"1e30"}}, maxRetryAfter},
		{"huge milliseconds are capped", http.Header{"Retry-After-Ms": {"1e30"}}, maxRetryAfter},
		{"Inf is capped", http.Header{"Retry-After": {"Inf"}}, maxRetryAfter},
		{"NaN is no delay", http.Header{"Retry-After": {"NaN"}}, 0},
		{"negative is no delay", http.Header{"Retry-After": {"-5"}}, 0},
		{"far date is capped", http.Header{"Retry-After": {"Fri, 31 Dec 9999 23:59:59 GMT"}}, maxRetryAfter},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, retryAfter(tt.header, now))
		})
	}
}
