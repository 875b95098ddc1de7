package llm

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/surface"
)

// DefaultAnthropicMaxTokens is the max_tokens the Anthropic adapter sends
// when the config sets none: the Messages API requires the member.
const DefaultAnthropicMaxTokens = 8192

// minThinkingBudget is the smallest budget_tokens the Messages API takes.
const minThinkingBudget = 1024

// ReasoningEfforts are the values of a route's reasoningEffort, "" aside
// (the API's default): sent as reasoning_effort by the OpenAI-compatible
// adapter, as a thinking budget by the others (see thinkingBudget).
var ReasoningEfforts = []string{"none", "minimal", "low", "medium", "high"}

// thinkingBudget maps a reasoning effort, the one route setting every API
// reads (OpenAI-compatible reasoning_effort), to a thinking budget in
// tokens for the APIs that take a budget (Anthropic budget_tokens, Gemini
// thinkingBudget): minimal 1024, low 4096, medium 8192, high 16384, and
// none 0 (thinking off). ok is false for "" and any other word: nothing is
// sent.
func thinkingBudget(effort string) (budget int64, ok bool) {
	switch effort {
	case "none":
		return 0, true
	case "minimal":
		return 1024, true
	case "low":
		return 4096, true
	case "medium":
		return 8192, true
	case "high":
		return 16384, true
	}
	return 0, false
}

// cacheMark is the cache breakpoint the Anthropic adapter places.
const cacheMark = `,"cache_control":{"type":"ephemeral"}}`

// EncodeAnthropic returns the exact body of the Messages API call for req,
// a pure function of req. Members, in this order: model, max_tokens
// (config.maxTokens, else DefaultAnthropicMaxTokens), system (when the head
// message is a system message with text), messages, tools (when any),
// temperature, stop_sequences (each when set), thinking (when the config
// sets a reasoningEffort, see thinkingBudget: {"type":"enabled",
// "budget_tokens":N}, N clamped below max_tokens; none when that leaves
// less than the API's minimum of 1024), stream true.
//
// Thinking and temperature: the Messages API refuses a temperature other
// than 1 when thinking is on ("temperature may only be set to 1 when
// thinking is enabled"). A config that sets both (a request handler's
// temperature on a route with a reasoningEffort) sends thinking and no
// temperature: the route asked for thinking, the temperature is a
// sampling hint the API cannot honour with it. The Client logs a warning
// for every such request (see droppedTemperature).
//
// Thinking in a tool loop: with thinking on, the API refuses a request
// that continues a tool loop (its last message answers tool calls) whose
// assistant message does not start with a thinking or redacted_thinking
// block ("a final assistant message must start with a thinking block").
// That happens when thinking was turned on during the loop, or the
// reasoning of that message came from another API (see signatureFor). Such
// a request goes out without thinking, as the API advises; thinking
// resumes with the next request that does not continue such a loop.
//
// Node 0: a leading system message becomes the system member, one text
// block; an empty head sends no system. A later system message that
// survives on the surface (an imported log, an in-history route's update)
// is sent at its position as user text wrapped in <system>…</system>
// (the API has no system role inside messages).
//
// Messages: user text and images become text and image blocks (an image
// url as a "url" source, base64 data as a "base64" source); tool results
// become tool_result blocks {tool_use_id, content, is_error when set},
// placed before the message's other blocks as the API requires; assistant
// reasoning with a recorded signature becomes a thinking block, also when
// its text is empty (without a signature it cannot be verified and is left
// out), a block the decoder kept whole (redacted_thinking, or any type the
// surface does not map) goes back unchanged, text a text block, tool
// calls tool_use blocks whose input is the call's arguments (an empty or
// non-object argument string is sent as {}). Blank text (empty or only
// whitespace) is left out: the API refuses a text block without
// non-whitespace text. A tool call without a result and a result that
// answers no call are left out (see paired). Consecutive wire messages of
// one role are merged into one, so the results of parallel calls share
// one user message.
//
// Cache breakpoints (cache_control {"type":"ephemeral"}), at most three,
// on the stable prefix:
//  1. the system block, which closes the tools and system prefix (the last
//     tool when there is no system);
//  2. the last block of the last compaction checkpoint (the last message
//     whose source carries a compactionId), which stays fixed until the
//     next compaction;
//  3. the last block of the last message, so the next step of the loop
//     reads the whole conversation so far from the cache.
//
// The rule reads only req, so the breakpoints of every request are rebuilt
// with it.
func EncodeAnthropic(req *Request) ([]byte, error) {
	v, err := encodable(req)
	if err != nil {
		return nil, err
	}
	msgs, err := anthropicMessages(req, v)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, errors.New("llm: encode: the request has no message to send")
	}
	w := &writer{b: make([]byte, 0, 256+estimateSize(req))}
	w.raw(`{"model":`)
	w.str(req.Config.Model)
	w.raw(`,"max_tokens":`)
	maxTokens := int64(DefaultAnthropicMaxTokens)
	if req.Config.MaxTokens != nil {
		maxTokens = *req.Config.MaxTokens
	}
	w.b = strconv.AppendInt(w.b, maxTokens, 10)
	system, hasSystem, _ := systemHead(req)
	if hasSystem {
		w.raw(`,"system":[{"type":"text","text":`)
		w.str(system)
		w.raw(cacheMark)
		w.raw(`]`)
	}
	w.raw(`,`)
	w.wireHistory("messages", "content", msgs)
	if len(req.Tools) > 0 {
		w.raw(`,"tools":[`)
		if err := w.toolList(req.Tools, "input_schema", !hasSystem); err != nil {
			return nil, err
		}
		w.raw(`]`)
	}
	c := req.Config
	budget := int64(0)
	if v > encoderV1 {
		budget = anthropicThinking(&c, maxTokens, msgs)
		if budget > 0 && c.Temperature != nil && *c.Temperature != 1 {
			c.Temperature = nil
		}
	}
	if err := w.sampling(&c, "temperature", "stop_sequences"); err != nil {
		return nil, err
	}
	if budget > 0 {
		w.raw(`,"thinking":{"type":"enabled","budget_tokens":`)
		w.b = strconv.AppendInt(w.b, budget, 10)
		w.raw(`}`)
	}
	w.raw(`,"stream":true}`)
	if w.err != nil {
		return nil, fmt.Errorf("llm: encode: %w", w.err)
	}
	return w.b, nil
}

