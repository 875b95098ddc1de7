package meter

import (
	"hash/maphash"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

// Tokenizer names the meter knows without configuration.
const (
	Heuristic  = "heuristic"
	DeepSeekV3 = "deepseek-v3"
)

// nodeKind is the kind of a surface event, as pricing needs it.
type nodeKind uint8

const (
	kindSystem nodeKind = iota + 1
	kindUser
	kindAssistant
	kindTool
)

func kindOf(typ string) nodeKind {
	switch typ {
	case surface.TypeSystemMessage:
		return kindSystem
	case surface.TypeUserMessage:
		return kindUser
	case surface.TypeAssistantMessage:
		return kindAssistant
	case surface.TypeToolResult:
		return kindTool
	}
	return 0
}

func (k nodeKind) eventType() string {
	switch k {
	case kindSystem:
		return surface.TypeSystemMessage
	case kindUser:
		return surface.TypeUserMessage
	case kindAssistant:
		return surface.TypeAssistantMessage
	case kindTool:
		return surface.TypeToolResult
	}
	return ""
}

// projects reports whether a message of kind k with content projects to a
// model message (spec 5.1).
func projects(k nodeKind, content []surface.Block) bool {
	return len(content) > 0 || k == kindUser || k == kindTool
}

// contentKey identifies a node's priced content: its kind and a 128-bit
// hash of the content array's bytes.
type contentKey struct {
	a, b uint64
	kind nodeKind
}

var seedA, seedB = maphash.MakeSeed(), maphash.MakeSeed()

func keyOf(k nodeKind, content []byte) contentKey {
	return contentKey{a: maphash.Bytes(seedA, content), b: maphash.Bytes(seedB, content), kind: k}
}

// framing says how a tokenizer's chat format wraps messages.
type framing uint8

const (
	framingNone     framing = iota // the fixed estimator
	framingDeepSeek                // DeepSeek V3's chat template
	framingChatML                  // OpenAI-style: 3 tokens around every message
)

// pricer prices node contents under one tokenizer and caches the prices by
// content.
type pricer struct {
	name    string
	counter tokenizer.Counter // nil for the fixed estimator
	framing framing
	cache   map[contentKey]int64
	// priced counts cache misses: how often a message was actually priced.
	priced int
}

func newPricer(c tokenizer.Counter) *pricer {
	p := &pricer{name: Heuristic, cache: map[contentKey]int64{}}
	if c == nil {
		return p
	}
	p.name, p.counter, p.framing = c.Name(), c, framingChatML
	if t, ok := c.(*tokenizer.Tokenizer); ok && t.Name() == DeepSeekV3 {
		p.framing = framingDeepSeek
	}
	return p
}

// lazyBlocks decodes a content array at most once.
type lazyBlocks struct {
	raw    []byte
	blocks []surface.Block
	err    error
	done   bool
}

func (l *lazyBlocks) get() ([]surface.Block, error) {
	if !l.done {
		l.done = true
		l.blocks, l.err = readContent(l.raw)
	}
	return l.blocks, l.err
}

// node returns the price of a node of kind k whose content is c, from the
// cache when the same content was priced before.
func (p *pricer) node(key contentKey, k nodeKind, c *lazyBlocks) (int64, error) {
	if n, ok := p.cache[key]; ok {
		return n, nil
	}
	blocks, err := c.get()
	if err != nil {
		return 0, err
	}
	n := p.message(k, blocks)
	p.cache[key] = n
	p.priced++
	return n, nil
}

// message prices one message of kind k: 0 when it projects to nothing.
func (p *pricer) message(k nodeKind, content []surface.Block) int64 {
	if !projects(k, content) {
		return 0
	}
	if p.counter == nil {
		return EstimateMessage(content)
	}
	switch k {
	case kindSystem:
		text, ok := joinText(content)
		if !ok {
			return 0
		}
		return p.wrap("system") + p.count(text)
	case kindAssistant:
		return p.assistant(content)
	}
	return p.user(content)
}

// count counts the tokens of text.
func (p *pricer) count(text string) int64 { return int64(p.counter.Count(text)) }

// wrap is the framing one wire message of role adds.
func (p *pricer) wrap(role string) int64 {
	if p.framing == framingDeepSeek {
		return int64(tokenizer.MessageOverhead(role))
	}
	return 3
}

// user prices a user-role message as the request encoder sends it: each
// tool-result block as a tool message holding its text, the remaining text
// blocks as one user message (joined by a blank line, or as separate parts
// next to images). Images and other blocks a tokenizer cannot see keep
// their fixed-estimator block price.
func (p *pricer) user(content []surface.Block) int64 {
	var n int64
	images := 0
	for i := range content {
		b := &content[i]
		switch b.Type {
		case surface.BlockToolResult:
			text, _ := joinText(b.Content)
			n += p.wrap("tool") + p.count(text)
		case "image":
			images++
			n += EstimateBlock(b)
		}
	}
	if images > 0 {
		n += p.wrap("user")
		for i := range content {
			if content[i].Type == surface.BlockText {
				n += p.count(content[i].Text)
			}
		}
		return n
	}
	if text, ok := joinText(content); ok {
		n += p.wrap("user") + p.count(text)
	}
	return n
}

// assistant prices an assistant message as the request encoder sends it:
// its text, its tool calls as the chat template frames them, and, when it
// calls tools, its reasoning (DeepSeek requires reasoning_content back on
// tool-calling turns; elsewhere reasoning is not sent).
func (p *pricer) assistant(content []surface.Block) int64 {
	text, hasText := joinText(content)
	var calls []tokenizer.ToolCall
	var reasoning strings.Builder
	for i := range content {
		switch b := &content[i]; b.Type {
		case surface.BlockToolCall:
			calls = append(calls, tokenizer.ToolCall{Name: b.Name, Arguments: b.Arguments})
		case surface.BlockReasoning:
			reasoning.WriteString(b.Text)
		}
	}
	if len(calls) == 0 {
		if !hasText {
			return 0
		}
		return p.wrap("assistant") + p.count(text)
	}
	var n int64
	if hasText {
		n += p.count(text)
	}
	if p.framing == framingDeepSeek {
		msg := []tokenizer.Message{{Role: "assistant", ToolCalls: calls}}
		n += p.count(tokenizer.RenderChat(msg, false)) - tokenizer.ChatBaseOverhead
		n += p.count(reasoning.String())
		return n
	}
	n += p.wrap("assistant")
	for _, c := range calls {
		n += p.count(c.Name) + p.count(c.Arguments) + 3
	}
	return n
}

// tools prices a tool list: the fixed estimate, or the tokens of its JSON.
func (p *pricer) tools(tools []jsontext.Value) int64 {
	if len(tools) == 0 {
		return 0
	}
	if p.counter == nil {
		return EstimateTools(tools)
	}
	b := []byte{'['}
	for i, t := range tools {
		if i > 0 {
			b = append(b, ',')
		}
		if c, err := jsontext.AppendFormat(b, t); err == nil {
			b = c
		} else {
			b = append(b, t...)
		}
	}
	b = append(b, ']')
	return p.count(string(b))
}

// joinText joins the text blocks of content with a blank line, as the
// request encoder does; ok is false when there is none.
func joinText(content []surface.Block) (string, bool) {
	var b strings.Builder
	first, n := "", 0
	for i := range content {
		if content[i].Type != surface.BlockText {
			continue
		}
		switch n {
		case 0:
			first = content[i].Text
		case 1:
			b.WriteString(first)
			fallthrough
		default:
			b.WriteString("\n\n")
			b.WriteString(content[i].Text)
		}
		n++
	}
	if n > 1 {
		return b.String(), true
	}
	return first, n > 0
}

// trim drops cached prices of contents no longer on the surface once the
// cache outgrows it, keeping memory proportional to the surface.
func (p *pricer) trim(nodes []node) {
	if len(p.cache) <= 2*len(nodes)+1024 {
		return
	}
	keep := make(map[contentKey]int64, len(nodes))
	for i := range nodes {
		if n, ok := p.cache[nodes[i].key]; ok {
			keep[nodes[i].key] = n
		}
	}
	p.cache = keep
}
