package llm

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/surface"
)

// ProviderDeepSeek is the provider name whose wire rules differ (reasoning
// replay, see EncodeRequest).
const ProviderDeepSeek = "deepseek"

// EncodeRequest returns the exact body of the chat-completions call for req:
// a pure function of req, so the host can rebuild every sent body from the
// session log. Members, in this order: model, messages, tools (when any),
// max_tokens, temperature, stop (each when set), reasoning_effort (when the
// config sets it: the header carries an effort only for routes whose
// adapter takes one), stream true and stream_options {include_usage:
// true}.
//
// Message mapping:
//   - system messages → role "system" with their text (the head message is
//     the system prompt; later ones are in-history prompt updates);
//   - user messages → role "user" with their text as a string (several text
//     blocks joined by a blank line), or with an array of text and
//     image_url parts when the message holds images. An image block is
//     {"type":"image","url":...} or {"type":"image","data":<base64>,
//     "mediaType":...} ("mimeType" is accepted too);
//   - each tool-result block → a role "tool" message {tool_call_id,
//     content: the result's text}, emitted before the rest of its message;
//   - assistant messages → role "assistant" with content (the text, or null
//     when the message only calls tools) and tool_calls [{id, type
//     "function", function {name, arguments}}];
//   - block types a role cannot carry are left out, and a message left with
//     nothing to send is not sent;
//   - a tool call without a result, and a result that answers no call, are
//     not sent (see paired: a reply cut by the output limit mid call;
//     encoder version 1 sent them, see EncoderVersion).
//
// Tools are sent as {"type":"function","function":schema}; a schema that
// already has that form is sent as is, and an MCP-style schema
// ({name, description, inputSchema}) has inputSchema sent as parameters.
//
// Reasoning replay (provider "deepseek"). DeepSeek's Thinking Mode guide
// (https://api-docs.deepseek.com/guides/thinking_mode, "Input and Output
// Parameters" and "Tool Calls") states: between two user messages, when the
// model made no tool call, the intermediate assistant messages'
// reasoning_content need not be sent and is ignored if sent; when the model
// did make a tool call, the reasoning_content of the assistant messages
// between those two user messages must be sent back, in that request and
// in all later ones (a missing field fails the request with HTTP 400
// "Missing `reasoning_content` field in the assistant message"). So for
// DeepSeek every assistant message in a span between user messages that
// contains a tool call carries reasoning_content (its reasoning blocks
// concatenated, "" when it has none); other assistant messages carry none.
// A user-role message holding only tool results does not end a span (it
// becomes role "tool" messages on the wire). Other providers never receive
// reasoning.
func EncodeRequest(req *Request) ([]byte, error) { return encodeRequest(req, nil) }

func encodeRequest(req *Request, ec *EncodeCache) ([]byte, error) {
	v, err := encodable(req)
	if err != nil {
		return nil, err
	}
	ec.start(v)
	w := &writer{b: make([]byte, 0, 256+estimateSize(req))}
	w.raw(`{"model":`)
	w.str(req.Config.Model)
	w.raw(`,"messages":[`)
	msgs, spans := sentMessages(req, v)
	n := 0
	for i, m := range msgs {
		if m == nil {
			return nil, fmt.Errorf("llm: encode: message %d is nil", i)
		}
		keep := spans != nil && spans[i]
		if ec.copy(w, m, &n, keep) {
			continue
		}
		at, clean, before := len(w.b), w.err == nil, n
		var err error
		if n, err = w.message(m, n, keep); err != nil {
			return nil, fmt.Errorf("llm: encode: message %d (id %q): %w", i, m.ID, err)
		}
		if clean && w.err == nil {
			ec.keep(m, keep, before, n, w.b[at:])
		}
	}
	if n == 0 {
		return nil, errors.New("llm: encode: the request has no message to send")
	}
	w.raw(`]`)
	if len(req.Tools) > 0 {
		w.raw(`,"tools":[`)
		for i, t := range req.Tools {
			if i > 0 {
				w.raw(`,`)
			}
			if ec.copyTool(w, t) {
				continue
			}
			at := len(w.b)
			if err := w.tool(t); err != nil {
				return nil, fmt.Errorf("llm: encode: tool %d: %w", i, err)
			}
			if w.err == nil {
				ec.keepTool(t, w.b[at:])
			}
		}
		w.raw(`]`)
	}
	ec.finish()
	c := &req.Config
	if c.MaxTokens != nil {
		w.raw(`,"max_tokens":`)
		w.b = fmt.Appendf(w.b, "%d", *c.MaxTokens)
	}
	if err := w.sampling(c, "temperature", "stop"); err != nil {
		return nil, err
	}
	if c.ReasoningEffort != "" {
		w.raw(`,"reasoning_effort":`)
		w.str(c.ReasoningEffort)
	}
	w.raw(`,"stream":true,"stream_options":{"include_usage":true}}`)
	if w.err != nil {
		return nil, fmt.Errorf("llm: encode: %w", w.err)
	}
	return w.b, nil
}