// anthropicThinking returns the budget_tokens of the thinking member the
// Messages API call for config c and wire messages msgs sends, 0 for
// none. budget_tokens must be at least 1024 and below max_tokens: an
// effort whose budget does not fit is clamped below maxTokens, and a
// maxTokens that leaves no room for 1024 sends no thinking. A request
// that continues a tool loop whose assistant message does not start with
// thinking sends none (see EncodeAnthropic).
func anthropicThinking(c *surface.CallConfig, maxTokens int64, msgs []wireMessage) int64 {
	budget, ok := thinkingBudget(c.ReasoningEffort)
	if !ok || budget == 0 {
		return 0
	}
	if budget = min(budget, maxTokens-1); budget < minThinkingBudget {
		return 0
	}
	if n := len(msgs); n >= 2 && blockType(msgs[n-1].blocks) == "tool_result" {
		if t := blockType(msgs[n-2].blocks); t != "thinking" && t != "redacted_thinking" {
			return 0
		}
	}
	return budget
}

// blockType returns the type of the first of blocks, "" when there is
// none.
func blockType(blocks [][]byte) string {
	if len(blocks) == 0 {
		return ""
	}
	var b struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(blocks[0], &b)
	return b.Type
}

// droppedTemperature reports whether the body of req for api leaves out
// the config's temperature because thinking is on (see EncodeAnthropic),
// and that temperature.
func droppedTemperature(api API, req *Request) (float64, bool) {
	c := &req.Config
	if api != APIAnthropic || c.Temperature == nil || *c.Temperature == 1 {
		return 0, false
	}
	v, err := req.encoder()
	if err != nil || v == encoderV1 {
		return 0, false
	}
	msgs, err := anthropicMessages(req, v)
	if err != nil {
		return 0, false
	}
	maxTokens := int64(DefaultAnthropicMaxTokens)
	if c.MaxTokens != nil {
		maxTokens = *c.MaxTokens
	}
	return *c.Temperature, anthropicThinking(c, maxTokens, msgs) > 0
}

// sampling writes the temperature and stop members under the given names.
func (w *writer) sampling(c *surface.CallConfig, temperature, stop string) error {
	if c.Temperature != nil {
		f, err := json.Marshal(*c.Temperature)
		if err != nil {
			return fmt.Errorf("llm: encode: temperature %v: %w", *c.Temperature, err)
		}
		w.raw(`,"` + temperature + `":`)
		w.b = append(w.b, f...)
	}
	if len(c.Stop) > 0 {
		w.raw(`,"` + stop + `":[`)
		for i, s := range c.Stop {
			if i > 0 {
				w.raw(`,`)
			}
			w.str(s)
		}
		w.raw(`]`)
	}
	return nil
}

// wireMessage is one message of a native-slot API under construction: its
// role and its encoded content blocks (each a JSON object).
type wireMessage struct {
	role   string
	blocks [][]byte
}

