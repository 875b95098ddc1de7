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
// body and a private copy of the request it was encoded from. The model
// and the interceptors are handed the request, never the copy, so the
// copy still says what was sent when they return.
//
// Encoding is a pure function of the request's fields: a request equal to
// the copy field by field encodes to the body, and unchanged checks that
// without encoding it again. Strings are immutable and shared with the
// copy, so comparing them is comparing pointers; every mutable part (the
// message and block values, the config's pointers and stop list, the
// tools' and unknown members' bytes) is copied. A request that differs
// from the copy is encoded and its bytes compared with the body, so a
// change that leaves the body as it was still passes, as it always has.
type sentRequest struct {
	body    []byte
	nilMsg  bool // the request held a nil message: no request is the same
	cfg     surface.CallConfig
	temp    float64
	maxTok  int64
	msgs    []surface.Message
	tools   []jsontext.Value
	session string
	api     llm.API
	encoder int
}

// newSentRequest copies req, whose body is body.
func newSentRequest(req *llm.Request, body []byte) *sentRequest {
	s := &sentRequest{body: body, cfg: req.Config, session: req.SessionID, api: req.API, encoder: req.Encoder}
	if t := req.Config.Temperature; t != nil {
		s.temp = *t
		s.cfg.Temperature = &s.temp
	}
	if m := req.Config.MaxTokens; m != nil {
		s.maxTok = *m
		s.cfg.MaxTokens = &s.maxTok
	}
	s.cfg.Stop = slices.Clone(req.Config.Stop)
	n, size := 0, 0
	for _, m := range req.Messages {
		if m == nil {
			continue
		}
		size += len(m.Unknown) + len(m.Source.Unknown)
		bn, bs := blocksSize(m.Content)
		n, size = n+bn, size+bs
	}
	for _, t := range req.Tools {
		size += len(t)
	}
	a := arena{blocks: make([]surface.Block, 0, n), bytes: make([]byte, 0, size)}
	s.msgs = make([]surface.Message, len(req.Messages))
	for i, m := range req.Messages {
		if m == nil {
			s.nilMsg = true
			continue
		}
		c := *m
		c.Unknown = a.value(m.Unknown)
		c.Source.Unknown = a.value(m.Source.Unknown)
		c.Content = a.copyBlocks(m.Content, true)
		s.msgs[i] = c
	}
	if req.Tools != nil {
		s.tools = make([]jsontext.Value, len(req.Tools))
		for i, t := range req.Tools {
			s.tools[i] = a.value(t)
		}
	}
	return s
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

// arena hands out the copies of one sentRequest (blocks and bytes) or of one
// cloneRequest (blocks) from one allocation each.
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

// copyBlocks copies bs, nested content included, into the arena's blocks;
// with ownBytes the unknown members' bytes are copied too, else shared (as
// surface.CloneBlocks shares them).
func (a *arena) copyBlocks(bs []surface.Block, ownBytes bool) []surface.Block {
	if bs == nil {
		return nil
	}
	at := len(a.blocks)
	a.blocks = append(a.blocks, bs...)
	out := a.blocks[at:len(a.blocks):len(a.blocks)]
	for i := range out {
		if ownBytes {
			out[i].Unknown = a.value(bs[i].Unknown)
		}
		out[i].Content = a.copyBlocks(bs[i].Content, ownBytes)
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

// same reports whether req equals the copy field by field.
func (s *sentRequest) same(req *llm.Request) bool {
	if req == nil || s.nilMsg || req.SessionID != s.session || req.API != s.api || req.Encoder != s.encoder ||
		!sameConfig(&req.Config, &s.cfg) || len(req.Messages) != len(s.msgs) || len(req.Tools) != len(s.tools) ||
		(req.Tools == nil) != (s.tools == nil) {
		return false
	}
	for i, t := range req.Tools {
		if !bytes.Equal(t, s.tools[i]) {
			return false
		}
	}
	for i, m := range req.Messages {
		c := &s.msgs[i]
		if m == nil || m.ID != c.ID || m.Role != c.Role || m.Source.Kind != c.Source.Kind ||
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
