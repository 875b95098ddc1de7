package llm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/surface"
)

// EncodeGemini returns the exact body of the streamGenerateContent call for
// req, a pure function of req (the model is in the URL, not the body).
// Members, in this order: systemInstruction (when the head message is a
// system message with text), contents, tools (when any: one
// {"functionDeclarations":[...]} entry, each {name, description,
// parametersJsonSchema}: tool schemas are JSON Schema, which that member
// takes as is, where "parameters" takes only an OpenAPI subset),
// generationConfig (when the config sets temperature, maxTokens, stop or
// a reasoningEffort: temperature, maxOutputTokens, stopSequences,
// thinkingConfig {thinkingBudget (see thinkingBudget; 0 for "none"),
// includeThoughts true when the budget is not 0}).
//
// Node 0: a leading system message becomes systemInstruction {parts:
// [{text}]}; an empty head sends none. A later system message is sent at
// its position as user text wrapped in <system>…</system> (contents have
// only the roles user and model).
//
// Contents: user text → {text} parts, an image → inlineData {mimeType,
// data} (base64) or fileData {fileUri} (url); a tool result →
// functionResponse {name, response: {"output": text}} or {"error": text}
// for a failed call, its name found from the call it answers; assistant
// text → {text} with its recorded thoughtSignature (a signed part with no
// text is sent too), a tool call → functionCall {id, name, args} (id when
// the API gave the call one; an empty or non-object argument string is
// sent as {}) with its recorded thoughtSignature, and the functionResponse
// that answers it carries the same id; reasoning → a thought part {text,
// thought true} with its recorded thoughtSignature (a signed thought with
// no text is sent too), in its place among the model turn's parts: the
// API asks for the model's turn back whole, thoughts and signatures
// included, as it sent it. A call without a response and a response that
// answers no call are left out (see paired), so the counts of
// functionCall and functionResponse parts match. Consecutive wire
// messages of one role are merged, so the responses to parallel calls
// share one content, as the API asks. (Encoder version 1 sent no
// reasoning, no thinkingConfig and every call and response; see
// EncoderVersion.)
//
// Gemini caches implicitly; the body carries no cache markers.
func EncodeGemini(req *Request) ([]byte, error) {
	v, err := encodable(req)
	if err != nil {
		return nil, err
	}
	system, hasSystem, _ := systemHead(req)
	names := map[string]geminiCall{} // tool call id → the call
	parts := func(m *surface.Message) (string, [][]byte, error) { return geminiParts(m, names, v) }
	msgs, err := wireMessages(req, v, parts, nil)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, errors.New("llm: encode: the request has no message to send")
	}
	w := &writer{b: make([]byte, 0, 256+estimateSize(req))}
	w.raw(`{`)
	if hasSystem {
		w.raw(`"systemInstruction":{"parts":[{"text":`)
		w.str(system)
		w.raw(`}]},`)
	}
	w.wireHistory("contents", "parts", msgs)
	if len(req.Tools) > 0 {
		w.raw(`,"tools":[{"functionDeclarations":[`)
		if err := w.toolList(req.Tools, "parametersJsonSchema", false); err != nil {
			return nil, err
		}
		w.raw(`]}]`)
	}
	c := &req.Config
	budget, thinking := thinkingBudget(c.ReasoningEffort)
	thinking = thinking && v > encoderV1
	if c.Temperature != nil || c.MaxTokens != nil || len(c.Stop) > 0 || thinking {
		w.raw(`,"generationConfig":{`)
		n := len(w.b)
		if err := w.sampling(c, "temperature", "stopSequences"); err != nil {
			return nil, err
		}
		if c.MaxTokens != nil {
			w.raw(`,"maxOutputTokens":`)
			w.b = strconv.AppendInt(w.b, *c.MaxTokens, 10)
		}
		if thinking {
			w.raw(`,"thinkingConfig":{"thinkingBudget":`)
			w.b = strconv.AppendInt(w.b, budget, 10)
			if budget > 0 {
				w.raw(`,"includeThoughts":true`)
			}
			w.raw(`}`)
		}
		// The members were written each with a leading comma.
		w.b = append(w.b[:n], w.b[n+1:]...)
		w.raw(`}`)
	}
	w.raw(`}`)
	if w.err != nil {
		return nil, fmt.Errorf("llm: encode: %w", w.err)
	}
	return w.b, nil
}

// geminiCall is what a functionResponse repeats of the call it answers.
type geminiCall struct{ name, providerID string }

