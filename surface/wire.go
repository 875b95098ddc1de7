package surface

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// This file holds the JSON codec of messages, blocks and request headers.
// It reads with jsontext and the scanner of scan.go and writes with
// jsontext, without the reflective marshaler, so a plugin that links
// surface does not link reflection. Its rules are those of json v2's
// defaults for the struct shapes the types document: member names match
// case-sensitively, a duplicate name or invalid UTF-8 is refused, null
// decodes as the zero value, members this build does not know are kept in
// Unknown in their order.

// A wireError reports a JSON value of the wrong kind for the member it
// fills, naming the member and the kind it must have.
type wireError struct {
	Member string // dotted path: "message.content[0].isError"
	Want   string // "a string or null", ...
	Got    jsontext.Kind
}

func (e *wireError) Error() string {
	return "surface: " + e.Member + " must be " + e.Want + ", not " + kindName(e.Got)
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "invalid JSON"
}

func wireErr(member, want string, v []byte) error {
	return &wireError{Member: member, Want: want, Got: jsontext.Kind(kindOf(v))}
}

// name returns the unquoted name of a raw object member name.
func name(raw []byte) []byte {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	s, _ := jsontext.AppendUnquote(nil, raw)
	return s
}

// strOrNull decodes a string member; null is "".
func strOrNull(member string, v []byte) (string, error) {
	switch kindOf(v) {
	case '"':
		return str(v), nil
	case 'n':
		return "", nil
	}
	return "", wireErr(member, "a string or null", v)
}

// addUnknown appends the member (raw name and value) to the object u.
func addUnknown(u *jsontext.Value, k, v []byte) {
	b := *u
	if len(b) == 0 {
		b = append(b, '{')
	} else {
		b[len(b)-1] = ','
	}
	b = append(b, k...)
	b = append(b, ':')
	b = append(b, v...)
	*u = append(b, '}')
}

// UnmarshalJSONFrom reads a message.
func (m *Message) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	raw, err := dec.ReadValue()
	if err != nil {
		return err
	}
	return decodeMessage(raw, m)
}

// DecodeMessage decodes one message from b, which must hold exactly one
// JSON value: what UnmarshalJSONFrom reads from a decoder.
func DecodeMessage(b []byte) (Message, error) {
	var m Message
	if err := checkValue(b); err != nil {
		return m, err
	}
	return m, decodeMessage(b, &m)
}

// checkValue reports whether b is exactly one valid JSON value under the
// default rules (no duplicate names, valid UTF-8).
func checkValue(b []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	if err := dec.SkipValue(); err != nil {
		if err == io.EOF {
			return errEmpty
		}
		return err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		if err == nil {
			return errTrailing
		}
		return err
	}
	return nil
}

var (
	errEmpty    = errors.New("surface: no JSON value")
	errTrailing = errors.New("surface: data after the JSON value")
)

// decodeMessage decodes the message in raw, which must be valid JSON.
func decodeMessage(raw []byte, m *Message) error {
	*m = Message{}
	raw = raw[skipSpace(raw, 0):]
	switch kindOf(raw) {
	case 'n':
		return nil
	case '{':
	default:
		return wireErr("message", "an object", raw)
	}
	var err error
	members(raw, func(k, v []byte) bool {
		switch string(name(k)) {
		case "id":
			m.ID, err = strOrNull("message.id", v)
		case "role":
			m.Role, err = strOrNull("message.role", v)
		case "source":
			err = decodeSource(v, &m.Source)
		case "content":
			m.Content, err = decodeBlocks("message.content", v)
		default:
			addUnknown(&m.Unknown, k, v)
		}
		return err == nil
	})
	return err
}

