package llm

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/surface"
)

// chunk is the part of an OpenAI-compatible chat.completion.chunk the
// assembler reads (see chunkDecoder). A non-streamed chat.completion body
// has the same shape with "message" in place of "delta", and is read the
// same way.
type chunk struct {
	Choices []choice
	Usage   *usageWire
	Error   jsontext.Value
}

type choice struct {
	Index        int
	Delta        *delta
	FinishReason textField
}

type delta struct {
	Content          textField
	ReasoningContent textField
	Reasoning        textField
	ToolCalls        []toolDelta
}

type toolDelta struct {
	Index     *int
	ID        string
	Name      string
	Arguments textField
}

type usageWire struct {
	Prompt      count `json:"prompt_tokens"`
	Completion  count `json:"completion_tokens"`
	CacheHit    count `json:"prompt_cache_hit_tokens"`
	CacheMiss   count `json:"prompt_cache_miss_tokens"`
	PromptParts *struct {
		Cached     count `json:"cached_tokens"`
		CacheWrite count `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionParts *struct {
		Reasoning count `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// usage maps provider usage to disjoint buckets: cache reads from
// DeepSeek's prompt_cache_hit_tokens (uncached input then being
// prompt_cache_miss_tokens) or from prompt_tokens_details.cached_tokens;
// uncached input is prompt_tokens minus cache reads and writes; reasoning
// from completion_tokens_details.reasoning_tokens (already in output).
func (u *usageWire) usage() *surface.Usage {
	out := &surface.Usage{Output: u.Completion.n}
	var write int64
	if u.PromptParts != nil {
		write = u.PromptParts.CacheWrite.n
	}
	switch {
	case u.CacheHit.set || u.CacheMiss.set:
		out.CacheRead = u.CacheHit.n
		if u.CacheMiss.set {
			out.Input = u.CacheMiss.n
		} else {
			out.Input = u.Prompt.n - u.CacheHit.n
		}
	default:
		if u.PromptParts != nil {
			out.CacheRead = u.PromptParts.Cached.n
		}
		out.Input = u.Prompt.n - out.CacheRead - write
	}
	out.CacheWrite = write
	if out.Input < 0 {
		out.Input = 0
	}
	if u.CompletionParts != nil {
		out.Reasoning = u.CompletionParts.Reasoning.n
	}
	return out
}

// count is a token count that accepts any JSON number or null.
type count struct {
	n   int64
	set bool
}

func (c *count) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if v.Kind() != '0' {
		return nil
	}
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		c.n, c.set = n, true
		return nil
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err == nil && !math.IsInf(f, 0) && f >= math.MinInt64 && f <= math.MaxInt64 {
		c.n, c.set = int64(f), true
	}
	return nil
}

// textField is a text member that may be a string, null, an array of
// content parts (the text of {"type":"text","text":...} parts, other
// types kept whole in pieces), or (for arguments) a JSON object, which is
// kept as its JSON text.
type textField struct {
	s   string
	set bool
	// pieces is the content of an array that held a part of another type
	// (see OpenAIPartBlock), in order; nil when s says it all.
	pieces []piece
}

// piece is a run of text or one content part kept whole (raw).
type piece struct {
	text string
	raw  jsontext.Value
}

// sanitize returns p as valid UTF-8 text, for payloads stored as strings.
func sanitize(p []byte) []byte {
	if utf8.Valid(p) {
		return p
	}
	return bytes.ToValidUTF8(p, []byte("\uFFFD"))
}

// part is one output block under construction.
type part struct {
	kind     DeltaKind
	text     strings.Builder // text, reasoning or tool-call arguments
	id, name string
	call     int
	// sig is the provider's signature of the block (Anthropic's thinking
	// signature, Gemini's thoughtSignature), kept in the block's
	// "signature" member so it can be sent back.
	sig string
	// providerID is the id a Gemini functionCall carried ("" when the
	// client named the call).
	providerID string
	// raw is a block of a type the adapter does not map (Anthropic's
	// redacted_thinking, server tool blocks, ...), kept as the API sent it
	// so it can go back unchanged; kind is then 0.
	raw jsontext.Value
}

// assembler folds chunks into output blocks. The client, the scripted
// model and Reassemble all feed it, so a reply and its reassembly agree.
type assembler struct {
	// api is the protocol of the payloads; "" is APIOpenAI.
	api API
	// stopped reports the API's end-of-message event (Anthropic's
	// message_stop).
	stopped  bool
	on       func(Delta)
	parts    []*part
	byIndex  map[int]*part
	calls    []*part
	usage    *surface.Usage
	finish   string
	finished bool
	failure  jsontext.Value // error object sent in the stream
	// blocked is Gemini's promptFeedback.blockReason (and its message)
	// of a response that has no candidate: the prompt was refused.
	blocked, blockedWhy string
	dec                 chunkDecoder
	// progress counts the payloads that advanced the reply: new text,
	// reasoning or tool-call data, a finish reason, usage or an error.
	progress int
	// deltas counts the content deltas delivered: text, reasoning and
	// tool-call pieces (an id, a name or argument text).
	deltas int
	// malformed counts reply payloads that were not valid JSON;
	// firstMalformed is the first of them, shortened.
	malformed      int
	firstMalformed string
	// finishOnly keeps only what the finish reason depends on (finish,
	// finished, calls) right: an OpenAI-compatible payload that cannot
	// change those is not decoded (see mayFinish).
	finishOnly bool
}

// mayFinish reports whether an OpenAI-compatible payload can set the
// finish reason or start a tool call: only a "tool_calls" member or a
// "finish_reason" member that is not null does, and a member name can
// spell either without the bytes only through a \u escape. A
// `finish_reason"` followed by a colon ends a member name (a string
// value holds no unescaped quote, and no colon follows a value in JSON
// that decodes).
func mayFinish(p []byte) bool {
	if bytes.Contains(p, []byte("tool_calls")) || bytes.Contains(p, []byte(`\u`)) {
		return true
	}
	const name = `finish_reason"`
	for {
		i := bytes.Index(p, []byte(name))
		if i < 0 {
			return false
		}
		p = p[i+len(name):]
		rest := bytes.TrimLeft(p, " \t\r\n")
		if len(rest) == 0 || rest[0] != ':' {
			return true
		}
		if rest = bytes.TrimLeft(rest[1:], " \t\r\n"); !bytes.HasPrefix(rest, []byte("null")) {
			return true
		}
	}
}

// feed applies one data payload of event name (empty for unnamed events).
// It returns the payload as the stream record keeps it and whether that is
// JSON (else a string).
func (a *assembler) feed(data []byte, name string) (kept []byte, isJSON bool) {
	if a.native() {
		return a.feedNative(data, name)
	}
	c, valid := a.dec.decode(data, true)
	kept, isJSON = data, valid
	if !valid {
		kept = sanitize(data)
		c, _ = a.dec.decode(kept, false)
		if name == "" || name == "message" {
			if a.malformed == 0 {
				a.firstMalformed = shorten(string(kept))
			}
			a.malformed++
		}
	}
	a.apply(c, name, kept)
	return kept, isJSON
}

// replay applies a payload read back from a stream record.
func (a *assembler) replay(p []byte, isJSON bool, name string) {
	if a.native() {
		a.applyNative(p, isJSON, name)
		return
	}
	if a.finishOnly && !mayFinish(p) {
		return
	}
	c, _ := a.dec.decode(p, isJSON)
	a.apply(c, name, p)
}

// apply folds one decoded payload; c is nil when the payload is not a JSON
// object. An "error" event fails the stream whatever its payload.
func (a *assembler) apply(c *chunk, name string, raw []byte) {
	switch name {
	case "", "message":
		if c == nil {
			return
		}
	case "error":
		switch {
		case c != nil && len(c.Error) > 0:
			a.failure = c.Error
		case c != nil:
			a.failure = jsontext.Value(bytes.Clone(raw))
		default:
			q, _ := jsontext.AppendQuote(nil, raw)
			a.failure = q
		}
		return
	default:
		return
	}
	if len(c.Error) > 0 && c.Error.Kind() != 'n' {
		a.failure = c.Error
		a.progress++
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue
		}
		if ch.Delta != nil {
			a.delta(ch.Delta)
		}
		if ch.FinishReason.set && ch.FinishReason.s != "" {
			a.finish, a.finished = ch.FinishReason.s, true
			a.progress++
		}
	}
	if c.Usage != nil {
		a.usage = c.Usage.usage()
		a.progress++
	}
}