// geminiParts returns the role and wire parts of m as encoder version v
// sends them; names holds the calls of the messages before m, by id.
func geminiParts(m *surface.Message, names map[string]geminiCall, v int) (string, [][]byte, error) {
	var l blockList
	add := l.add
	// text adds a text part: a thought when thought is set, with the
	// signature sig when there is one.
	text := func(s string, thought bool, sig string) {
		add(func(w *writer) {
			w.raw(`{"text":`)
			w.str(s)
			if thought {
				w.raw(`,"thought":true`)
			}
			if sig != "" {
				w.raw(`,"thoughtSignature":`)
				w.str(sig)
			}
			w.raw(`}`)
		})
	}
	switch m.Role {
	case surface.RoleSystem:
		if t, ok := joinText(m.Content); ok && strings.TrimSpace(t) != "" {
			text(laterSystemText(t), false, "")
		}
		return "user", l.out, l.err
	case surface.RoleUser:
		for i := range m.Content {
			b := &m.Content[i]
			switch b.Type {
			case surface.BlockToolResult:
				if b.ToolCallID == "" {
					return "", nil, fmt.Errorf("tool-result block %d has no toolCallId", i)
				}
				call, ok := names[b.ToolCallID] // from version 2, paired kept only results of sent calls
				if !ok && v == encoderV1 {
					return "", nil, fmt.Errorf("tool-result block %d answers call %q, which no earlier message makes (Gemini needs the function name)", i, b.ToolCallID)
				}
				out0, _ := joinText(b.Content)
				key := "output"
				if b.IsError {
					key = "error"
				}
				add(func(w *writer) {
					w.raw(`{"functionResponse":{`)
					if call.providerID != "" {
						w.raw(`"id":`)
						w.str(call.providerID)
						w.raw(`,`)
					}
					w.raw(`"name":`)
					w.str(call.name)
					w.raw(`,"response":{"` + key + `":`)
					w.str(out0)
					w.raw(`}}}`)
				})
			case surface.BlockText:
				if b.Text != "" {
					text(b.Text, false, "")
				}
			case "image":
				img, e := imageOf(b)
				if e != nil {
					return "", nil, fmt.Errorf("image block %d: %w", i, e)
				}
				add(func(w *writer) {
					if img.URL != "" {
						w.raw(`{"fileData":{"fileUri":`)
						w.str(img.URL)
						if mt := img.mediaType(); mt != "" {
							w.raw(`,"mimeType":`)
							w.str(mt)
						}
					} else {
						w.raw(`{"inlineData":{"mimeType":`)
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
			case surface.BlockText, surface.BlockReasoning:
				thought := b.Type == surface.BlockReasoning
				if thought && v == encoderV1 {
					continue
				}
				sig := signatureFor(b, APIGemini)
				if b.Text == "" && sig == "" {
					continue
				}
				text(b.Text, thought, sig)
			case surface.BlockToolCall:
				if b.ID == "" || b.Name == "" {
					return "", nil, fmt.Errorf("tool-call block %d needs an id and a name", i)
				}
				pid := providerIDOf(b)
				names[b.ID] = geminiCall{b.Name, pid}
				sig := signatureFor(b, APIGemini)
				add(func(w *writer) {
					w.raw(`{"functionCall":{`)
					if pid != "" {
						w.raw(`"id":`)
						w.str(pid)
						w.raw(`,`)
					}
					w.raw(`"name":`)
					w.str(b.Name)
					w.raw(`,"args":`)
					w.b = append(w.b, argumentsObject(b.Arguments)...)
					w.raw(`}`)
					if sig != "" {
						w.raw(`,"thoughtSignature":`)
						w.str(sig)
					}
					w.raw(`}`)
				})
			case GeminiPartBlock:
				if raw, ok := foreignPartOf(b); ok {
					add(func(w *writer) { w.b = append(w.b, raw...) })
				}
			}
		}
		return "model", l.out, l.err
	}
	return "", nil, fmt.Errorf("role %q cannot be sent", m.Role)
}

// GeminiPartBlock is the type of a block that keeps a Gemini content part
// the adapter does not map (executableCode, codeExecutionResult,
// inlineData, parts added to the API later): the part as the API sent it
// is in the block's "part" member, and goes back unchanged in the model
// turn it came in. Other APIs do not send it.
const GeminiPartBlock = "gemini-part"

// OpenAIPartBlock is the type of a block that keeps a content part of an
// OpenAI-compatible reply whose "type" is not "text" (a server's
// thinking or refusal parts, types added later): the part as the server
// sent it is in the block's "part" member. It is kept in the log but not
// sent back: the chat completions reference allows only text (or a lone
// refusal) in an assistant message's content, and a part one compatible
// server sent cannot be assumed valid on another.
const OpenAIPartBlock = "openai-part"

// foreignPartOf returns the part a GeminiPartBlock keeps, ok false when
// the block holds no JSON object there.
func foreignPartOf(b *surface.Block) (jsontext.Value, bool) {
	var s struct {
		Part jsontext.Value `json:"part"`
	}
	if len(b.Unknown) == 0 || json.Unmarshal(b.Unknown, &s) != nil || s.Part.Kind() != '{' {
		return nil, false
	}
	return s.Part, true
}

// providerIDOf returns the id the API gave a call (see blockExtra), ""
// when the client named it.
func providerIDOf(b *surface.Block) string {
	if len(b.Unknown) == 0 {
		return ""
	}
	var s struct {
		ID string `json:"providerId"`
	}
	if json.Unmarshal(b.Unknown, &s) != nil {
		return ""
	}
	return s.ID
}