func decodeSource(raw []byte, s *Source) error {
	*s = Source{}
	switch kindOf(raw) {
	case 'n':
		return nil
	case '{':
	default:
		return wireErr("message.source", "an object or null", raw)
	}
	var err error
	members(raw, func(k, v []byte) bool {
		switch string(name(k)) {
		case "kind":
			s.Kind, err = strOrNull("source.kind", v)
		case "plugin":
			s.Plugin, err = strOrNull("source.plugin", v)
		case "provider":
			s.Provider, err = strOrNull("source.provider", v)
		case "model":
			s.Model, err = strOrNull("source.model", v)
		case "callId":
			s.CallID, err = strOrNull("source.callId", v)
		default:
			addUnknown(&s.Unknown, k, v)
		}
		return err == nil
	})
	return err
}

// DecodeBlocks decodes a list of blocks from b, which must hold exactly
// one JSON value, an array or null (a nil list): what json.Unmarshal into
// a []Block reads, each element as Block.UnmarshalJSONFrom reads it.
func DecodeBlocks(b []byte) ([]Block, error) {
	if err := checkValue(b); err != nil {
		return nil, err
	}
	return decodeBlocks("content", trimSpace(b))
}

// decodeBlocks decodes an array of blocks; null is a nil slice.
func decodeBlocks(member string, raw []byte) ([]Block, error) {
	switch kindOf(raw) {
	case 'n':
		return nil, nil
	case '[':
	default:
		return nil, wireErr(member, "an array or null", raw)
	}
	out := []Block{}
	var err error
	elements(raw, func(v []byte) bool {
		var b Block
		if err = decodeBlock(v, &b); err == nil {
			out = append(out, b)
		}
		return err == nil
	})
	return out, err
}

// decodeBlock decodes one block from raw, which must be valid JSON. A block
// of a type this build does not know (or not an object at all) is kept
// whole in Unknown.
func decodeBlock(raw []byte, b *Block) error {
	var typ string
	members(raw, func(k, v []byte) bool {
		if keyIs(k, "type") && kindOf(v) == '"' {
			typ = str(v)
			return false
		}
		return true
	})
	*b = Block{Type: typ}
	if !b.known() {
		b.Unknown = bytes.Clone(raw)
		return nil
	}
	var err error
	members(raw, func(k, v []byte) bool {
		switch string(name(k)) {
		case "type":
		case "text":
			b.Text, err = strOrNull("block.text", v)
		case "id":
			b.ID, err = strOrNull("block.id", v)
		case "name":
			b.Name, err = strOrNull("block.name", v)
		case "arguments":
			b.Arguments, err = strOrNull("block.arguments", v)
		case "toolCallId":
			b.ToolCallID, err = strOrNull("block.toolCallId", v)
		case "isError":
			switch kindOf(v) {
			case 't':
				b.IsError = true
			case 'f', 'n':
			default:
				err = wireErr("block.isError", "a boolean or null", v)
			}
		case "content":
			b.Content, err = decodeBlocks("block.content", v)
		default:
			addUnknown(&b.Unknown, k, v)
		}
		return err == nil
	})
	return err
}

// UnmarshalJSONFrom reads a block. A block of an unknown type keeps its whole
// JSON object in Unknown.
func (b *Block) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	raw, err := dec.ReadValue()
	if err != nil {
		return err
	}
	return decodeBlock(raw, b)
}

// writer writes tokens to an encoder, keeping the first error.
type writer struct {
	enc *jsontext.Encoder
	err error
}

func (w *writer) tok(t jsontext.Token) {
	if w.err == nil {
		w.err = w.enc.WriteToken(t)
	}
}

func (w *writer) str(name, v string) {
	w.tok(jsontext.String(name))
	w.tok(jsontext.String(v))
}

func (w *writer) int(name string, v int64) {
	w.tok(jsontext.String(name))
	w.tok(jsontext.Int(v))
}

// strOmit writes a string member unless it is empty.
func (w *writer) strOmit(name, v string) {
	if v != "" {
		w.str(name, v)
	}
}

