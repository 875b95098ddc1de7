package eval

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/host/llm"
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
	enc     *prefixEncoder
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
		if u.enc == nil || u.enc.bpe != bpe {
			u.enc = newPrefixEncoder(bpe)
		}
		ids := u.enc.encode(text)
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

// renderer renders the counting text of a request straight from the
// request, without encoding its body and reading it back: the same text
// wirePrompt reads of EncodeRequest's body (TestRenderEqualsWire holds it
// to that for every request of several sessions). It keeps the tools'
// text of the previous request, which rarely changes.
type renderer struct {
	tools     []jsontext.Value
	toolsText string
	msgs      []tokenizer.Message
	buf       []byte // the text, rendered in place before one copy
}

// render is wirePrompt(llm.EncodeRequest(req)) for a request that
// encodes. A request that does not is the encoder's to refuse: render
// then returns the encoder's error.
func (r *renderer) render(req *llm.Request) (requestText, error) {
	if !slices.EqualFunc(r.tools, req.Tools, func(a, b jsontext.Value) bool { return bytes.Equal(a, b) }) {
		var tools strings.Builder
		for _, t := range req.Tools {
			wt, err := llm.WireTool(t)
			if err != nil {
				return requestText{}, encodeError(req)
			}
			tools.Write(wt)
			tools.WriteByte('\n')
		}
		r.tools, r.toolsText = slices.Clone(req.Tools), tools.String()
	}
	wire, reasoning := llm.WireMessages(req)
	msgs := r.msgs[:0]
	var system []string
	for i, m := range wire {
		if m == nil {
			return requestText{}, encodeError(req)
		}
		switch m.Role {
		case surface.RoleSystem:
			if text, ok := joinText(m.Content); ok {
				system = append(system, text)
				msgs = append(msgs, tokenizer.Message{Role: "system", Content: text})
			}
		case surface.RoleUser:
			images := false
			for j := range m.Content {
				b := &m.Content[j]
				switch b.Type {
				case surface.BlockToolResult:
					if b.ToolCallID == "" {
						return requestText{}, encodeError(req)
					}
					text, _ := joinText(b.Content)
					msgs = append(msgs, tokenizer.Message{Role: "tool", Content: text})
				case "image":
					images = true
				}
			}
			// A message with images is sent as parts, its text parts
			// read back joined as joinText joins them.
			if text, ok := joinText(m.Content); ok || images {
				msgs = append(msgs, tokenizer.Message{Role: "user", Content: text})
			}
		case surface.RoleAssistant:
			text, hasText := joinText(m.Content)
			var calls []tokenizer.ToolCall
			withReasoning := false
			for j := range m.Content {
				b := &m.Content[j]
				switch b.Type {
				case surface.BlockReasoning:
					withReasoning = true
				case surface.BlockToolCall:
					if b.ID == "" || b.Name == "" {
						return requestText{}, encodeError(req)
					}
					calls = append(calls, tokenizer.ToolCall{Type: "function", Name: b.Name, Arguments: b.Arguments})
				}
			}
			keep := reasoning != nil && reasoning[i]
			switch {
			case !hasText && len(calls) == 0 && !(keep && withReasoning):
				// Nothing to send: the encoder leaves it out.
			case len(calls) == 0:
				msgs = append(msgs, tokenizer.Message{Role: "assistant", Content: text})
			default:
				// See wirePrompt: the text beside tool calls is a message
				// of its own before them.
				if text != "" {
					msgs = append(msgs, tokenizer.Message{Role: "assistant", Content: text})
				}
				msgs = append(msgs, tokenizer.Message{Role: "assistant", ToolCalls: calls})
			}
		default:
			return requestText{}, encodeError(req)
		}
	}
	r.msgs = msgs
	if len(msgs) == 0 || req.Config.Model == "" {
		return requestText{}, encodeError(req)
	}
	// The generation prompt follows the conversation unless it ends with
	// tool results: render once, and base is text without it.
	gen := generationPrompt
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "system" {
			if msgs[i].Role == "tool" {
				gen = ""
			}
			break
		}
	}
	r.buf = append(r.buf[:0], r.toolsText...)
	r.buf = tokenizer.AppendChat(r.buf, msgs, false)
	r.buf = append(r.buf, gen...)
	text := string(r.buf)
	return requestText{system: strings.Join(system, "\x00"), tools: r.toolsText,
		text: text, base: text[:len(text)-len(gen)], ok: true}, nil
}

// generationPrompt is what the template appends for the model's turn.
var generationPrompt = strings.TrimPrefix(tokenizer.RenderChat(nil, true), tokenizer.RenderChat(nil, false))

// encodeError is the encoder's refusal of a request render cannot render.
func encodeError(req *llm.Request) error {
	_, err := llm.EncodeRequest(req)
	if err == nil {
		err = errors.New("eval: the request renders to no text, although it encodes")
	}
	return err
}

// joinText is a block list's text as the encoder sends it: its text
// blocks joined by a blank line; ok is false when there is none.
func joinText(content []surface.Block) (string, bool) {
	n, first := 0, -1
	for i := range content {
		if content[i].Type == surface.BlockText {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	switch n {
	case 0:
		return "", false
	case 1:
		return content[first].Text, true
	}
	parts := make([]string, 0, n)
	for i := range content {
		if content[i].Type == surface.BlockText {
			parts = append(parts, content[i].Text)
		}
	}
	return strings.Join(parts, "\n\n"), true
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