// merge appends blocks to the last message when it has the same role, else
// starts a new message; it returns the index of the message they went to.
func merge(msgs []wireMessage, role string, blocks [][]byte) ([]wireMessage, int) {
	if len(blocks) == 0 {
		return msgs, -1
	}
	if n := len(msgs); n > 0 && msgs[n-1].role == role {
		msgs[n-1].blocks = append(msgs[n-1].blocks, blocks...)
		return msgs, n - 1
	}
	return append(msgs, wireMessage{role: role, blocks: blocks}), len(msgs)
}

// markLast turns the last block of m into a cache breakpoint.
func markLast(m *wireMessage) {
	if m == nil || len(m.blocks) == 0 {
		return
	}
	b := m.blocks[len(m.blocks)-1]
	if bytes.HasSuffix(b, []byte(cacheMark)) {
		return
	}
	m.blocks[len(m.blocks)-1] = append(bytes.Clone(b[:len(b)-1]), cacheMark...)
}

// wireMessages builds the history of a native-slot API (Anthropic,
// Gemini): the messages of req after its system head, as encoder version
// v sends them, each turned into a role and its wire blocks by blocks,
// consecutive wire messages of one role merged into one. sent, when not
// nil, is told the index of the wire message each message's blocks went
// to (not called for a message that sends nothing).
func wireMessages(req *Request, v int, blocks func(m *surface.Message) (string, [][]byte, error), sent func(m *surface.Message, at int, msgs []wireMessage)) ([]wireMessage, error) {
	var msgs []wireMessage
	_, _, start := systemHead(req)
	all := req.history(v)
	for i := start; i < len(all); i++ {
		m := all[i]
		if m == nil {
			return nil, fmt.Errorf("llm: encode: message %d is nil", i)
		}
		role, out, err := blocks(m)
		if err != nil {
			return nil, fmt.Errorf("llm: encode: message %d (id %q): %w", i, m.ID, err)
		}
		var at int
		if msgs, at = merge(msgs, role, out); at >= 0 && sent != nil {
			sent(m, at, msgs)
		}
	}
	return msgs, nil
}

// wireHistory writes msgs as the array member name, each message
// {"role":…, content:[its blocks]}.
func (w *writer) wireHistory(name, content string, msgs []wireMessage) {
	w.raw(`"` + name + `":[`)
	for i, m := range msgs {
		if i > 0 {
			w.raw(`,`)
		}
		w.raw(`{"role":`)
		w.str(m.role)
		w.raw(`,"` + content + `":[`)
		for j, b := range m.blocks {
			if j > 0 {
				w.raw(`,`)
			}
			w.b = append(w.b, b...)
		}
		w.raw(`]}`)
	}
	w.raw(`]`)
}

// toolList writes the declarations of tools, comma-separated, each
// {name, description (when set), schema: the arguments' JSON Schema}; the
// last one is a cache breakpoint when mark is set.
func (w *writer) toolList(tools []jsontext.Value, schema string, mark bool) error {
	for i, t := range tools {
		d, err := toolOf(t)
		if err != nil {
			return fmt.Errorf("llm: encode: tool %d: %w", i, err)
		}
		if i > 0 {
			w.raw(`,`)
		}
		w.raw(`{"name":`)
		w.str(d.name)
		if d.description != nil {
			w.raw(`,"description":`)
			w.str(*d.description)
		}
		w.raw(`,"` + schema + `":`)
		w.b = append(w.b, d.params...)
		if mark && i == len(tools)-1 {
			w.raw(cacheMark)
		} else {
			w.raw(`}`)
		}
	}
	return nil
}

// blockList collects the encoded wire blocks of one message, keeping the
// first encoding error.
type blockList struct {
	out [][]byte
	err error
}

// add encodes one block with a writer.
func (l *blockList) add(f func(w *writer)) {
	w := &writer{}
	f(w)
	if w.err != nil && l.err == nil {
		l.err = w.err
	}
	l.out = append(l.out, w.b)
}

func anthropicMessages(req *Request, v int) ([]wireMessage, error) {
	checkpoint, checkpointBlocks := -1, 0
	blocks := func(m *surface.Message) (string, [][]byte, error) { return anthropicBlocks(m, v) }
	msgs, err := wireMessages(req, v, blocks, func(m *surface.Message, at int, msgs []wireMessage) {
		if isCheckpoint(m) {
			checkpoint, checkpointBlocks = at, len(msgs[at].blocks)
		}
	})
	if err != nil {
		return nil, err
	}
	if checkpoint >= 0 {
		// Only the checkpoint's own blocks: later messages merged into
		// the same wire message are not part of the checkpoint.
		sub := wireMessage{blocks: msgs[checkpoint].blocks[:checkpointBlocks]}
		markLast(&sub)
		msgs[checkpoint].blocks[checkpointBlocks-1] = sub.blocks[checkpointBlocks-1]
	}
	if n := len(msgs); n > 0 {
		markLast(&msgs[n-1])
	}
	return msgs, nil
}