// WireMessages returns the messages EncodeRequest writes for req, in
// order, after the pairing rule (paired), and for each whether an
// assistant message among them carries reasoning_content (the reasoning
// replay; nil for a provider other than DeepSeek). A reader of what the
// body says (host/eval's token counting) renders from these without
// encoding the body.
// It follows the request's encoder version, as EncodeRequest does; a
// version it does not know gives the current version's messages (the
// encoder refuses that request).
func WireMessages(req *Request) (msgs []*surface.Message, reasoning []bool) {
	v, err := req.encoder()
	if err != nil {
		v = EncoderVersion
	}
	return sentMessages(req, v)
}

func sentMessages(req *Request, v int) (msgs []*surface.Message, reasoning []bool) {
	msgs = req.history(v)
	if req.Config.Provider == ProviderDeepSeek {
		reasoning = toolSpans(msgs)
	}
	return msgs, reasoning
}

// WireTool returns the tool schema t as EncodeRequest sends it in tools.
func WireTool(t jsontext.Value) ([]byte, error) {
	w := &writer{}
	if err := w.tool(t); err != nil {
		return nil, err
	}
	return w.b, w.err
}

func estimateSize(req *Request) int {
	n := 0
	for _, m := range req.Messages {
		if m == nil {
			continue
		}
		for i := range m.Content {
			b := &m.Content[i]
			n += len(b.Text) + len(b.Arguments) + 64
			for j := range b.Content {
				n += len(b.Content[j].Text) + 16
			}
		}
		n += 48
	}
	for _, t := range req.Tools {
		n += len(t) + 40
	}
	return n
}

// toolSpans marks the messages that lie in a span between real user
// messages in which some assistant message calls a tool.
func toolSpans(msgs []*surface.Message) []bool {
	out := make([]bool, len(msgs))
	start, calls := 0, false
	flush := func(end int) {
		if calls {
			for k := start; k < end; k++ {
				out[k] = true
			}
		}
	}
	for i, m := range msgs {
		if m == nil {
			continue
		}
		switch m.Role {
		case surface.RoleUser:
			if userBoundary(m) {
				flush(i)
				start, calls = i+1, false
			}
		case surface.RoleAssistant:
			for j := range m.Content {
				if m.Content[j].Type == surface.BlockToolCall {
					calls = true
					break
				}
			}
		}
	}
	flush(len(msgs))
	return out
}

// userBoundary reports whether a user-role message reaches the wire as a
// user message (it holds something besides tool results).
func userBoundary(m *surface.Message) bool {
	for i := range m.Content {
		switch m.Content[i].Type {
		case surface.BlockText, "image":
			return true
		}
	}
	return false
}

type writer struct {
	b   []byte
	err error
}

func (w *writer) raw(s string) { w.b = append(w.b, s...) }

func (w *writer) str(s string) {
	var err error
	w.b, err = jsontext.AppendQuote(w.b, s)
	if err != nil && w.err == nil {
		w.err = err
	}
}

// sep writes the comma before every message but the first.
func (w *writer) sep(n int) {
	if n > 0 {
		w.raw(`,`)
	}
}

// message writes m as zero or more wire messages; n counts those written so
// far. keep makes an assistant message carry reasoning_content.
func (w *writer) message(m *surface.Message, n int, keep bool) (int, error) {
	switch m.Role {
	case surface.RoleSystem:
		text, ok := joinText(m.Content)
		if !ok {
			return n, nil
		}
		w.sep(n)
		w.raw(`{"role":"system","content":`)
		w.str(text)
		w.raw(`}`)
		return n + 1, nil
	case surface.RoleUser:
		return w.user(m, n)
	case surface.RoleAssistant:
		return w.assistant(m, n, keep)
	}
	return n, fmt.Errorf("role %q cannot be sent", m.Role)
}

// joinText joins the text blocks of content with a blank line; ok is false
// when there is none.
func joinText(content []surface.Block) (string, bool) {
	var parts []string
	for i := range content {
		if content[i].Type == surface.BlockText {
			parts = append(parts, content[i].Text)
		}
	}
	switch len(parts) {
	case 0:
		return "", false
	case 1:
		return parts[0], true
	}
	return strings.Join(parts, "\n\n"), true
}