func (a *assembler) delta(d *delta) {
	r := d.ReasoningContent
	if !r.set {
		r = d.Reasoning
	}
	if r.s != "" {
		a.text(DeltaReasoning, r.s)
	}
	switch {
	case d.Content.pieces != nil:
		for _, p := range d.Content.pieces {
			if p.raw != nil {
				a.foreignPart(OpenAIPartBlock, p.raw)
			} else if p.text != "" {
				a.text(DeltaText, p.text)
			}
		}
	case d.Content.s != "":
		a.text(DeltaText, d.Content.s)
	}
	for i := range d.ToolCalls {
		a.tool(&d.ToolCalls[i])
	}
}

func (a *assembler) text(kind DeltaKind, s string) {
	var p *part
	if n := len(a.parts); n > 0 && a.parts[n-1].kind == kind {
		p = a.parts[n-1]
	} else {
		p = &part{kind: kind}
		a.parts = append(a.parts, p)
	}
	p.text.WriteString(s)
	a.progress++
	a.deltas++
	if a.on != nil {
		a.on(Delta{Kind: kind, Text: s})
	}
}

func (a *assembler) tool(t *toolDelta) {
	var p *part
	switch {
	case t.Index != nil:
		p = a.byIndex[*t.Index]
	case t.ID != "":
		for _, q := range a.calls {
			if q.id == t.ID {
				p = q
			}
		}
	case len(a.calls) > 0:
		p = a.calls[len(a.calls)-1]
	}
	if p == nil {
		a.progress++
		p = &part{kind: DeltaToolCall, call: len(a.calls)}
		a.parts = append(a.parts, p)
		a.calls = append(a.calls, p)
		if t.Index != nil {
			if a.byIndex == nil {
				a.byIndex = map[int]*part{}
			}
			a.byIndex[*t.Index] = p
		}
	}
	d := Delta{Kind: DeltaToolCall, Call: p.call, Text: t.Arguments.s}
	if t.ID != "" && p.id == "" {
		p.id, d.ID = t.ID, t.ID
	}
	if t.Name != "" && p.name == "" {
		p.name, d.Name = t.Name, t.Name
	}
	p.text.WriteString(t.Arguments.s)
	if d.Text != "" || d.ID != "" || d.Name != "" {
		a.progress++
		a.deltas++
	}
	if a.on != nil {
		a.on(d)
	}
}

