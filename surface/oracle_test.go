package surface

import (
	"errors"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// This file keeps the reflective codec that wire.go replaced, as the
// oracle of the differential tests and fuzz targets in wire_test.go: the
// same struct shapes decoded and encoded by json v2's reflection.

type oracleMessage struct {
	ID      string         `json:"id"`
	Role    string         `json:"role"`
	Source  Source         `json:"source"`
	Content []oracleBlock  `json:"content"`
	Unknown jsontext.Value `json:",embed"`
}

type oracleBlock Block

type oracleBlockWire struct {
	Type       string         `json:"type"`
	Text       *string        `json:"text,omitzero"`
	ID         *string        `json:"id,omitzero"`
	Name       *string        `json:"name,omitzero"`
	Arguments  *string        `json:"arguments,omitzero"`
	ToolCallID *string        `json:"toolCallId,omitzero"`
	IsError    *bool          `json:"isError,omitzero"`
	Content    []oracleBlock  `json:"content,omitzero"`
	Unknown    jsontext.Value `json:",embed"`
}

func (b oracleBlock) MarshalJSONTo(enc *jsontext.Encoder) error {
	if !(*Block)(&b).known() {
		if len(b.Unknown) > 0 {
			return enc.WriteValue(b.Unknown)
		}
		return json.MarshalEncode(enc, &oracleBlockWire{Type: b.Type})
	}
	w := oracleBlockWire{Type: b.Type, Unknown: b.Unknown}
	switch b.Type {
	case BlockText, BlockReasoning:
		w.Text = &b.Text
	case BlockToolCall:
		w.ID, w.Name, w.Arguments = &b.ID, &b.Name, &b.Arguments
	case BlockToolResult:
		w.ToolCallID, w.IsError = &b.ToolCallID, &b.IsError
		w.Content = toOracle(b.Content)
		if w.Content == nil {
			w.Content = []oracleBlock{}
		}
	}
	return json.MarshalEncode(enc, &w)
}

func (b *oracleBlock) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	raw, err := dec.ReadValue()
	if err != nil {
		return err
	}
	var typ string
	members(raw, func(k, v []byte) bool {
		if keyIs(k, "type") && kindOf(v) == '"' {
			typ = str(v)
			return false
		}
		return true
	})
	*b = oracleBlock{Type: typ}
	if !(*Block)(b).known() {
		b.Unknown = raw.Clone()
		return nil
	}
	var w oracleBlockWire
	if err := json.Unmarshal(raw, &w); err != nil {
		return err
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	b.Text, b.ID, b.Name, b.Arguments, b.ToolCallID = str(w.Text), str(w.ID), str(w.Name), str(w.Arguments), str(w.ToolCallID)
	if w.IsError != nil {
		b.IsError = *w.IsError
	}
	b.Content, b.Unknown = fromOracle(w.Content), w.Unknown
	return nil
}

func toOracle(bs []Block) []oracleBlock {
	if bs == nil {
		return nil
	}
	out := make([]oracleBlock, len(bs))
	for i, b := range bs {
		out[i] = oracleBlock(b)
	}
	return out
}

func fromOracle(bs []oracleBlock) []Block {
	if bs == nil {
		return nil
	}
	out := make([]Block, len(bs))
	for i, b := range bs {
		out[i] = Block(b)
	}
	return out
}

var oracleOpts = json.JoinOptions(json.RejectUnknownMembers(false))

// OracleDecodeMessage decodes a message with the reflective codec.
func OracleDecodeMessage(raw []byte) (Message, error) {
	var o oracleMessage
	err := json.Unmarshal(raw, &o, oracleOpts)
	return Message{ID: o.ID, Role: o.Role, Source: o.Source, Content: fromOracle(o.Content), Unknown: o.Unknown}, err
}

// OracleEncodeMessage encodes a message with the reflective codec.
func OracleEncodeMessage(m Message) ([]byte, error) {
	return json.Marshal(oracleMessage{ID: m.ID, Role: m.Role, Source: m.Source, Content: toOracle(m.Content), Unknown: m.Unknown})
}

// OracleEncodeBlock encodes a block with the reflective codec.
func OracleEncodeBlock(b Block) ([]byte, error) { return json.Marshal(oracleBlock(b)) }

type oracleHeaderData struct {
	Header       *oracleHeaderWire `json:"header"`
	Reason       *string           `json:"reason"`
	StartsSeries jsontext.Value    `json:"startsSeries"`
}

type oracleHeaderWire struct {
	Config          *CallConfig    `json:"config"`
	AdapterDefaults jsontext.Value `json:"adapterDefaults"`
	Tools           jsontext.Value `json:"tools"`
	System          jsontext.Value `json:"system"`
}

func (w *oracleHeaderWire) check() (Header, string) {
	if w == nil {
		return Header{}, "data.header must be an object"
	}
	if w.System != nil {
		return Header{}, "header.system is not allowed in format v3: use system/message"
	}
	if w.Config == nil || w.Config.Provider == "" || w.Config.Model == "" {
		return Header{}, "header.config needs a non-empty provider and model"
	}
	h := Header{Config: *w.Config}
	if len(w.Tools) > 0 {
		if err := json.Unmarshal(w.Tools, &h.Tools); err != nil || w.Tools.Kind() != '[' {
			return Header{}, "header.tools must be an array of tool schemas"
		}
		if len(h.Tools) == 0 {
			return Header{}, "header.tools, when present, must be non-empty"
		}
		for i := range h.Tools {
			h.Tools[i] = h.Tools[i].Clone()
		}
	}
	if len(w.AdapterDefaults) > 0 {
		var m map[string]jsontext.Value
		if err := json.Unmarshal(w.AdapterDefaults, &m); err != nil {
			return Header{}, "header.adapterDefaults must be an object"
		}
		if len(m) == 0 {
			return Header{}, "header.adapterDefaults, when present, must be non-empty"
		}
		h.AdapterDefaults = &AdapterDefaults{}
		for k, v := range m {
			if v.Kind() != 't' {
				return Header{}, "header.adapterDefaults." + k + " must be exactly true"
			}
			switch k {
			case "reasoningEffort":
				if h.Config.ReasoningEffort == "" {
					return Header{}, "header.adapterDefaults marks reasoningEffort, which config lacks"
				}
				h.AdapterDefaults.ReasoningEffort = true
			case "maxTokens":
				if h.Config.MaxTokens == nil {
					return Header{}, "header.adapterDefaults marks maxTokens, which config lacks"
				}
				h.AdapterDefaults.MaxTokens = true
			default:
				return Header{}, "header.adapterDefaults has unknown key " + quote(k)
			}
		}
	}
	return h.Canonical(), ""
}

// HeaderResult is what admission learns from request/header data: the
// decode error, the reason, the checked header or the rule it broke.
type HeaderResult struct {
	DecodeErr error
	Reason    *string
	Header    Header
	Bad       string
}

// OracleHeader reads request/header data with the reflective codec.
func OracleHeader(data []byte) HeaderResult {
	var d oracleHeaderData
	if err := json.Unmarshal(data, &d, oracleOpts); err != nil {
		return HeaderResult{DecodeErr: err}
	}
	h, bad := d.Header.check()
	return HeaderResult{Reason: d.Reason, Header: h, Bad: bad}
}

// WireHeader reads request/header data, which must be valid JSON, as
// admission does.
func WireHeader(data []byte) HeaderResult {
	d, err := decodeHeaderData(data)
	if err != nil {
		return HeaderResult{DecodeErr: err}
	}
	h, bad := d.Header.check()
	return HeaderResult{Reason: d.Reason, Header: h, Bad: bad}
}

// OracleSameResult is the reflective tool-rewrite comparison of 4.6.
func OracleSameResult(a, b []byte) bool {
	x, errA := oracleWithoutResultContent(a)
	y, errB := oracleWithoutResultContent(b)
	return errA == nil && errB == nil && oracleJSONEqual(x, y)
}

// WireSameResult is the comparison admission makes; a and b must be valid.
func WireSameResult(a, b []byte) bool { return sameExceptResultContent(a, b) }

func oracleWithoutResultContent(data []byte) (any, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	if m, ok := v.(map[string]any); ok {
		if msg, ok := m["message"].(map[string]any); ok {
			if c, ok := msg["content"].([]any); ok && len(c) == 1 {
				if blk, ok := c[0].(map[string]any); ok {
					delete(blk, "content")
				}
			}
		}
	}
	return v, nil
}

func oracleJSONEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !oracleJSONEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, oracleJSONEqual)
	default:
		return a == b
	}
}

// IsSyntaxError reports whether err is a syntax error of the JSON text
// rather than a value of the wrong kind.
func IsSyntaxError(err error) bool {
	var se *jsontext.SyntacticError
	return errors.As(err, &se) || errors.Is(err, errTrailing) || errors.Is(err, errEmpty)
}
