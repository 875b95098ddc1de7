package compact

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/surface"
)

// The event data compaction writes is encoded token by token, in the
// field order and with the omissions its struct tags give (what
// surface.Data writes for these types), so that a guest links no
// reflective encoder. data_test.go holds each encoder to surface.Data.

// dataWriter writes one JSON value, keeping the first error.
type dataWriter struct {
	buf bytes.Buffer
	enc *jsontext.Encoder
	err error
}

func newDataWriter() *dataWriter {
	w := &dataWriter{}
	w.enc = jsontext.NewEncoder(&w.buf)
	return w
}

func (w *dataWriter) tok(t jsontext.Token) {
	if w.err == nil {
		w.err = w.enc.WriteToken(t)
	}
}

func (w *dataWriter) str(name, v string) {
	w.tok(jsontext.String(name))
	w.tok(jsontext.String(v))
}

func (w *dataWriter) int(name string, v int64) {
	w.tok(jsontext.String(name))
	w.tok(jsontext.Int(v))
}

// intPtr writes v, or null when it is nil.
func (w *dataWriter) intPtr(name string, v *int64) {
	w.tok(jsontext.String(name))
	if v == nil {
		w.tok(jsontext.Null)
		return
	}
	w.tok(jsontext.Int(*v))
}

func (w *dataWriter) value(fn func(enc *jsontext.Encoder) error) {
	if w.err == nil {
		w.err = fn(w.enc)
	}
}

func (w *dataWriter) bytes() ([]byte, error) {
	return bytes.TrimSuffix(w.buf.Bytes(), []byte{'\n'}), w.err
}

func (d startData) encode() ([]byte, error) {
	w := newDataWriter()
	w.tok(jsontext.BeginObject)
	w.str("compactionId", d.CompactionID)
	w.intPtr("turn", d.Turn)
	w.tok(jsontext.EndObject)
	return w.bytes()
}

func (d endData) encode() ([]byte, error) {
	w := newDataWriter()
	w.tok(jsontext.BeginObject)
	w.str("compactionId", d.CompactionID)
	w.intPtr("turn", d.Turn)
	if d.TokensBefore != 0 {
		w.int("tokensBefore", d.TokensBefore)
	}
	if d.TokensAfter != 0 {
		w.int("tokensAfter", d.TokensAfter)
	}
	if d.Warning != "" {
		w.str("warning", d.Warning)
	}
	if d.Error != "" {
		w.str("error", d.Error)
	}
	w.tok(jsontext.EndObject)
	return w.bytes()
}

func (d summaryData) encode() ([]byte, error) {
	w := newDataWriter()
	w.tok(jsontext.BeginObject)
	w.str("compactionId", d.CompactionID)
	w.str("summary", d.Summary)
	if d.RawOutput != nil {
		w.tok(jsontext.String("rawOutput"))
		w.tok(jsontext.BeginArray)
		for _, b := range d.RawOutput {
			w.value(b.MarshalJSONTo)
		}
		w.tok(jsontext.EndArray)
	}
	if d.LLMStreamCall {
		w.tok(jsontext.String("llmStreamCall"))
		w.tok(jsontext.True)
	}
	w.tok(jsontext.String("shadowedRange"))
	w.tok(jsontext.BeginObject)
	w.int("start", d.ShadowedRange.Start)
	w.int("end", d.ShadowedRange.End)
	w.tok(jsontext.EndObject)
	w.tok(jsontext.String("shadowedSeqs"))
	w.tok(jsontext.BeginArray)
	for _, s := range d.ShadowedSeqs {
		w.tok(jsontext.Int(s))
	}
	w.tok(jsontext.EndArray)
	w.int("shadowedTokenCount", d.ShadowedTokenCount)
	w.str("provider", d.Provider)
	w.str("model", d.Model)
	if d.MaxTokens != 0 {
		w.int("maxTokens", d.MaxTokens)
	}
	if d.Usage != nil {
		w.tok(jsontext.String("usage"))
		w.value(d.Usage.MarshalJSONTo)
	}
	w.tok(jsontext.EndObject)
	return w.bytes()
}

// checkpointSource is the source's extra member of a checkpoint message:
// {"compactionId": id}.
func checkpointSource(id string) ([]byte, error) {
	w := newDataWriter()
	w.tok(jsontext.BeginObject)
	w.str("compactionId", id)
	w.tok(jsontext.EndObject)
	return w.bytes()
}

// encodeMessage is a message's JSON form.
func encodeMessage(m *surface.Message) ([]byte, error) {
	return surface.AppendMessage(nil, m)
}

// encodeBlock is a block's JSON form.
func encodeBlock(b *surface.Block) ([]byte, error) {
	w := newDataWriter()
	w.value(b.MarshalJSONTo)
	return w.bytes()
}
