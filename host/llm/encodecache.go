package llm

import (
	"bytes"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/surface"
)

// EncodeCache makes the requests of one conversation cheaper to encode:
// each request repeats the messages of the one before, and
// EncodeCache.EncodeRequest copies the wire form it wrote for a message
// the previous request held instead of writing it again. The body is
// byte for byte EncodeRequest's.
//
// A message is known by its address, so the messages of a request encoded
// through the cache must never change afterwards: the host passes the
// session log's own messages, which are immutable once committed (a copy,
// or a message the pairing rule trims, is a new address and is written
// afresh). The cache keeps the forms of the latest request only. Tools are
// known by their bytes. The zero value is ready to use; it is safe for
// concurrent use, one request at a time.
type EncodeCache struct {
	mu      sync.Mutex
	version int
	prev    map[*surface.Message]wireForm
	next    map[*surface.Message]wireForm
	tools   map[string][]byte
	used    map[string]bool
}

// wireForm is what the encoder wrote for one message: zero or more wire
// messages, each after its separator (the form for a message that is not
// the first one sent).
type wireForm struct {
	keep bool // written with reasoning_content
	n    int  // wire messages
	b    []byte
}

// EncodeRequest is EncodeRequest(req) through the cache.
func (c *EncodeCache) EncodeRequest(req *Request) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return encodeRequest(req, c)
}

// start begins a request of encoder version v; a request of another
// version than the previous one's starts from an empty cache.
func (c *EncodeCache) start(v int) {
	if c == nil {
		return
	}
	if c.version != v {
		c.version, c.prev, c.tools = v, nil, nil
	}
	if c.next == nil {
		c.next = map[*surface.Message]wireForm{}
	}
	clear(c.next) // what a failed request left
	if c.used == nil {
		c.used = map[string]bool{}
	}
}

// copy writes m's form from the previous request, when it has one written
// with keep, and adds its wire messages to *n. The first message sent is
// always written: its form has no separator.
func (c *EncodeCache) copy(w *writer, m *surface.Message, n *int, keep bool) bool {
	if c == nil || *n == 0 {
		return false
	}
	f, ok := c.prev[m]
	if !ok || f.keep != keep {
		return false
	}
	w.b = append(w.b, f.b...)
	*n += f.n
	c.next[m] = f
	return true
}

// keep remembers b, what the encoder wrote for m after before wire
// messages (n after it), when it is a form copy can reuse.
func (c *EncodeCache) keep(m *surface.Message, keep bool, before, n int, b []byte) {
	if c == nil || before == 0 {
		return
	}
	c.next[m] = wireForm{keep: keep, n: n - before, b: bytes.Clone(b)}
}

func (c *EncodeCache) copyTool(w *writer, t jsontext.Value) bool {
	if c == nil {
		return false
	}
	b, ok := c.tools[string(t)]
	if !ok {
		return false
	}
	w.b = append(w.b, b...)
	c.used[string(t)] = true
	return true
}

func (c *EncodeCache) keepTool(t jsontext.Value, b []byte) {
	if c == nil {
		return
	}
	if c.tools == nil {
		c.tools = map[string][]byte{}
	}
	c.tools[string(t)] = bytes.Clone(b)
	c.used[string(t)] = true
}

// finish makes this request's forms the ones the next request copies.
func (c *EncodeCache) finish() {
	if c == nil {
		return
	}
	c.prev, c.next = c.next, c.prev
	clear(c.next)
	for t := range c.tools {
		if !c.used[t] {
			delete(c.tools, t)
		}
	}
	clear(c.used)
}
