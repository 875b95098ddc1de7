// Package llmtest is a loopback model server for tests, speaking the
// OpenAI-compatible chat-completions protocol ([NewServer]) or, with
// [NewServerFor], Anthropic's Messages API (POST /v1/messages, named SSE
// events message_start … message_stop) or Google's Gemini API (POST
// /v1beta/models/MODEL:streamGenerateContent?alt=sse, a
// GenerateContentResponse per event, closed after the last).
//
// A [Server] listens on 127.0.0.1 and answers POST <URL>/chat/completions
// with the replies queued by [Server.Push], one reply per request, in order.
// A reply is either a real text/event-stream (each chunk written as
// "data: <json>" plus a blank line and flushed, then "data: [DONE]"), a raw
// byte stream written verbatim (to test CRLF, comments, multi-line data), or
// a plain status and body (429 with Retry-After, 400 context overflow, 401).
// A stream can end with [DONE], end cleanly without it, or drop the
// connection mid-stream, and can stall to exercise timeouts and
// cancellation.
//
// Every request is recorded: method, path, headers and the body
// byte-for-byte ([Server.Requests]), so tests can compare the wire bytes
// with requests rebuilt from a session log.
//
// The chunk builders ([Text], [Reasoning], [ToolCall], [Finish], [Usage])
// produce chat.completion.chunk JSON in the shape OpenAI and DeepSeek send;
// [MessageStart], [TextDelta], [InputJSONDelta], [MessageDelta] and the
// other Anthropic builders produce named events, and [GeminiParts] with
// [GeminiTextPart], [GeminiCallPart] and [GeminiUsage] Gemini chunks, each
// as a raw piece of a Reply ([AnthropicStream], [GeminiStream]).
package llmtest