// isCheckpoint reports whether m is a compaction checkpoint: its source
// carries a compactionId.
func isCheckpoint(m *surface.Message) bool {
	if len(m.Source.Unknown) == 0 {
		return false
	}
	var s struct {
		ID *string `json:"compactionId"`
	}
	return json.Unmarshal(m.Source.Unknown, &s) == nil && s.ID != nil
}

// anthropicBlocks returns the role and wire blocks of m as encoder
// version v sends them.
func anthropicBlocks(m *surface.Message, v int) (string, [][]byte, error) {
	var l blockList
	add := l.add
	// Version 1 left out only empty text.
	skip := blank
	if v == encoderV1 {
		skip = func(text string) bool { return text == "" }
	}
	switch m.Role {
	case surface.RoleSystem:
		if text, ok := joinText(m.Content); ok && strings.TrimSpace(text) != "" {
			add(func(w *writer) { w.raw(`{"type":"text","text":`); w.str(laterSystemText(text)); w.raw(`}`) })
		}
		return "user", l.out, l.err
	case surface.RoleUser:
		for i := range m.Content {
			b := &m.Content[i]
			if b.Type != surface.BlockToolResult {
				continue
			}
			if b.ToolCallID == "" {
				return "", nil, fmt.Errorf("tool-result block %d has no toolCallId", i)
			}
			text, _ := joinText(b.Content)
			add(func(w *writer) {
				w.raw(`{"type":"tool_result","tool_use_id":`)
				w.str(b.ToolCallID)
				w.raw(`,"content":`)
				w.str(text)
				if b.IsError {
					w.raw(`,"is_error":true`)
				}
				w.raw(`}`)
			})
		}
		for i := range m.Content {
			b := &m.Content[i]
			switch b.Type {
			case surface.BlockText:
				if skip(b.Text) {
					continue
				}
				add(func(w *writer) { w.raw(`{"type":"text","text":`); w.str(b.Text); w.raw(`}`) })
			case "image":
				img, e := imageOf(b)
				if e != nil {
					return "", nil, fmt.Errorf("image block %d: %w", i, e)
				}
				add(func(w *writer) {
					if img.URL != "" {
						w.raw(`{"type":"image","source":{"type":"url","url":`)
						w.str(img.URL)
					} else {
						w.raw(`{"type":"image","source":{"type":"base64","media_type":`)
						w.str(img.mediaType())
						w.raw(`,"data":`)
						w.str(img.Data)
					}
					w.raw(`}}`)
				})
			}
		}
		return "user", l.out, l.err
	case surface.RoleAssistant:
		for i := range m.Content {
			b := &m.Content[i]
			switch b.Type {
			case surface.BlockReasoning:
				sig := signatureFor(b, APIAnthropic)
				if sig == "" {
					continue
				}
				add(func(w *writer) {
					w.raw(`{"type":"thinking","thinking":`)
					w.str(b.Text)
					w.raw(`,"signature":`)
					w.str(sig)
					w.raw(`}`)
				})
			case surface.BlockText:
				if skip(b.Text) {
					continue
				}
				add(func(w *writer) { w.raw(`{"type":"text","text":`); w.str(b.Text); w.raw(`}`) })
			case surface.BlockToolCall:
				if b.ID == "" || b.Name == "" {
					return "", nil, fmt.Errorf("tool-call block %d needs an id and a name", i)
				}
				add(func(w *writer) {
					w.raw(`{"type":"tool_use","id":`)
					w.str(b.ID)
					w.raw(`,"name":`)
					w.str(b.Name)
					w.raw(`,"input":`)
					w.b = append(w.b, argumentsObject(b.Arguments)...)
					w.raw(`}`)
				})
			default:
				if raw, ok := anthropicRaw(b); ok {
					add(func(w *writer) { w.b = append(w.b, raw...) })
				}
			}
		}
		return "assistant", l.out, l.err
	}
	return "", nil, fmt.Errorf("role %q cannot be sent", m.Role)
}

