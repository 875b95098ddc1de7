package eval

import (
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

// UsageModel is how a replay prices a request of a set other than the
// baseline, whose requests the provider never saw: the provider's
// counting modelled on the request's wire body (the OpenAI-compatible
// JSON the loop sends). A recorded usage belongs to the recorded request
// only; giving it to another set's request would tell that set's meter
// the baseline's sizes, and it would compact at the baseline's times.
//
// The model, for one request:
//   - its prompt is the tools' JSON, one a line, then the messages
//     through the DeepSeek V3 chat template (tokenizer.RenderChat), an
//     assistant message's text beside its tool calls rendered as an
//     assistant message of its own before them (the template has no place
//     for it, the wire carries it);
//   - the prompt tokens are the route's tokenizer's (Counter) count of it;
//   - the cached tokens (CacheRead) are the longest common token prefix
//     with the previous request the model priced (for a counter that is
//     not a BPE tokenizer: the count of the longest common text prefix);
//   - Input is the prompt tokens minus the cached ones; Output is the
//     recorded reply's.
//
// A provider that reports usage this way (the tests' loopback server does)
// gives a live run of the set the usage the replay gives it, exactly.
type UsageModel struct {
	Counter tokenizer.Counter
	prevIDs []int
	prev    string
}

// Usage prices the request whose wire body is body and records it as the
// previous request.
func (u *UsageModel) Usage(body []byte, output int64) (surface.Usage, error) {
	text, err := WirePrompt(body)
	if err != nil {
		return surface.Usage{}, err
	}
	return u.price(text, output), nil
}

// price is Usage for a request's prompt text.
func (u *UsageModel) price(text string, output int64) surface.Usage {
	var total, cached int64
	if bpe, ok := u.Counter.(*tokenizer.Tokenizer); ok {
		ids := bpe.Encode(text)
		total, cached = int64(len(ids)), int64(commonPrefix(u.prevIDs, ids))
		u.prevIDs = ids
	} else {
		total = int64(u.Counter.Count(text))
		if u.prev != "" {
			cached = int64(u.Counter.Count(text[:commonStringPrefix(u.prev, text)]))
		}
		u.prev = text
	}
	return surface.Usage{Input: total - cached, CacheRead: cached, Output: output}
}

// wireBody is what WirePrompt reads of an OpenAI-compatible request body.
type wireBody struct {
	Messages []struct {
		Role      string         `json:"role"`
		Content   jsontext.Value `json:"content"`
		ToolCalls []struct {
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []jsontext.Value `json:"tools"`
}

// WirePrompt is the prompt text UsageModel counts for an OpenAI-compatible
// request body: what the model reads of the request, every token of it.
func WirePrompt(body []byte) (string, error) {
	p, err := wirePrompt(body)
	return p.text, err
}

// requestText is what a request renders to for counting.
type requestText struct {
	system, tools, text string
	// base is text without the generation prompt: what a continuation of
	// the conversation extends.
	base string
	ok   bool
}

func wirePrompt(body []byte) (requestText, error) {
	var w wireBody
	if err := json.Unmarshal(body, &w, json.RejectUnknownMembers(false)); err != nil {
		return requestText{}, fmt.Errorf("eval: the request body does not read: %w", err)
	}
	var tools strings.Builder
	for _, t := range w.Tools {
		tools.Write(t)
		tools.WriteByte('\n')
	}
	var system []string
	msgs := make([]tokenizer.Message, 0, len(w.Messages))
	for _, m := range w.Messages {
		text := wireText(m.Content)
		switch {
		case m.Role == "system":
			system = append(system, text)
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			// The template renders no content beside tool calls; the wire
			// carries it, so it is an assistant message of its own before
			// the calls.
			if text != "" {
				msgs = append(msgs, tokenizer.Message{Role: "assistant", Content: text})
			}
			tm := tokenizer.Message{Role: "assistant"}
			for _, c := range m.ToolCalls {
				tm.ToolCalls = append(tm.ToolCalls, tokenizer.ToolCall{Type: c.Type, Name: c.Function.Name, Arguments: c.Function.Arguments})
			}
			msgs = append(msgs, tm)
			continue
		}
		msgs = append(msgs, tokenizer.Message{Role: m.Role, Content: text})
	}
	t := tools.String()
	return requestText{system: strings.Join(system, "\x00"), tools: t,
		text: t + tokenizer.RenderChat(msgs, true), base: t + tokenizer.RenderChat(msgs, false), ok: true}, nil
}

// wireText is a message content's text: a string, or the text parts of an
// array of parts joined by "\n\n"; null is "".
func wireText(v jsontext.Value) string {
	if len(v) == 0 || v.Kind() == 'n' {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(v, &parts, json.RejectUnknownMembers(false)) != nil {
		return ""
	}
	var text []string
	for _, p := range parts {
		if p.Type == "text" {
			text = append(text, p.Text)
		}
	}
	return strings.Join(text, "\n\n")
}
