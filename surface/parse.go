package surface

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"unicode/utf8"
)

// parser validates JSON text in one pass while its caller reads the members
// it needs. It accepts exactly the lossless JSON of spec 2.1: valid syntax,
// valid UTF-8 (no lone surrogate escapes), no duplicate object keys, no -0.
// The first problem is kept in err; once set, the walk stops early.
type parser struct {
	b    []byte
	i    int
	err  string
	at   int
	rule Rule
	keys [][]byte // keys of the objects being walked, innermost last
	// envelope relaxes -0: the envelope's fields report it by their own
	// rules (an invalid seq, an invalid replace op).
	envelope bool
	// esc is set by str when the string held an escape.
	esc bool
}

const maxDepth = 512

func (p *parser) fail(rule Rule, msg string) {
	if p.err == "" {
		p.err, p.at, p.rule = msg, p.i, rule
	}
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c > ' ' || (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
			return
		}
		p.i++
	}
}

// peek returns the first byte of the next value, or 0 at the end.
func (p *parser) peek() byte {
	p.ws()
	if p.i >= len(p.b) {
		return 0
	}
	return p.b[p.i]
}

// value validates and skips one value.
func (p *parser) value(depth int) {
	switch p.peek() {
	case '{':
		base, ok := p.open(depth)
		for first := ok; ok; first = false {
			if _, ok = p.key(base, first); ok {
				p.value(depth + 1)
			}
		}
	case '[':
		p.array(depth, func() { p.value(depth + 1) })
	case '"':
		p.str()
	case 't':
		p.literal("true")
	case 'f':
		p.literal("false")
	case 'n':
		p.literal("null")
	case 0:
		p.fail(RuleEnvelope, "unexpected end of JSON")
	default:
		p.number()
	}
}

func (p *parser) literal(word string) {
	if !bytes.HasPrefix(p.b[p.i:], []byte(word)) {
		p.fail(RuleEnvelope, "invalid JSON literal")
		return
	}
	p.i += len(word)
}

// object walks an object. fn is called once per member with the unquoted
// key (valid until fn returns) and the parser positioned at the value; fn
// must consume exactly that value.
func (p *parser) object(depth int, fn func(key []byte)) {
	base, ok := p.open(depth)
	for first := ok; ok; first = false {
		var key []byte
		if key, ok = p.key(base, first); ok {
			fn(key)
		}
	}
}

// open enters the object at p.i; its keys are tracked from base.
func (p *parser) open(depth int) (base int, ok bool) {
	if depth > maxDepth {
		p.fail(RuleEnvelope, "JSON nests too deeply")
		return 0, false
	}
	p.i++ // '{'
	return len(p.keys), true
}

// key reads the next member's key and leaves the parser at its value, which
// the caller must consume before asking for the next key. It returns false
// at the end of the object (which it consumes) or on an error.
func (p *parser) key(base int, first bool) ([]byte, bool) {
	c := p.peek()
	switch {
	case c == '}':
		p.i++
		p.keys = p.keys[:base]
		return nil, false
	case !first && c == ',':
		p.i++
		c = p.peek()
	case !first:
		p.fail(RuleEnvelope, "missing ',' or '}' in object")
		return nil, false
	}
	if p.err != "" {
		return nil, false
	}
	if c != '"' {
		p.fail(RuleEnvelope, "object key is not a string")
		return nil, false
	}
	p.esc = false
	raw := p.str()
	if p.err != "" {
		return nil, false
	}
	key := raw[1 : len(raw)-1]
	if p.esc {
		key = []byte(str(raw))
	}
	for _, k := range p.keys[base:] {
		if string(k) == string(key) {
			p.fail(RuleLossless, "duplicate key "+strconv.Quote(string(key)))
			return nil, false
		}
	}
	p.keys = append(p.keys, key)
	if p.peek() != ':' {
		p.fail(RuleEnvelope, "missing ':' after object key")
		return nil, false
	}
	p.i++
	p.ws()
	return key, true
}

