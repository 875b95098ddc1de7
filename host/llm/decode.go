package llm

import (
	"bytes"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

var lenient = json.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// chunkDecoder reads chunk payloads by walking JSON tokens: syntax is
// checked in full (valid reports a payload that is one valid JSON value,
// in strict mode also valid UTF-8 without duplicate names), while members
// of unexpected types are skipped rather than failing the chunk. It is
// reused across payloads, and reads each payload in place: the decoder
// parses a bytes.Buffer without copying it, and every value kept is copied
// out, so a payload (a whole non-streamed body included) is never held
// twice.
type chunkDecoder struct {
	dec jsontext.Decoder
	buf bytes.Buffer
}

// decode parses p. c is nil when p is not a JSON object.
func (d *chunkDecoder) decode(p []byte, strict bool) (c *chunk, valid bool) {
	d.buf = *bytes.NewBuffer(p)
	if strict {
		d.dec.Reset(&d.buf)
	} else {
		d.dec.Reset(&d.buf, lenient)
	}
	var err error
	if d.dec.PeekKind() == '{' {
		c = &chunk{}
		err = d.top(c)
	} else {
		err = d.dec.SkipValue()
	}
	if err == nil {
		if _, err = d.dec.ReadToken(); err == io.EOF {
			return c, true
		}
	}
	return nil, false
}

// enter consumes the opening token when the next value is of kind k
// ('{' or '['); otherwise it skips the value and reports false.
func (d *chunkDecoder) enter(k jsontext.Kind) (bool, error) {
	if d.dec.PeekKind() != k {
		return false, d.dec.SkipValue()
	}
	_, err := d.dec.ReadToken()
	return err == nil, err
}

// more reports whether the open object or array has another member
// before its end token end, consuming the end token when not.
func (d *chunkDecoder) more(end jsontext.Kind) (bool, error) {
	switch d.dec.PeekKind() {
	case end:
		_, err := d.dec.ReadToken()
		return false, err
	case 0:
		_, err := d.dec.ReadToken()
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return false, err
	}
	return true, nil
}

func (d *chunkDecoder) top(c *chunk) error {
	if ok, err := d.enter('{'); !ok {
		return err
	}
	for {
		if ok, err := d.more('}'); !ok {
			return err
		}
		name, err := d.dec.ReadToken()
		if err != nil {
			return err
		}
		switch name.String() {
		case "choices":
			err = d.choices(c)
		case "usage":
			var v jsontext.Value
			if v, err = d.dec.ReadValue(); err == nil && v.Kind() == '{' {
				var u usageWire
				if json.Unmarshal(v, &u, lenient) == nil {
					c.Usage = &u
				}
			}
		case "error":
			var v jsontext.Value
			if v, err = d.dec.ReadValue(); err == nil {
				if k := v.Kind(); k == '{' || k == '"' {
					c.Error = v.Clone()
				}
			}
		default:
			err = d.dec.SkipValue()
		}
		if err != nil {
			return err
		}
	}
}

func (d *chunkDecoder) choices(c *chunk) error {
	if ok, err := d.enter('['); !ok {
		return err
	}
	for {
		if ok, err := d.more(']'); !ok {
			return err
		}
		if d.dec.PeekKind() != '{' {
			if err := d.dec.SkipValue(); err != nil {
				return err
			}
			continue
		}
		c.Choices = append(c.Choices, choice{})
		if err := d.choice(&c.Choices[len(c.Choices)-1]); err != nil {
			return err
		}
	}
}

func (d *chunkDecoder) choice(ch *choice) error {
	if ok, err := d.enter('{'); !ok {
		return err
	}
	for {
		if ok, err := d.more('}'); !ok {
			return err
		}
		name, err := d.dec.ReadToken()
		if err != nil {
			return err
		}
		switch name.String() {
		case "index":
			ch.Index, err = d.int()
		case "delta", "message":
			if d.dec.PeekKind() == '{' {
				ch.Delta = &delta{}
				err = d.delta(ch.Delta)
			} else {
				err = d.dec.SkipValue()
			}
		case "finish_reason":
			err = d.text(&ch.FinishReason)
		default:
			err = d.dec.SkipValue()
		}
		if err != nil {
			return err
		}
	}
}

func (d *chunkDecoder) delta(dl *delta) error {
	if ok, err := d.enter('{'); !ok {
		return err
	}
	for {
		if ok, err := d.more('}'); !ok {
			return err
		}
		name, err := d.dec.ReadToken()
		if err != nil {
			return err
		}
		switch name.String() {
		case "content":
			err = d.text(&dl.Content)
		case "reasoning_content":
			err = d.text(&dl.ReasoningContent)
		case "reasoning":
			err = d.text(&dl.Reasoning)
		case "tool_calls":
			err = d.tools(dl)
		default:
			err = d.dec.SkipValue()
		}
		if err != nil {
			return err
		}
	}
}

func (d *chunkDecoder) tools(dl *delta) error {
	if ok, err := d.enter('['); !ok {
		return err
	}
	for {
		if ok, err := d.more(']'); !ok {
			return err
		}
		if d.dec.PeekKind() != '{' {
			if err := d.dec.SkipValue(); err != nil {
				return err
			}
			continue
		}
		dl.ToolCalls = append(dl.ToolCalls, toolDelta{})
		if err := d.tool(&dl.ToolCalls[len(dl.ToolCalls)-1]); err != nil {
			return err
		}
	}
}

func (d *chunkDecoder) tool(t *toolDelta) error {
	if ok, err := d.enter('{'); !ok {
		return err
	}
	for {
		if ok, err := d.more('}'); !ok {
			return err
		}
		name, err := d.dec.ReadToken()
		if err != nil {
			return err
		}
		var f textField
		switch name.String() {
		case "index":
			if d.dec.PeekKind() == '0' {
				var n int
				n, err = d.int()
				t.Index = &n
			} else {
				err = d.dec.SkipValue()
			}
		case "id":
			err = d.text(&f)
			t.ID = f.s
		case "function":
			err = d.function(t)
		default:
			err = d.dec.SkipValue()
		}
		if err != nil {
			return err
		}
	}
}

func (d *chunkDecoder) function(t *toolDelta) error {
	if ok, err := d.enter('{'); !ok {
		return err
	}
	for {
		if ok, err := d.more('}'); !ok {
			return err
		}
		name, err := d.dec.ReadToken()
		if err != nil {
			return err
		}
		var f textField
		switch name.String() {
		case "name":
			err = d.text(&f)
			t.Name = f.s
		case "arguments":
			err = d.text(&t.Arguments)
		default:
			err = d.dec.SkipValue()
		}
		if err != nil {
			return err
		}
	}
}

// int reads an integer; other values read as 0.
func (d *chunkDecoder) int() (int, error) {
	v, err := d.dec.ReadValue()
	if err != nil || v.Kind() != '0' {
		return 0, err
	}
	n, _ := strconv.Atoi(string(v))
	return n, nil
}

// text reads a text member (see textField).
func (d *chunkDecoder) text(f *textField) error {
	switch d.dec.PeekKind() {
	case '"':
		tok, err := d.dec.ReadToken()
		if err != nil {
			return err
		}
		f.s, f.set = tok.String(), true
		return nil
	case '{':
		v, err := d.dec.ReadValue()
		if err != nil {
			return err
		}
		f.s, f.set = string(v), true
		return nil
	case '[':
		return d.parts(f)
	}
	return d.dec.SkipValue()
}

// parts reads an array of content parts, keeping the text of each. A part
// whose "type" is not "text" is kept whole in f.pieces, with the text
// around it, so that it reaches the log (see OpenAIPartBlock).
func (d *chunkDecoder) parts(f *textField) error {
	var b strings.Builder
	var pieces []piece
	f.set = true
	defer func() {
		f.s = b.String()
		if pieces != nil {
			f.pieces = pieces
		}
	}()
	if ok, err := d.enter('['); !ok {
		return err
	}
	for {
		if ok, err := d.more(']'); !ok {
			return err
		}
		if d.dec.PeekKind() != '{' {
			if err := d.dec.SkipValue(); err != nil {
				return err
			}
			continue
		}
		raw, err := d.dec.ReadValue()
		if err != nil {
			return err
		}
		var typed struct {
			Type *string `json:"type"`
		}
		_ = json.Unmarshal(raw, &typed, lenient)
		if typed.Type != nil && *typed.Type != "text" {
			pieces = append(pieces, piece{text: b.String()[textLen(pieces):]}, piece{raw: bytes.Clone(raw)})
			continue
		}
		var sub chunkDecoder
		sub.buf = *bytes.NewBuffer(raw)
		sub.dec.Reset(&sub.buf, lenient)
		text, err := sub.partText()
		if err != nil {
			return err
		}
		b.WriteString(text)
		if pieces != nil {
			pieces = append(pieces, piece{text: text})
		}
	}
}

// textLen is the length of the text the pieces hold.
func textLen(pieces []piece) int {
	n := 0
	for _, p := range pieces {
		n += len(p.text)
	}
	return n
}

// partText reads one text part object: the text of its "text" members.
func (d *chunkDecoder) partText() (string, error) {
	var b strings.Builder
	if _, err := d.dec.ReadToken(); err != nil {
		return "", err
	}
	for {
		ok, err := d.more('}')
		if err != nil || !ok {
			return b.String(), err
		}
		name, err := d.dec.ReadToken()
		if err != nil {
			return "", err
		}
		if name.String() != "text" {
			if err := d.dec.SkipValue(); err != nil {
				return "", err
			}
			continue
		}
		var part textField
		if err := d.text(&part); err != nil {
			return "", err
		}
		b.WriteString(part.s)
	}
}