func (w *writer) user(m *surface.Message, n int) (int, error) {
	images := 0
	for i := range m.Content {
		b := &m.Content[i]
		switch b.Type {
		case surface.BlockToolResult:
			if b.ToolCallID == "" {
				return n, fmt.Errorf("tool-result block %d has no toolCallId", i)
			}
			w.sep(n)
			w.raw(`{"role":"tool","tool_call_id":`)
			w.str(b.ToolCallID)
			w.raw(`,"content":`)
			text, _ := joinText(b.Content)
			w.str(text)
			w.raw(`}`)
			n++
		case "image":
			images++
		}
	}
	if images == 0 {
		text, ok := joinText(m.Content)
		if !ok {
			return n, nil
		}
		w.sep(n)
		w.raw(`{"role":"user","content":`)
		w.str(text)
		w.raw(`}`)
		return n + 1, nil
	}
	w.sep(n)
	w.raw(`{"role":"user","content":[`)
	k := 0
	for i := range m.Content {
		b := &m.Content[i]
		switch b.Type {
		case surface.BlockText:
			if k > 0 {
				w.raw(`,`)
			}
			w.raw(`{"type":"text","text":`)
			w.str(b.Text)
			w.raw(`}`)
			k++
		case "image":
			url, err := imageURL(b)
			if err != nil {
				return n, fmt.Errorf("image block %d: %w", i, err)
			}
			if k > 0 {
				w.raw(`,`)
			}
			w.raw(`{"type":"image_url","image_url":{"url":`)
			w.str(url)
			w.raw(`}}`)
			k++
		}
	}
	w.raw(`]}`)
	return n + 1, nil
}

// imageURL returns the URL of an image block: its url, or a data URL built
// from its base64 data and media type.
func imageURL(b *surface.Block) (string, error) {
	var img struct {
		URL       string `json:"url"`
		Data      string `json:"data"`
		MediaType string `json:"mediaType"`
		MimeType  string `json:"mimeType"`
	}
	if len(b.Unknown) == 0 {
		return "", errors.New("it has neither url nor data")
	}
	if err := json.Unmarshal(b.Unknown, &img); err != nil {
		return "", fmt.Errorf("unreadable: %w", err)
	}
	if img.URL != "" {
		return img.URL, nil
	}
	if img.Data == "" {
		return "", errors.New("it has neither url nor data")
	}
	mt := img.MediaType
	if mt == "" {
		mt = img.MimeType
	}
	if mt == "" {
		return "", errors.New("it has data but no mediaType")
	}
	return "data:" + mt + ";base64," + img.Data, nil
}

func (w *writer) assistant(m *surface.Message, n int, keep bool) (int, error) {
	text, hasText := joinText(m.Content)
	var reasoning []string
	calls := 0
	for i := range m.Content {
		switch m.Content[i].Type {
		case surface.BlockReasoning:
			reasoning = append(reasoning, m.Content[i].Text)
		case surface.BlockToolCall:
			calls++
		}
	}
	if !hasText && calls == 0 && !(keep && len(reasoning) > 0) {
		return n, nil
	}
	w.sep(n)
	w.raw(`{"role":"assistant","content":`)
	if hasText || calls == 0 {
		w.str(text)
	} else {
		w.raw(`null`)
	}
	if keep {
		w.raw(`,"reasoning_content":`)
		w.str(strings.Join(reasoning, ""))
	}
	if calls > 0 {
		w.raw(`,"tool_calls":[`)
		k := 0
		for i := range m.Content {
			b := &m.Content[i]
			if b.Type != surface.BlockToolCall {
				continue
			}
			if b.ID == "" || b.Name == "" {
				return n, fmt.Errorf("tool-call block %d needs an id and a name", i)
			}
			if k > 0 {
				w.raw(`,`)
			}
			w.raw(`{"id":`)
			w.str(b.ID)
			w.raw(`,"type":"function","function":{"name":`)
			w.str(b.Name)
			w.raw(`,"arguments":`)
			w.str(b.Arguments)
			w.raw(`}}`)
			k++
		}
		w.raw(`]`)
	}
	w.raw(`}`)
	return n + 1, nil
}

// tool writes one tool schema in the OpenAI function form.
func (w *writer) tool(t jsontext.Value) error {
	compact, err := jsontext.AppendFormat(nil, t)
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if jsontext.Value(compact).Kind() != '{' {
		return errors.New("a tool schema must be a JSON object")
	}
	var head struct {
		Type        string         `json:"type"`
		Function    jsontext.Value `json:"function"`
		Name        string         `json:"name"`
		Description *string        `json:"description"`
		Parameters  jsontext.Value `json:"parameters"`
		InputSchema jsontext.Value `json:"inputSchema"`
	}
	if err := json.Unmarshal(compact, &head); err != nil {
		return fmt.Errorf("unreadable schema: %w", err)
	}
	switch {
	case head.Type == "function" && len(head.Function) > 0:
		w.b = append(w.b, compact...)
	case head.Name == "":
		return errors.New("the schema has no name")
	case len(head.Parameters) == 0 && len(head.InputSchema) > 0:
		w.raw(`{"type":"function","function":{"name":`)
		w.str(head.Name)
		if head.Description != nil {
			w.raw(`,"description":`)
			w.str(*head.Description)
		}
		w.raw(`,"parameters":`)
		w.b = append(w.b, head.InputSchema...)
		w.raw(`}}`)
	default:
		w.raw(`{"type":"function","function":`)
		w.b = append(w.b, compact...)
		w.raw(`}`)
	}
	return nil
}