// unknown writes the members of the object u (which may be empty) into the
// object being written. A name already written is refused as a duplicate.
func (w *writer) unknown(u jsontext.Value) {
	if w.err != nil || len(u) == 0 {
		return
	}
	dec := jsontext.NewDecoder(bytes.NewReader(u), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	w.err = copyMembers(w.enc, dec)
}

var errUnknownNotObject = errors.New("surface: Unknown must hold a JSON object")

func copyMembers(enc *jsontext.Encoder, dec *jsontext.Decoder) error {
	t, err := dec.ReadToken()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if t.Kind() != '{' {
		return errUnknownNotObject
	}
	for dec.PeekKind() != '}' {
		for range 2 { // name, value
			v, err := dec.ReadValue()
			if err != nil {
				return err
			}
			if err := enc.WriteValue(v); err != nil {
				return err
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = errors.New("surface: data after the Unknown object")
		}
		return err
	}
	return nil
}

// MarshalJSONTo writes the message: id, role, source, content, then the
// members of Unknown. Nil content is written as [].
func (m Message) MarshalJSONTo(enc *jsontext.Encoder) error {
	w := writer{enc: enc}
	w.tok(jsontext.BeginObject)
	w.str("id", m.ID)
	w.str("role", m.Role)
	w.tok(jsontext.String("source"))
	w.tok(jsontext.BeginObject)
	w.str("kind", m.Source.Kind)
	w.strOmit("plugin", m.Source.Plugin)
	w.strOmit("provider", m.Source.Provider)
	w.strOmit("model", m.Source.Model)
	w.strOmit("callId", m.Source.CallID)
	w.unknown(m.Source.Unknown)
	w.tok(jsontext.EndObject)
	w.tok(jsontext.String("content"))
	w.blocks(m.Content)
	w.unknown(m.Unknown)
	w.tok(jsontext.EndObject)
	return w.err
}

func (w *writer) blocks(bs []Block) {
	w.tok(jsontext.BeginArray)
	for i := range bs {
		if w.err == nil {
			w.err = bs[i].MarshalJSONTo(w.enc)
		}
	}
	w.tok(jsontext.EndArray)
}

// MarshalJSONTo writes the block with the members its type defines. A block
// of an unknown type is written exactly as it was read.
func (b Block) MarshalJSONTo(enc *jsontext.Encoder) error {
	w := writer{enc: enc}
	if !b.known() {
		if len(b.Unknown) > 0 {
			return enc.WriteValue(b.Unknown)
		}
		w.tok(jsontext.BeginObject)
		w.str("type", b.Type)
		w.tok(jsontext.EndObject)
		return w.err
	}
	w.tok(jsontext.BeginObject)
	w.str("type", b.Type)
	switch b.Type {
	case BlockText, BlockReasoning:
		w.str("text", b.Text)
	case BlockToolCall:
		w.str("id", b.ID)
		w.str("name", b.Name)
		w.str("arguments", b.Arguments)
	case BlockToolResult:
		w.str("toolCallId", b.ToolCallID)
		w.tok(jsontext.String("isError"))
		w.tok(jsontext.Bool(b.IsError))
		w.tok(jsontext.String("content"))
		w.blocks(b.Content)
	}
	w.unknown(b.Unknown)
	w.tok(jsontext.EndObject)
	return w.err
}

// AppendMessage appends the JSON encoding of m to dst.
func AppendMessage(dst []byte, m *Message) ([]byte, error) {
	out, err := encode(func(w *writer) { w.err = m.MarshalJSONTo(w.enc) })
	if err != nil {
		return dst, err
	}
	return append(dst, out...), nil
}

// encode returns what fn writes: one JSON value.
func encode(fn func(w *writer)) ([]byte, error) {
	var buf bytes.Buffer
	w := writer{enc: jsontext.NewEncoder(&buf)}
	fn(&w)
	if w.err != nil {
		return nil, w.err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// headerData is the data of a request/header event as admission reads it.
type headerData struct {
	Header *headerWire
	Reason *string
}

// headerWire is the header as read from a log, with the fields that v3
// refuses kept so they can be named.
type headerWire struct {
	Config          *CallConfig
	AdapterDefaults jsontext.Value
	Tools           jsontext.Value
	System          jsontext.Value
}

// decodeHeaderData decodes request/header data, which must be valid JSON.
// Members other than header and reason are not read.
func decodeHeaderData(raw []byte) (headerData, error) {
	var d headerData
	raw = raw[skipSpace(raw, 0):]
	if kindOf(raw) != '{' {
		return d, wireErr("data", "an object", raw)
	}
	var err error
	members(raw, func(k, v []byte) bool {
		switch string(name(k)) {
		case "header":
			switch kindOf(v) {
			case 'n':
			case '{':
				d.Header = &headerWire{}
				err = d.Header.decode(v)
			default:
				err = wireErr("header", "an object or null", v)
			}
		case "reason":
			switch kindOf(v) {
			case 'n':
			case '"':
				s := str(v)
				d.Reason = &s
			default:
				err = wireErr("reason", "a string or null", v)
			}
		}
		return err == nil
	})
	return d, err
}

func (w *headerWire) decode(raw []byte) error {
	var err error
	members(raw, func(k, v []byte) bool {
		switch string(name(k)) {
		case "config":
			switch kindOf(v) {
			case 'n':
			case '{':
				w.Config = &CallConfig{}
				err = w.Config.decode(v)
			default:
				err = wireErr("header.config", "an object or null", v)
			}
		case "adapterDefaults":
			w.AdapterDefaults = bytes.Clone(v)
		case "tools":
			w.Tools = bytes.Clone(v)
		case "system":
			w.System = bytes.Clone(v)
		}
		return err == nil
	})
	return err
}

func (c *CallConfig) decode(raw []byte) error {
	var err error
	members(raw, func(k, v []byte) bool {
		switch string(name(k)) {
		case "provider":
			c.Provider, err = strOrNull("config.provider", v)
		case "model":
			c.Model, err = strOrNull("config.model", v)
		case "reasoningEffort":
			c.ReasoningEffort, err = strOrNull("config.reasoningEffort", v)
		case "temperature":
			c.Temperature = nil
			switch kindOf(v) {
			case 'n':
			case '0':
				var f float64
				if f, err = strconv.ParseFloat(string(v), 64); err != nil {
					err = &wireError{Member: "config.temperature", Want: "a number within the float64 range", Got: '0'}
				} else {
					c.Temperature = &f
				}
			default:
				err = wireErr("config.temperature", "a number or null", v)
			}
		case "maxTokens":
			c.MaxTokens = nil
			switch kindOf(v) {
			case 'n':
			case '0':
				var n int64
				if n, err = strconv.ParseInt(string(v), 10, 64); err != nil {
					err = &wireError{Member: "config.maxTokens", Want: "an integer within the int64 range", Got: '0'}
				} else {
					c.MaxTokens = &n
				}
			default:
				err = wireErr("config.maxTokens", "a number or null", v)
			}
		case "stop":
			c.Stop, err = decodeStrings("config.stop", v)
		}
		return err == nil
	})
	return err
}

func decodeStrings(member string, raw []byte) ([]string, error) {
	switch kindOf(raw) {
	case 'n':
		return nil, nil
	case '[':
	default:
		return nil, wireErr(member, "an array of strings or null", raw)
	}
	out := []string{}
	var err error
	elements(raw, func(v []byte) bool {
		var s string
		if s, err = strOrNull(member+"[]", v); err == nil {
			out = append(out, s)
		}
		return err == nil
	})
	return out, err
}

// sameExceptResultContent reports whether two tool/result data objects,
// both valid JSON, are equal once the inner content of each one's single
// tool-result block is set aside (4.6). Objects are equal when they have
// the same names with equal values in any order, arrays element-wise,
// strings by their unescaped text and numbers by their float64 value. A
// number beyond the float64 range anywhere in either makes them unequal.
func sameExceptResultContent(a, b []byte) bool {
	a, b = trimSpace(a), trimSpace(b)
	return finiteNumbers(resultContent(a)) && finiteNumbers(resultContent(b)) && equalValue(a, b, posData)
}

// trimSpace returns b without the JSON whitespace around it.
func trimSpace(b []byte) []byte {
	b = b[skipSpace(b, 0):]
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// Positions on the path to the inner content that the comparison sets aside.
const (
	posOther = iota
	posData
	posMessage
	posContent
	posBlock
)

// resultContent returns the inner content of data's single tool-result
// block, or nil.
func resultContent(data []byte) []byte {
	msg := member(data, "message")
	if kindOf(msg) != '{' {
		return nil
	}
	content := member(msg, "content")
	if kindOf(content) != '[' {
		return nil
	}
	var blk []byte
	n := 0
	elements(content, func(v []byte) bool {
		blk = v
		n++
		return n < 2
	})
	if n != 1 || kindOf(blk) != '{' {
		return nil
	}
	return member(blk, "content")
}

// member returns the raw value of the member of obj with the given name.
func member(obj []byte, want string) []byte {
	var out []byte
	members(obj, func(k, v []byte) bool {
		if keyIs(k, want) {
			out = v
			return false
		}
		return true
	})
	return out
}

// finiteNumbers reports whether every number in v parses as a float64.
func finiteNumbers(v []byte) bool {
	ok := true
	switch kindOf(v) {
	case '0':
		_, err := strconv.ParseFloat(string(v), 64)
		ok = err == nil
	case '{':
		members(v, func(_, x []byte) bool { ok = finiteNumbers(x); return ok })
	case '[':
		elements(v, func(x []byte) bool { ok = finiteNumbers(x); return ok })
	}
	return ok
}

type namedValue struct {
	name string
	val  []byte
}

func sortedMembers(obj []byte, skip string) []namedValue {
	var out []namedValue
	members(obj, func(k, v []byte) bool {
		if n := str(k); skip == "" || n != skip {
			out = append(out, namedValue{n, v})
		}
		return true
	})
	slices.SortFunc(out, func(x, y namedValue) int {
		switch {
		case x.name < y.name:
			return -1
		case x.name > y.name:
			return 1
		}
		return 0
	})
	return out
}

func equalValue(a, b []byte, pos int) bool {
	ka, kb := kindOf(a), kindOf(b)
	if ka != kb {
		return false
	}
	switch ka {
	case '{':
		skip := ""
		if pos == posBlock {
			skip = "content"
		}
		ma, mb := sortedMembers(a, skip), sortedMembers(b, skip)
		if len(ma) != len(mb) {
			return false
		}
		for i := range ma {
			if ma[i].name != mb[i].name {
				return false
			}
			next := posOther
			switch {
			case pos == posData && ma[i].name == "message":
				next = posMessage
			case pos == posMessage && ma[i].name == "content":
				next = posContent
			}
			if !equalValue(ma[i].val, mb[i].val, next) {
				return false
			}
		}
		return true
	case '[':
		var ea, eb [][]byte
		elements(a, func(v []byte) bool { ea = append(ea, v); return true })
		elements(b, func(v []byte) bool { eb = append(eb, v); return true })
		if len(ea) != len(eb) {
			return false
		}
		next := posOther
		if pos == posContent && len(ea) == 1 {
			next = posBlock
		}
		for i := range ea {
			if !equalValue(ea[i], eb[i], next) {
				return false
			}
		}
		return true
	case '"':
		return str(a) == str(b)
	case '0':
		x, errX := strconv.ParseFloat(string(a), 64)
		y, errY := strconv.ParseFloat(string(b), 64)
		return errX == nil && errY == nil && x == y
	default: // true, false, null
		return a[0] == b[0]
	}
}
