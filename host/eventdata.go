package host

import (
	"bytes"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/surface"
)

// eventData encodes v as event data, the bytes surface.Data writes. The
// loop's hot payloads (a message, a step message, a step reference, an
// attempt) are written member by member, without json's reflection, by
// an encoder kept for reuse; any
// other value, and a step message with a member the fast path does not
// write (a tool error, an empty non-nil stream or meta), goes to
// surface.Data.
func eventData(v any) ([]byte, error) {
	switch v := v.(type) {
	case *surface.Message:
		if v != nil {
			return encodeData(v.MarshalJSONTo)
		}
	case surface.Message:
		return encodeData(v.MarshalJSONTo)
	case surface.StepMessage:
		if v.Error == nil && (v.Stream == nil || len(v.Stream) > 0) && (v.Meta == nil || len(v.Meta) > 0) {
			return encodeData(func(e *jsontext.Encoder) error {
				return writeStepMessage(e, &v)
			})
		}
	case StepRef:
		return encodeData(func(e *jsontext.Encoder) error {
			w := tokens{e: e}
			w.tok(jsontext.BeginObject)
			w.int("turn", v.Turn)
			if v.Step != 0 {
				w.int("step", v.Step)
			}
			w.tok(jsontext.EndObject)
			return w.err
		})
	case Attempt:
		if len(v.Stream) > 0 {
			return encodeData(func(e *jsontext.Encoder) error {
				w := tokens{e: e}
				w.tok(jsontext.BeginObject)
				w.int("turn", v.Turn)
				w.int("step", v.Step)
				w.value("stream", v.Stream)
				w.tok(jsontext.EndObject)
				return w.err
			})
		}
	}
	return surface.Data(v)
}

// writeStepMessage writes m's members in declaration order, leaving out
// the zero ones the struct tags mark omitzero.
func writeStepMessage(e *jsontext.Encoder, m *surface.StepMessage) error {
	w := tokens{e: e}
	w.tok(jsontext.BeginObject)
	w.int("turn", m.Turn)
	w.int("step", m.Step)
	w.tok(jsontext.String("message"))
	if w.err == nil {
		w.err = m.Message.MarshalJSONTo(e)
	}
	if m.Stream != nil {
		w.value("stream", m.Stream)
	}
	if m.Usage != nil {
		w.tok(jsontext.String("usage"))
		if w.err == nil {
			w.err = m.Usage.MarshalJSONTo(e)
		}
	}
	if m.Interrupted {
		w.tok(jsontext.String("interrupted"))
		w.tok(jsontext.True)
	}
	if m.Meta != nil {
		w.value("meta", m.Meta)
	}
	w.tok(jsontext.EndObject)
	return w.err
}

// tokens writes to an encoder until the first error, which it keeps.
type tokens struct {
	e   *jsontext.Encoder
	err error
}

func (w *tokens) tok(t jsontext.Token) {
	if w.err == nil {
		w.err = w.e.WriteToken(t)
	}
}

func (w *tokens) int(name string, n int64) {
	w.tok(jsontext.String(name))
	w.tok(jsontext.Int(n))
}

func (w *tokens) value(name string, v jsontext.Value) {
	w.tok(jsontext.String(name))
	if w.err == nil {
		w.err = w.e.WriteValue(v)
	}
}

// dataEncoder is an encoder and its buffer, kept for reuse.
type dataEncoder struct {
	buf bytes.Buffer
	enc *jsontext.Encoder
}

var dataEncoders = sync.Pool{New: func() any {
	e := new(dataEncoder)
	e.enc = jsontext.NewEncoder(&e.buf)
	return e
}}

// encodeData returns a copy of the one JSON value fn writes, without the
// newline the encoder ends a top-level value with.
func encodeData(fn func(*jsontext.Encoder) error) ([]byte, error) {
	e := dataEncoders.Get().(*dataEncoder)
	defer dataEncoders.Put(e)
	e.buf.Reset()
	e.enc.Reset(&e.buf)
	if err := fn(e.enc); err != nil {
		return nil, err
	}
	return bytes.Clone(bytes.TrimSuffix(e.buf.Bytes(), []byte{'\n'})), nil
}
