package llmtest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Anthropic Messages stream events, in the shape the API sends: each is
// "event: NAME\ndata: JSON\n\n", written as one raw piece of a Reply (see
// AnthropicStream).

// AnthropicEvent is one named SSE event.
func AnthropicEvent(name, data string) string {
	return "event: " + name + "\ndata: " + data + "\n\n"
}

// MessageStart opens a message; its usage holds input_tokens (uncached),
// cache_read_input_tokens and cache_creation_input_tokens.
func MessageStart(input, cacheRead, cacheWrite int) string {
	return AnthropicEvent("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_llmtest","type":"message","role":"assistant",`+
		`"model":"claude-llmtest","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,`+
		`"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":1}}}`, input, cacheWrite, cacheRead))
}

// TextStart opens text content block index.
func TextStart(index int) string {
	return AnthropicEvent("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, index))
}

// ThinkingStart opens thinking content block index.
func ThinkingStart(index int) string {
	return AnthropicEvent("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"thinking","thinking":""}}`, index))
}

// RedactedThinkingStart is content block index of type
// redacted_thinking: its encrypted data comes whole, with no delta.
func RedactedThinkingStart(index int, data string) string {
	return AnthropicEvent("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"redacted_thinking","data":%s}}`, index, quote(data)))
}

// ToolUseStart opens tool_use content block index.
func ToolUseStart(index int, id, name string) string {
	return AnthropicEvent("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%s,"name":%s,"input":{}}}`,
		index, quote(id), quote(name)))
}

func blockDelta(index int, delta string) string {
	return AnthropicEvent("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, index, delta))
}

// TextDelta is a text_delta of block index.
func TextDelta(index int, s string) string {
	return blockDelta(index, `{"type":"text_delta","text":`+quote(s)+`}`)
}

// ThinkingDelta is a thinking_delta of block index.
func ThinkingDelta(index int, s string) string {
	return blockDelta(index, `{"type":"thinking_delta","thinking":`+quote(s)+`}`)
}

// SignatureDelta is the signature_delta that closes a thinking block.
func SignatureDelta(index int, sig string) string {
	return blockDelta(index, `{"type":"signature_delta","signature":`+quote(sig)+`}`)
}

// InputJSONDelta is an input_json_delta (a fragment of a tool's input) of
// block index.
func InputJSONDelta(index int, partial string) string {
	return blockDelta(index, `{"type":"input_json_delta","partial_json":`+quote(partial)+`}`)
}

// BlockStop closes block index.
func BlockStop(index int) string {
	return AnthropicEvent("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, index))
}

// MessageDelta carries the stop_reason and the cumulative output_tokens.
func MessageDelta(stopReason string, output int) string {
	return AnthropicEvent("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%s,"stop_sequence":null},"usage":{"output_tokens":%d}}`,
		quote(stopReason), output))
}

// MessageStop ends the message.
func MessageStop() string { return AnthropicEvent("message_stop", `{"type":"message_stop"}`) }

// Ping is the keep-alive event.
func Ping() string { return AnthropicEvent("ping", `{"type": "ping"}`) }

// AnthropicStreamError is a mid-stream error event (e.g. overloaded_error).
func AnthropicStreamError(typ, message string) string {
	return AnthropicEvent("error", `{"type":"error","error":{"type":`+quote(typ)+`,"message":`+quote(message)+`}}`)
}

// AnthropicStream is a 200 event-stream reply of events (ending when they
// do: the Messages API has no [DONE]).
func AnthropicStream(events ...string) Reply { return Reply{Raw: events} }

// AnthropicText is a whole text reply: message_start, one text block of
// pieces, message_delta end_turn, message_stop.
func AnthropicText(input, output int, pieces ...string) Reply {
	ev := []string{MessageStart(input, 0, 0), TextStart(0), Ping()}
	for _, p := range pieces {
		ev = append(ev, TextDelta(0, p))
	}
	ev = append(ev, BlockStop(0), MessageDelta("end_turn", output), MessageStop())
	return AnthropicStream(ev...)
}

// AnthropicError is a status reply with the Messages API's error body
// ({"type":"error","error":{"type","message"}}) and a request-id header.
func AnthropicError(status int, typ, message string) Reply {
	return Reply{Status: status, Header: http.Header{"Request-Id": {"req_llmtest"}},
		Body: []byte(`{"type":"error","error":{"type":` + quote(typ) + `,"message":` + quote(message) + `}}`)}
}

// Gemini streamGenerateContent?alt=sse chunks: each a GenerateContentResponse
// written as "data: JSON\r\n\r\n"; the stream ends by closing (there is no
// [DONE]).

// GeminiChunk is one raw SSE piece carrying a GenerateContentResponse.
func GeminiChunk(json string) string { return "data: " + json + "\r\n\r\n" }

// GeminiParts is a chunk of candidate 0 with the given parts (JSON
// objects), finishReason when not empty and usage (a usageMetadata object)
// when not empty.
func GeminiParts(finish, usage string, parts ...string) string {
	return GeminiResponse("resp-llmtest", finish, usage, parts...)
}

// GeminiResponse is GeminiParts with the given responseId (the client
// names the calls of a reply "<responseId>-<n>").
func GeminiResponse(responseID, finish, usage string, parts ...string) string {
	var b strings.Builder
	b.WriteString(`{"candidates":[{"content":{"parts":[`)
	b.WriteString(strings.Join(parts, ","))
	b.WriteString(`],"role":"model"}`)
	if finish != "" {
		b.WriteString(`,"finishReason":` + quote(finish))
	}
	b.WriteString(`,"index":0}]`)
	if usage != "" {
		b.WriteString(`,"usageMetadata":` + usage)
	}
	b.WriteString(`,"modelVersion":"gemini-llmtest","responseId":` + quote(responseID) + `}`)
	return GeminiChunk(b.String())
}

// GeminiTextPart is a text part.
func GeminiTextPart(s string) string { return `{"text":` + quote(s) + `}` }

// GeminiThoughtPart is a thought-summary part.
func GeminiThoughtPart(s string) string { return `{"text":` + quote(s) + `,"thought":true}` }

// GeminiCallPart is a functionCall part with args (a JSON object) and,
// when not empty, a thoughtSignature.
func GeminiCallPart(name, args, signature string) string {
	p := `{"functionCall":{"name":` + quote(name) + `,"args":` + args + `}`
	if signature != "" {
		p += `,"thoughtSignature":` + quote(signature)
	}
	return p + `}`
}

// GeminiUsage is a usageMetadata object: promptTokenCount includes
// cachedContentTokenCount, candidatesTokenCount excludes thoughtsTokenCount.
func GeminiUsage(prompt, cached, candidates, thoughts int) string {
	u := `{"promptTokenCount":` + strconv.Itoa(prompt) + `,"candidatesTokenCount":` + strconv.Itoa(candidates) +
		`,"totalTokenCount":` + strconv.Itoa(prompt+candidates+thoughts)
	if cached > 0 {
		u += `,"cachedContentTokenCount":` + strconv.Itoa(cached)
	}
	if thoughts > 0 {
		u += `,"thoughtsTokenCount":` + strconv.Itoa(thoughts)
	}
	return u + `}`
}

// GeminiStream is a 200 event-stream reply of chunks, closed after the
// last.
func GeminiStream(chunks ...string) Reply { return Reply{Raw: chunks} }

// GeminiText is a whole text reply: pieces, then finishReason STOP with
// usage.
func GeminiText(prompt, output int, pieces ...string) Reply {
	var cs []string
	for i, p := range pieces {
		if i == len(pieces)-1 {
			cs = append(cs, GeminiParts("STOP", GeminiUsage(prompt, 0, output, 0), GeminiTextPart(p)))
		} else {
			cs = append(cs, GeminiParts("", "", GeminiTextPart(p)))
		}
	}
	return GeminiStream(cs...)
}

// GeminiError is a status reply with Google's error body
// ({"error":{"code","message","status"}}), with a RetryInfo detail when
// retryDelay is not empty.
func GeminiError(status int, state, message, retryDelay string) Reply {
	details := ""
	if retryDelay != "" {
		details = `,"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":` + quote(retryDelay) + `}]`
	}
	return Reply{Status: status, Body: []byte(`{"error":{"code":` + strconv.Itoa(status) + `,"message":` + quote(message) +
		`,"status":` + quote(state) + details + `}}`)}
}

// GeminiBlocked is the chunk of a blocked prompt: promptFeedback with
// blockReason and no candidate, with usage (a usageMetadata object) when
// not empty.
func GeminiBlocked(reason, usage string) string {
	c := `{"promptFeedback":{"blockReason":` + quote(reason) + `}`
	if usage != "" {
		c += `,"usageMetadata":` + usage
	}
	return GeminiChunk(c + `,"responseId":"resp-llmtest"}`)
}

// GeminiStreamError is a mid-stream error chunk.
func GeminiStreamError(code int, state, message string) string {
	return GeminiChunk(`{"error":{"code":` + strconv.Itoa(code) + `,"message":` + quote(message) + `,"status":` + quote(state) + `}}`)
}
