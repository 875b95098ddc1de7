package llm

import (
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/surface"
)

// signed is the Unknown member of a block carrying signature sig, which
// api made.
func signed(sig string, api API) jsontext.Value { return blockExtra(sig, api, "") }

// blockExtra is the Unknown of a block: its signature and the API that
// made it ("signedBy": a signature verifies only with the API that made
// it, see signatureFor) and, for a Gemini functionCall that carried an
// id, that id as "providerId" (the block's own id may be one the client
// made up, which is not sent back).
func blockExtra(sig string, api API, providerID string) jsontext.Value {
	if sig == "" && providerID == "" {
		return nil
	}
	b := []byte(`{`)
	if sig != "" {
		b, _ = jsontext.AppendQuote(append(b, `"signature":`...), sig)
		b, _ = jsontext.AppendQuote(append(b, `,"signedBy":`...), string(api))
	}
	if providerID != "" {
		if sig != "" {
			b = append(b, ',')
		}
		b, _ = jsontext.AppendQuote(append(b, `"providerId":`...), providerID)
	}
	return append(b, '}')
}

func (a *assembler) native() bool { return a.api == APIAnthropic || a.api == APIGemini }

// feedNative is feed for the Anthropic and Gemini streams.
func (a *assembler) feedNative(data []byte, name string) (kept []byte, isJSON bool) {
	isJSON = jsontext.Value(data).IsValid()
	kept = data
	if !isJSON {
		kept = sanitize(data)
		if name != "error" && name != "ping" {
			if a.malformed == 0 {
				a.firstMalformed = shorten(string(kept))
			}
			a.malformed++
		}
	}
	a.applyNative(kept, isJSON, name)
	return kept, isJSON
}

// applyNative folds one Anthropic or Gemini payload.
func (a *assembler) applyNative(p []byte, isJSON bool, name string) {
	if !isJSON {
		if name == "error" {
			q, _ := jsontext.AppendQuote(nil, p)
			a.failure = q
			a.progress++
		}
		return
	}
	if a.api == APIAnthropic {
		a.anthropic(p, name)
	} else {
		a.gemini(p)
	}
}

// anthropicUsage is the usage object of message_start (message.usage) and
// message_delta (usage). input_tokens excludes the cache reads and writes.
type anthropicUsage struct {
	Input      count `json:"input_tokens"`
	CacheWrite count `json:"cache_creation_input_tokens"`
	CacheRead  count `json:"cache_read_input_tokens"`
	Output     count `json:"output_tokens"`
}

