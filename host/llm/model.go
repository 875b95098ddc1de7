package llm

import (
	"context"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/surface"
)

// Request is one model call as the agent loop builds it from the session
// fold (spec 7.5): the header's config, the derived surface history and the
// header's tools. A leading system-role message is the system prompt; there
// is no separate system field. Requests are read-only: implementations never
// modify them or their messages.
type Request struct {
	Config    surface.CallConfig
	Messages  []*surface.Message
	Tools     []jsontext.Value
	SessionID string
	// API is the API whose adapter sent the request, when known: a
	// request rebuilt from a log takes it from the attempt's stream
	// record. "" leaves it to the model: a Client encodes for its own
	// API and refuses a request that names another.
	API API
	// Encoder is the encoder version the body is written by (see
	// EncoderVersion); 0 is this build's. A request rebuilt from a log
	// takes it from the attempt's stream record, so its Body is the body
	// then sent.
	Encoder int
}

// Body returns the exact wire body of r for r.API ("" is APIOpenAI).
func (r *Request) Body() ([]byte, error) { return Encode(r.API, r) }

// Model streams one reply.
//
// Stream sends req, reports incremental output to on (which may be nil) as
// it arrives and returns the settled reply. Whenever the request was
// dispatched the returned *Result is non-nil, also alongside an error: it
// then holds what was delivered before the failure and a Stream record that
// ends with the failure, so the loop can record the attempt. The error is an
// *Error whose Code names the failure.
type Model interface {
	Stream(ctx context.Context, req *Request, on func(Delta)) (*Result, error)
}

// DeltaKind says what a Delta carries.
type DeltaKind uint8

// Delta kinds.
const (
	DeltaText DeltaKind = iota + 1
	DeltaReasoning
	DeltaToolCall
)

func (k DeltaKind) String() string {
	switch k {
	case DeltaText:
		return "text"
	case DeltaReasoning:
		return "reasoning"
	case DeltaToolCall:
		return "tool-call"
	}
	return "unknown"
}

// Delta is one piece of streamed output, for live display.
type Delta struct {
	Kind DeltaKind
	// Text is the text or reasoning fragment, or for a tool call the
	// fragment of its arguments (possibly empty).
	Text string
	// Call is the tool call's position among this reply's tool calls.
	Call int
	// ID and Name are the tool call's id and name when this piece carries
	// them (normally the first piece of each call).
	ID, Name string
}

// FinishReason says why the model stopped.
type FinishReason string

// Finish reasons. A provider reason not listed here is kept as the
// provider wrote it.
const (
	FinishStop          FinishReason = "stop"
	FinishMaxTokens     FinishReason = "max-tokens"
	FinishToolCalls     FinishReason = "tool-calls"
	FinishContentFilter FinishReason = "content-filter"
)

// finishOf maps an OpenAI-compatible finish_reason, an Anthropic
// stop_reason or a Gemini finishReason to a FinishReason.
func finishOf(raw string) FinishReason {
	switch raw {
	case "stop", "end_turn", "stop_sequence":
		return FinishStop
	case "length", "max_tokens":
		return FinishMaxTokens
	case "tool_calls", "function_call", "tool_use":
		return FinishToolCalls
	case "content_filter", "refusal", "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return FinishContentFilter
	case "STOP":
		return FinishStop
	case "MAX_TOKENS":
		return FinishMaxTokens
	}
	return FinishReason(raw)
}

// Result is a settled reply.
type Result struct {
	// Content is the assistant output in provider order: reasoning, text
	// and tool-call blocks. Consecutive fragments of one kind form one
	// block; each tool call is one block at the position it started.
	Content []surface.Block
	// Usage is the provider-reported usage, nil when none was reported.
	Usage *surface.Usage
	// FinishReason is empty when the reply did not finish.
	FinishReason FinishReason
	// Stream is the attempt's provider stream record (see Reassemble): what
	// the session log stores in assistant/message.stream and
	// assistant/attempt.stream.
	Stream jsontext.Value
}

// ToolCalls returns the tool-call blocks of r in order.
func (r *Result) ToolCalls() []surface.Block {
	var out []surface.Block
	for _, b := range r.Content {
		if b.Type == surface.BlockToolCall {
			out = append(out, b)
		}
	}
	return out
}