// anthropicRaw returns an assistant block the decoder kept whole because
// its type is not one the surface maps (redacted_thinking, server tool
// blocks, and types added to the API later): the block as the API sent
// it, compacted, to go back unchanged. Blocks of the types a user message
// carries (image, file, document) are not such blocks and are not sent
// from an assistant message, nor are the blocks another API's adapter
// keeps (GeminiPartBlock, OpenAIPartBlock).
func anthropicRaw(b *surface.Block) ([]byte, bool) {
	switch b.Type {
	case "", "image", "file", "document", GeminiPartBlock, OpenAIPartBlock:
		return nil, false
	}
	c, err := jsontext.AppendFormat(nil, b.Unknown)
	if err != nil || jsontext.Value(c).Kind() != '{' {
		return nil, false
	}
	return c, true
}

// blank reports whether text has nothing but whitespace.
func blank(text string) bool { return strings.TrimSpace(text) == "" }

// argumentsObject returns a tool call's arguments as a compact JSON
// object: {} when they are empty or not an object.
func argumentsObject(args string) []byte {
	v := jsontext.Value(args)
	if v.Kind() != '{' || !v.IsValid() {
		return []byte(`{}`)
	}
	c, err := jsontext.AppendFormat(nil, v)
	if err != nil {
		return []byte(`{}`)
	}
	return c
}

// signatureFor returns the provider signature a block recorded
// (Anthropic's thinking signature, Gemini's thoughtSignature), kept in the
// block's "signature" member, when it is one api can verify: "" when
// "signedBy" names another API. A signature goes back only to the API
// that made it, so a session whose route moves between Anthropic and
// Gemini does not send one API's signatures to the other, which refuses
// them (Anthropic then leaves the reasoning out, as it does unsigned
// reasoning; Gemini sends it as an unsigned thought). A block without
// "signedBy" was logged before the member existed and keeps its
// signature.
func signatureFor(b *surface.Block, api API) string {
	if len(b.Unknown) == 0 {
		return ""
	}
	var s struct {
		Signature string `json:"signature"`
		SignedBy  API    `json:"signedBy"`
	}
	if json.Unmarshal(b.Unknown, &s) != nil || (s.SignedBy != "" && s.SignedBy != api) {
		return ""
	}
	return s.Signature
}

// image is the content of an image block.
type image struct {
	URL       string `json:"url"`
	Data      string `json:"data"`
	MediaType string `json:"mediaType"`
	MimeType  string `json:"mimeType"`
}

func (i *image) mediaType() string {
	if i.MediaType != "" {
		return i.MediaType
	}
	return i.MimeType
}

func imageOf(b *surface.Block) (*image, error) {
	var img image
	if len(b.Unknown) == 0 {
		return nil, errors.New("it has neither url nor data")
	}
	if err := json.Unmarshal(b.Unknown, &img); err != nil {
		return nil, fmt.Errorf("unreadable: %w", err)
	}
	switch {
	case img.URL != "":
	case img.Data == "":
		return nil, errors.New("it has neither url nor data")
	case img.mediaType() == "":
		return nil, errors.New("it has data but no mediaType")
	}
	return &img, nil
}

// toolDecl is a tool schema reduced to what every API sends.
type toolDecl struct {
	name        string
	description *string
	params      []byte // compact JSON Schema of the arguments
}

// toolOf reads a tool schema in any form EncodeRequest accepts: the OpenAI
// function form, an MCP-style {name, description, inputSchema}, or
// {name, description, parameters}. A schema without parameters takes
// {"type":"object","properties":{}}.
func toolOf(t jsontext.Value) (*toolDecl, error) {
	compact, err := jsontext.AppendFormat(nil, t)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if jsontext.Value(compact).Kind() != '{' {
		return nil, errors.New("a tool schema must be a JSON object")
	}
	type fn struct {
		Name        string         `json:"name"`
		Description *string        `json:"description"`
		Parameters  jsontext.Value `json:"parameters"`
		InputSchema jsontext.Value `json:"inputSchema"`
	}
	var head struct {
		Type     string `json:"type"`
		Function *fn    `json:"function"`
	}
	var f fn
	if err := json.Unmarshal(compact, &head); err != nil {
		return nil, fmt.Errorf("unreadable schema: %w", err)
	}
	if err := json.Unmarshal(compact, &f); err != nil {
		return nil, fmt.Errorf("unreadable schema: %w", err)
	}
	if head.Type == "function" && head.Function != nil {
		f = *head.Function
	}
	if f.Name == "" {
		return nil, errors.New("the schema has no name")
	}
	d := &toolDecl{name: f.Name, description: f.Description, params: f.Parameters}
	if len(d.params) == 0 {
		d.params = f.InputSchema
	}
	if len(d.params) == 0 {
		d.params = []byte(`{"type":"object","properties":{}}`)
	}
	return d, nil
}