type anthropicEvent struct {
	Type    string `json:"type"`
	Index   *int   `json:"index"`
	Message *struct {
		Usage *anthropicUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		Text      string `json:"text"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anthropicUsage `json:"usage"`
	Error jsontext.Value  `json:"error"`
	// Content and StopReason are those of a whole Message, the body of a
	// server that answered without streaming.
	Content []struct {
		Type      string         `json:"type"`
		Text      string         `json:"text"`
		Thinking  string         `json:"thinking"`
		Signature string         `json:"signature"`
		ID        string         `json:"id"`
		Name      string         `json:"name"`
		Input     jsontext.Value `json:"input"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
}

// anthropic folds one event of the Messages stream: message_start
// (usage), content_block_start (a text, thinking or tool_use block; a
// block of any other type, such as redacted_thinking, is kept whole),
// content_block_delta (text_delta, thinking_delta, signature_delta,
// input_json_delta), content_block_stop, message_delta (stop_reason and
// cumulative usage), message_stop, ping and error. The event's type is the
// SSE event name, else the payload's "type".
func (a *assembler) anthropic(p []byte, name string) {
	var ev anthropicEvent
	if json.Unmarshal(p, &ev, lenient) != nil {
		if name == "error" {
			a.failure = jsontext.Value(append([]byte(nil), p...))
			a.progress++
		}
		return
	}
	typ := name
	if typ == "" || typ == "message" {
		typ = ev.Type
	}
	switch typ {
	case "message":
		// A whole Message: the server ignored stream:true.
		for i, b := range ev.Content {
			switch b.Type {
			case "text":
				a.block(i, DeltaText)
				a.text(DeltaText, b.Text)
			case "thinking":
				a.thinking(b.Thinking, b.Signature)
			case "tool_use":
				n := i
				a.tool(&toolDelta{Index: &n, ID: b.ID, Name: b.Name, Arguments: textField{s: string(argumentsObject(string(b.Input))), set: true}})
			default:
				var whole struct {
					Content []jsontext.Value `json:"content"`
				}
				if json.Unmarshal(p, &whole, lenient) == nil && i < len(whole.Content) {
					a.rawBlock(whole.Content[i])
				}
			}
		}
		if ev.Usage != nil {
			a.anthropicUsage(ev.Usage)
		}
		if ev.StopReason != "" {
			a.finish, a.finished = ev.StopReason, true
		}
		a.stopped = true
		a.progress++
	case "message_start":
		if ev.Message != nil && ev.Message.Usage != nil {
			a.anthropicUsage(ev.Message.Usage)
		}
	case "content_block_start":
		b := ev.ContentBlock
		if b == nil || ev.Index == nil {
			return
		}
		switch b.Type {
		case "text":
			a.block(*ev.Index, DeltaText)
			if b.Text != "" {
				a.text(DeltaText, b.Text)
			}
		case "thinking":
			a.thinking(b.Thinking, b.Signature)
		case "tool_use":
			a.tool(&toolDelta{Index: ev.Index, ID: b.ID, Name: b.Name})
		default:
			var start struct {
				ContentBlock jsontext.Value `json:"content_block"`
			}
			if json.Unmarshal(p, &start, lenient) == nil {
				a.rawBlock(start.ContentBlock)
			}
		}
	case "content_block_delta":
		d := ev.Delta
		if d == nil || ev.Index == nil {
			return
		}
		switch d.Type {
		case "text_delta":
			if d.Text != "" {
				a.text(DeltaText, d.Text)
			}
		case "thinking_delta":
			if d.Thinking != "" {
				a.text(DeltaReasoning, d.Thinking)
			}
		case "signature_delta":
			if n := len(a.parts); n > 0 && a.parts[n-1].kind == DeltaReasoning {
				a.parts[n-1].sig += d.Signature
				a.progress++
			}
		case "input_json_delta":
			if a.byIndex[*ev.Index] != nil {
				a.tool(&toolDelta{Index: ev.Index, Arguments: textField{s: d.PartialJSON, set: true}})
			}
		}
	case "message_delta":
		if ev.Delta != nil && ev.Delta.StopReason != "" {
			a.finish, a.finished = ev.Delta.StopReason, true
			a.progress++
		}
		if ev.Usage != nil {
			a.anthropicUsage(ev.Usage)
		}
	case "message_stop":
		a.stopped = true
		a.progress++
	case "error":
		a.failure = ev.Error
		if len(a.failure) == 0 {
			a.failure = jsontext.Value(append([]byte(nil), p...))
		}
		a.progress++
	}
}

// geminiText adds a text or thought part. A part with a thoughtSignature
// starts a block of its own that keeps the signature (the API asks to get
// it back on the same part), even when its text is empty.
func (a *assembler) geminiText(kind DeltaKind, text, sig string) {
	if sig != "" {
		a.parts = append(a.parts, &part{kind: kind, sig: sig})
		a.progress++
	}
	if text != "" {
		a.text(kind, text)
	}
}

// thinking starts a thinking block: always a part of its own, even with
// no text, so that a signature that follows (signature_delta) stays with
// it and a signed empty thinking block is kept.
func (a *assembler) thinking(text, sig string) {
	a.parts = append(a.parts, &part{kind: DeltaReasoning, sig: sig})
	if text != "" {
		a.text(DeltaReasoning, text)
	}
	a.progress++
}

// rawBlock keeps a content block of a type the adapter does not map, as
// the API sent it (compacted), to be sent back unchanged.
func (a *assembler) rawBlock(raw jsontext.Value) {
	c, err := jsontext.AppendFormat(nil, raw)
	if err != nil || jsontext.Value(c).Kind() != '{' {
		return
	}
	a.parts = append(a.parts, &part{raw: c})
	a.progress++
}

// foreignPart keeps a content part that has no "type" member of its own
// (a Gemini part, which is named by its one data member) as a block of
// type typ holding the part, compacted, in its "part" member, to be sent
// back unchanged to the API it came from.
func (a *assembler) foreignPart(typ string, raw jsontext.Value) {
	c, err := jsontext.AppendFormat(nil, raw)
	if err != nil || jsontext.Value(c).Kind() != '{' {
		return
	}
	w := writer{}
	w.raw(`{"type":`)
	w.str(typ)
	w.raw(`,"part":`)
	w.b = append(w.b, c...)
	w.raw(`}`)
	a.parts = append(a.parts, &part{raw: w.b})
	a.progress++
}

// block starts a new text or reasoning part for content block index, so
// that two blocks of one kind stay two blocks when the API sent two.
func (a *assembler) block(index int, kind DeltaKind) {
	if n := len(a.parts); n > 0 && a.parts[n-1].kind == kind && a.parts[n-1].text.Len() > 0 {
		a.parts = append(a.parts, &part{kind: kind})
	}
}

// anthropicUsage merges usage: message_delta's counts are cumulative and
// replace the ones message_start gave, member by member.
func (a *assembler) anthropicUsage(u *anthropicUsage) {
	if a.usage == nil {
		a.usage = &surface.Usage{}
	}
	if u.Input.set {
		a.usage.Input = u.Input.n
	}
	if u.CacheRead.set {
		a.usage.CacheRead = u.CacheRead.n
	}
	if u.CacheWrite.set {
		a.usage.CacheWrite = u.CacheWrite.n
	}
	if u.Output.set {
		a.usage.Output = u.Output.n
	}
	a.progress++
}

// geminiUsage is usageMetadata. promptTokenCount includes
// cachedContentTokenCount; candidatesTokenCount excludes
// thoughtsTokenCount; toolUsePromptTokenCount is input of tool use.
type geminiUsage struct {
	Prompt     count `json:"promptTokenCount"`
	Cached     count `json:"cachedContentTokenCount"`
	Candidates count `json:"candidatesTokenCount"`
	Thoughts   count `json:"thoughtsTokenCount"`
	ToolPrompt count `json:"toolUsePromptTokenCount"`
}

// geminiPart is the part members the adapter maps; a part with none of
// them (executableCode, codeExecutionResult, inlineData, parts added to
// the API later) is kept whole as a block of type GeminiPartBlock.
type geminiPart struct {
	Text             *string `json:"text"`
	Thought          bool    `json:"thought"`
	ThoughtSignature string  `json:"thoughtSignature"`
	FunctionCall     *struct {
		ID   string         `json:"id"`
		Name string         `json:"name"`
		Args jsontext.Value `json:"args"`
	} `json:"functionCall"`
}

type geminiChunk struct {
	Candidates []struct {
		Index   int `json:"index"`
		Content *struct {
			Parts []jsontext.Value `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata  *geminiUsage `json:"usageMetadata"`
	PromptFeedback *struct {
		BlockReason        string `json:"blockReason"`
		BlockReasonMessage string `json:"blockReasonMessage"`
	} `json:"promptFeedback"`
	ResponseID string         `json:"responseId"`
	Error      jsontext.Value `json:"error"`
}

// gemini folds one GenerateContentResponse chunk of the
// streamGenerateContent?alt=sse stream: candidate 0's parts (text, thought
// text, whole functionCalls), its finishReason, and usageMetadata (each
// chunk's replaces the last). A chunk {"error":{...}} fails the stream.
// A chunk with promptFeedback.blockReason and no candidate says the
// prompt was blocked (see CodePromptBlocked); its usage is still read.
// A functionCall without an id gets "<responseId>-<n>" (or "call_<n>"),
// n its position among the reply's calls. A JSON array of chunks (the
// body without alt=sse) is read chunk by chunk.
func (a *assembler) gemini(p []byte) {
	if jsontext.Value(p).Kind() == '[' {
		// The array a server sends for streamGenerateContent without
		// alt=sse: the chunks in one JSON body.
		var all []jsontext.Value
		if json.Unmarshal(p, &all, lenient) == nil {
			for _, c := range all {
				a.gemini(c)
			}
		}
		return
	}
	var c geminiChunk
	if json.Unmarshal(p, &c, lenient) != nil {
		return
	}
	if len(c.Error) > 0 && c.Error.Kind() != 'n' {
		a.failure = c.Error
		a.progress++
		return
	}
	if f := c.PromptFeedback; f != nil && f.BlockReason != "" && f.BlockReason != "BLOCK_REASON_UNSPECIFIED" && len(c.Candidates) == 0 {
		a.blocked, a.blockedWhy = f.BlockReason, f.BlockReasonMessage
		a.progress++
	}
	for i := range c.Candidates {
		cand := &c.Candidates[i]
		if cand.Index != 0 {
			continue
		}
		if cand.Content != nil {
			for _, raw := range cand.Content.Parts {
				var part geminiPart
				if json.Unmarshal(raw, &part, lenient) != nil {
					continue
				}
				switch {
				case part.FunctionCall != nil:
					n := len(a.calls)
					id := part.FunctionCall.ID
					if id == "" && c.ResponseID != "" {
						id = c.ResponseID + "-" + strconv.Itoa(n)
					}
					args := part.FunctionCall.Args
					if len(args) == 0 {
						args = jsontext.Value(`{}`)
					}
					compact, err := jsontext.AppendFormat(nil, args)
					if err != nil {
						compact = args
					}
					a.tool(&toolDelta{Index: &n, ID: id, Name: part.FunctionCall.Name,
						Arguments: textField{s: string(compact), set: true}})
					a.calls[n].sig = part.ThoughtSignature
					a.calls[n].providerID = part.FunctionCall.ID
				case part.Text != nil && part.Thought:
					a.geminiText(DeltaReasoning, *part.Text, part.ThoughtSignature)
				case part.Text != nil:
					a.geminiText(DeltaText, *part.Text, part.ThoughtSignature)
				default:
					a.foreignPart(GeminiPartBlock, raw)
				}
			}
		}
		if cand.FinishReason != "" && cand.FinishReason != "FINISH_REASON_UNSPECIFIED" {
			a.finish, a.finished = cand.FinishReason, true
			a.progress++
		}
	}
	if u := c.UsageMetadata; u != nil {
		a.usage = &surface.Usage{
			Input:     max(u.Prompt.n-u.Cached.n, 0) + u.ToolPrompt.n,
			CacheRead: u.Cached.n,
			Output:    u.Candidates.n + u.Thoughts.n,
			Reasoning: u.Thoughts.n,
		}
		a.progress++
	}
}