// array walks an array; fn must consume one element per call.
func (p *parser) array(depth int, fn func()) {
	if depth > maxDepth {
		p.fail(RuleEnvelope, "JSON nests too deeply")
		return
	}
	p.i++ // '['
	if p.peek() == ']' {
		p.i++
		return
	}
	for p.err == "" {
		p.ws()
		fn()
		switch p.peek() {
		case ',':
			p.i++
		case ']':
			p.i++
			return
		default:
			p.fail(RuleEnvelope, "missing ',' or ']' in array")
			return
		}
	}
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// textOK reports whether s, a run of string content without quotes or
// backslashes, holds no control character and is valid UTF-8. Words of
// printable ASCII are skipped 8 bytes at a time.
func textOK(s []byte) bool {
	n := 0
	for n < len(s) {
		if n+8 <= len(s) {
			x := binary.LittleEndian.Uint64(s[n:])
			if ((x-lsb*0x20)|x)&msb == 0 {
				n += 8
				continue
			}
		}
		c := s[n]
		switch {
		case c < 0x20:
			return false
		case c < utf8.RuneSelf:
			n++
		default:
			r, size := utf8.DecodeRune(s[n:])
			if r == utf8.RuneError && size <= 1 {
				return false
			}
			n += size
		}
	}
	return true
}

// str validates a string and returns it raw, quotes included.
func (p *parser) str() []byte {
	start := p.i
	b := p.b
	i := start + 1
	// Most strings are short printable ASCII: scan them byte by byte before
	// paying for the vector search.
	for i < len(b) && i-start <= 24 {
		c := b[i]
		if c == '"' {
			p.i = i + 1
			return b[start:p.i]
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		i++
	}
	end := -1 // the first quote at or after i, once searched
	for {
		if end < i {
			j := bytes.IndexByte(b[i:], '"')
			if j < 0 {
				p.i = len(b)
				p.fail(RuleEnvelope, "unterminated string")
				return nil
			}
			end = i + j
		}
		k := bytes.IndexByte(b[i:end], '\\')
		if k < 0 {
			if !textOK(b[i:end]) {
				p.i = i
				p.failText(b[i:end])
				return nil
			}
			p.i = end + 1
			return b[start:p.i]
		}
		if !textOK(b[i : i+k]) {
			p.i = i
			p.failText(b[i : i+k])
			return nil
		}
		i += k
		p.esc = true
		if i+1 >= len(b) {
			p.i = i
			p.fail(RuleEnvelope, "unterminated string")
			return nil
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			r, ok := hex4(b, i+2)
			if !ok {
				p.i = i
				p.fail(RuleEnvelope, "invalid \\u escape")
				return nil
			}
			i += 6
			if r >= 0xD800 && r < 0xDC00 {
				lo, ok := hex4(b, i+2)
				if !ok || b[i] != '\\' || b[i+1] != 'u' || lo < 0xDC00 || lo >= 0xE000 {
					p.i = i
					p.fail(RuleLossless, "string holds a lone surrogate escape")
					return nil
				}
				i += 6
			} else if r >= 0xDC00 && r < 0xE000 {
				p.i = i
				p.fail(RuleLossless, "string holds a lone surrogate escape")
				return nil
			}
		default:
			p.i = i
			p.fail(RuleEnvelope, "invalid escape in string")
			return nil
		}
	}
}

// failText reports what textOK found wrong in s.
func (p *parser) failText(s []byte) {
	if bytes.ContainsFunc(s, func(r rune) bool { return r < 0x20 }) && utf8.Valid(s) {
		p.fail(RuleEnvelope, "control character in string")
		return
	}
	for _, c := range s {
		if c < 0x20 {
			p.fail(RuleEnvelope, "control character in string")
			return
		}
		if c >= utf8.RuneSelf {
			break
		}
	}
	p.fail(RuleLossless, "string holds invalid UTF-8")
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// number validates a number and returns its text. -0 in any form is
// refused: it does not survive a round trip through most readers.
func (p *parser) number() []byte {
	b, start, i := p.b, p.i, p.i
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	digits := func() bool {
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > s
	}
	zero := true
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		zero = false
		digits()
	default:
		p.fail(RuleEnvelope, "invalid JSON value")
		return nil
	}
	if i < len(b) && b[i] == '.' {
		i++
		s := i
		if !digits() {
			p.fail(RuleEnvelope, "invalid number")
			return nil
		}
		for _, c := range b[s:i] {
			if c != '0' {
				zero = false
			}
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			p.fail(RuleEnvelope, "invalid number")
			return nil
		}
	}
	p.i = i
	if neg && zero && !p.envelope {
		p.i = start
		p.fail(RuleLossless, "-0 is not lossless JSON")
		return nil
	}
	return b[start:i]
}

// strBytes reads a string and returns its value, aliasing the input when
// the string has no escapes.
func (p *parser) strBytes() []byte {
	raw := p.str()
	if len(raw) < 2 {
		return nil
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	return []byte(str(raw))
}

// strOrNull reads a string (returning its value) or null; any other kind
// records what as a payload error in *bad.
func (p *parser) strOrNull(depth int, what string, bad *string) []byte {
	switch p.peek() {
	case '"':
		return p.strBytes()
	case 'n':
		p.literal("null")
	default:
		if *bad == "" {
			*bad = what + " must be a string"
		}
		p.value(depth)
	}
	return nil
}
