package llmtest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// quote returns s as a JSON string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

const chunkHead = `{"id":"chatcmpl-llmtest","object":"chat.completion.chunk","created":1700000000,"model":"llmtest","choices":[`

func choice(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = quote(finish)
	}
	return chunkHead + `{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + f + `}]}`
}

// Role is the opening chunk: role assistant and empty content.
func Role() string { return choice(`{"role":"assistant","content":""}`, "") }

// Text is a chunk carrying a text fragment.
func Text(s string) string { return choice(`{"content":`+quote(s)+`}`, "") }

// Reasoning is a chunk carrying a reasoning fragment (DeepSeek's
// reasoning_content, with content null as DeepSeek sends it).
func Reasoning(s string) string {
	return choice(`{"content":null,"reasoning_content":`+quote(s)+`}`, "")
}

// ToolCall is a chunk carrying part of tool call index: id and name are
// omitted when empty, args is the arguments fragment.
func ToolCall(index int, id, name, args string) string {
	var b strings.Builder
	b.WriteString(`{"tool_calls":[{"index":`)
	b.WriteString(strconv.Itoa(index))
	if id != "" {
		b.WriteString(`,"id":` + quote(id) + `,"type":"function"`)
	}
	b.WriteString(`,"function":{`)
	if name != "" {
		b.WriteString(`"name":` + quote(name) + `,`)
	}
	b.WriteString(`"arguments":` + quote(args) + `}}]}`)
	return choice(b.String(), "")
}

// Finish is the chunk carrying finish_reason (e.g. "stop", "length",
// "tool_calls").
func Finish(reason string) string { return choice(`{}`, reason) }

// Usage is the final usage chunk (empty choices) in OpenAI's shape:
// prompt_tokens_details.cached_tokens and
// completion_tokens_details.reasoning_tokens.
func Usage(prompt, completion, cached, reasoning int) string {
	return fmt.Sprintf(`{"id":"chatcmpl-llmtest","object":"chat.completion.chunk","created":1700000000,"model":"llmtest","choices":[],`+
		`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,`+
		`"prompt_tokens_details":{"cached_tokens":%d},"completion_tokens_details":{"reasoning_tokens":%d}}}`,
		prompt, completion, prompt+completion, cached, reasoning)
}

// DeepSeekUsage is the final usage chunk in DeepSeek's shape, with
// prompt_cache_hit_tokens and prompt_cache_miss_tokens.
func DeepSeekUsage(hit, miss, completion, reasoning int) string {
	return fmt.Sprintf(`{"id":"chatcmpl-llmtest","object":"chat.completion.chunk","created":1700000000,"model":"deepseek-chat","choices":[],`+
		`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_cache_hit_tokens":%d,"prompt_cache_miss_tokens":%d,`+
		`"completion_tokens_details":{"reasoning_tokens":%d}}}`,
		hit+miss, completion, hit+miss+completion, hit, miss, reasoning)
}

// Stream is a 200 event-stream reply of chunks ending with [DONE].
func Stream(chunks ...string) Reply { return Reply{Chunks: chunks} }

// TextReply streams pieces as text, then finish "stop" and a usage chunk.
func TextReply(prompt, completion int, pieces ...string) Reply {
	cs := []string{Role()}
	for _, p := range pieces {
		cs = append(cs, Text(p))
	}
	cs = append(cs, Finish("stop"), Usage(prompt, completion, 0, 0))
	return Stream(cs...)
}

// Drop streams chunks, then drops the connection mid-stream.
func Drop(chunks ...string) Reply { return Reply{Chunks: chunks, End: EndDrop} }

// Error is a status reply with an OpenAI-shaped error body.
func Error(status int, typ, code, message string) Reply {
	c := "null"
	if code != "" {
		c = quote(code)
	}
	return Reply{Status: status, Body: []byte(`{"error":{"message":` + quote(message) + `,"type":` + quote(typ) + `,"param":null,"code":` + c + `}}`)}
}

// RateLimited is a 429 with the given Retry-After value (seconds or an
// HTTP date; omitted when empty).
func RateLimited(retryAfter string) Reply {
	r := Error(http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later.")
	if retryAfter != "" {
		r.Header = http.Header{"Retry-After": {retryAfter}}
	}
	return r
}

// ContextOverflow is OpenAI's 400 for a request over the context window.
func ContextOverflow() Reply {
	return Error(http.StatusBadRequest, "invalid_request_error", "context_length_exceeded",
		"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.")
}

// Unauthorized is a 401 for a wrong API key.
func Unauthorized() Reply {
	return Error(http.StatusUnauthorized, "authentication_error", "invalid_api_key", "Authentication Fails, Your api key is invalid")
}