// result builds the reply. done says the stream ended with [DONE]; a reply
// that ends so without a finish_reason finishes with stop, or tool-calls
// when it called tools.
func (a *assembler) result(done bool) *Result {
	r := &Result{Content: make([]surface.Block, 0, len(a.parts)), Usage: a.usage}
	for _, p := range a.parts {
		switch p.kind {
		case DeltaText:
			b := surface.Text(p.text.String())
			b.Unknown = signed(p.sig, a.api)
			r.Content = append(r.Content, b)
		case DeltaReasoning:
			r.Content = append(r.Content, surface.Block{Type: surface.BlockReasoning, Text: p.text.String(), Unknown: signed(p.sig, a.api)})
		case 0:
			var b surface.Block
			if json.Unmarshal(p.raw, &b) == nil && b.Type != "" {
				r.Content = append(r.Content, b)
			}
		case DeltaToolCall:
			id := p.id
			if id == "" {
				id = "call_" + strconv.Itoa(p.call)
			}
			b := surface.ToolCall(id, p.name, p.text.String())
			b.Unknown = blockExtra(p.sig, a.api, p.providerID)
			r.Content = append(r.Content, b)
		}
	}
	r.FinishReason = a.finishReason(done)
	return r
}

// finishReason is the finish reason of the reply (see result).
func (a *assembler) finishReason(done bool) FinishReason {
	switch {
	case a.finished && a.api == APIGemini && a.finish == "STOP" && len(a.calls) > 0:
		// Gemini ends a reply that calls functions with STOP.
		return FinishToolCalls
	case a.finished:
		return finishOf(a.finish)
	case done && len(a.calls) > 0:
		return FinishToolCalls
	case done:
		return FinishStop
	}
	return ""
}
