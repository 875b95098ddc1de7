package host

import (
	"bytes"
	"context"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// sentRequest is what the loop dispatched for an attempt: the encoded
// body and the request it was encoded from, which is the log's own
// (logRequest: the log's messages, header config and tools). The model
// and the interceptors are handed a deep copy of it (cloneRequest), never
// the log's, so the log's request still says what was sent when they
// return, and no second copy is needed to know it.
//
// Encoding is a pure function of the request's fields: a request equal to
// the log's field by field encodes to the body, and unchanged checks that
// without encoding it again. Strings are immutable and shared with the
// copy, so comparing them is comparing pointers. A request that differs
// is encoded and its bytes compared with the body, so a change that
// leaves the body as it was still passes, as it always has.
type sentRequest struct {
	body []byte
	req  *llm.Request // the log's, read only
}

// newSentRequest records that body was encoded from req, a request of
// logRequest's that nothing else is handed.
func newSentRequest(req *llm.Request, body []byte) *sentRequest {
	return &sentRequest{body: body, req: req}
}

// blocksSize counts bs's blocks and their unknown members' bytes, nested
// content included.
func blocksSize(bs []surface.Block) (n, size int) {
	for i := range bs {
		cn, cs := blocksSize(bs[i].Content)
		n, size = n+1+cn, size+len(bs[i].Unknown)+cs
	}
	return n, size
}

// arena hands out the copies of one cloneRequest, blocks and bytes, from
// one allocation each.
type arena struct {
	blocks []surface.Block
	bytes  []byte
}

func (a *arena) value(v jsontext.Value) jsontext.Value {
	if v == nil {
		return nil
	}
	at := len(a.bytes)
	a.bytes = append(a.bytes, v...)
	return a.bytes[at:len(a.bytes):len(a.bytes)]
}

// copyBlocks copies bs, nested content and unknown members' bytes
// included, into the arena.
func (a *arena) copyBlocks(bs []surface.Block) []surface.Block {
	if bs == nil {
		return nil
	}
	at := len(a.blocks)
	a.blocks = append(a.blocks, bs...)
	out := a.blocks[at:len(a.blocks):len(a.blocks)]
	for i := range out {
		out[i].Unknown = a.value(bs[i].Unknown)
		out[i].Content = a.copyBlocks(bs[i].Content)
	}
	return out
}

// unchanged reports whether req still encodes to the body that was sent.
func (s *sentRequest) unchanged(req *llm.Request) bool {
	if s.same(req) {
		return true
	}
	after, err := llm.EncodeRequest(req)
	return err == nil && bytes.Equal(s.body, after)
}

// same reports whether req equals the log's request field by field.
func (s *sentRequest) same(req *llm.Request) bool {
	o := s.req
	if req == nil || req.SessionID != o.SessionID || req.API != o.API || req.Encoder != o.Encoder ||
		!sameConfig(&req.Config, &o.Config) || len(req.Messages) != len(o.Messages) || len(req.Tools) != len(o.Tools) ||
		(req.Tools == nil) != (o.Tools == nil) {
		return false
	}
	for i, t := range req.Tools {
		if !bytes.Equal(t, o.Tools[i]) {
			return false
		}
	}
	for i, m := range req.Messages {
		c := o.Messages[i]
		if m == nil || c == nil || m.ID != c.ID || m.Role != c.Role || m.Source.Kind != c.Source.Kind ||
			m.Source.Plugin != c.Source.Plugin || m.Source.Provider != c.Source.Provider ||
			m.Source.Model != c.Source.Model || m.Source.CallID != c.Source.CallID ||
			!sameValue(m.Unknown, c.Unknown) || !sameValue(m.Source.Unknown, c.Source.Unknown) ||
			!sameBlocks(m.Content, c.Content) {
			return false
		}
	}
	return true
}

func sameConfig(a, b *surface.CallConfig) bool {
	return a.Provider == b.Provider && a.Model == b.Model && a.ReasoningEffort == b.ReasoningEffort &&
		samePtr(a.Temperature, b.Temperature) && samePtr(a.MaxTokens, b.MaxTokens) &&
		slices.Equal(a.Stop, b.Stop) && (a.Stop == nil) == (b.Stop == nil)
}

func samePtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// sameValue compares two raw members, nil apart from empty.
func sameValue(a, b jsontext.Value) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func sameBlocks(a, b []surface.Block) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Type != y.Type || x.Text != y.Text || x.ID != y.ID || x.Name != y.Name || x.Arguments != y.Arguments ||
			x.ToolCallID != y.ToolCallID || x.IsError != y.IsError || !sameValue(x.Unknown, y.Unknown) ||
			!sameBlocks(x.Content, y.Content) {
			return false
		}
	}
	return true
}

type sentBodyKey struct{}

// RequestBody returns a copy of the exact body the loop encoded
// (llm.EncodeRequest) for the model attempt ctx belongs to: the context
// the model and the model interceptors receive carries it, so one that
// reads the body need not encode the request again. It is nil for any
// other context.
func RequestBody(ctx context.Context) []byte {
	s, _ := ctx.Value(sentBodyKey{}).(*sentRequest)
	if s == nil {
		return nil
	}
	return bytes.Clone(s.body)
}

// RequestBodyEqual reports whether b is the exact body the loop encoded
// for the model attempt ctx belongs to, comparing it in place rather than
// copying it as RequestBody does; ok is false for any other context.
func RequestBodyEqual(ctx context.Context, b []byte) (equal, ok bool) {
	s, _ := ctx.Value(sentBodyKey{}).(*sentRequest)
	if s == nil {
		return false, false
	}
	return bytes.Equal(s.body, b), true
}
