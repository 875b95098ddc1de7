package meter

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/weirhost/weir/surface"
)

// The scanner reads what the meter prices from an event's data without
// reflection: the fast path of readSurface, readStep and readContent.
// It accepts only input it is sure the reflection-based decode reads the
// same way: valid JSON (UTF-8, escapes, number grammar, no duplicate member
// names at any depth) whose members the meter reads have the expected JSON
// kinds. Anything else (null where a value is read, a number that is not a
// plain integer, a member name with escapes, a lone surrogate, deep
// nesting, an error of any kind) makes it give up, and the caller decodes
// with the reflection-based decoder, which then reports the same result or
// error as it always did.

// maxScanDepth bounds the nesting the scanner follows before giving up.
const maxScanDepth = 64

// scanner is a cursor over one JSON text. ok turns false, for good, when it
// meets anything it does not handle.
type scanner struct {
	b  []byte
	i  int
	ok bool
	// keys holds the member names (start and end offsets in b) of the
	// objects being walked, innermost last; more than fit make the scan
	// give up.
	keys  [maxScanKeys][2]int32
	nkeys int
}

// maxScanKeys bounds the member names the scanner tracks at once.
const maxScanKeys = 64

func (s *scanner) fail() bool { s.ok = false; return false }

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, 0 at the end.
func (s *scanner) peek() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// end reports whether only space is left.
func (s *scanner) end() bool {
	s.space()
	return s.ok && s.i == len(s.b)
}

// object walks the object at the cursor: member calls fn with the raw name
// (without quotes; names with escapes make the scan give up) and the cursor
// at the value, which fn must consume. Duplicate names make it give up.
func (s *scanner) object(depth int, fn func(name []byte) bool) bool {
	if depth > maxScanDepth || s.peek() != '{' {
		return s.fail()
	}
	s.i++
	base := s.nkeys
	defer func() { s.nkeys = base }()
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		if s.peek() != '"' {
			return s.fail()
		}
		start := s.i + 1
		raw, esc := s.str()
		if !s.ok || esc || s.nkeys == maxScanKeys || len(s.b) > math.MaxInt32 {
			return s.fail()
		}
		for _, k := range s.keys[base:s.nkeys] {
			if bytes.Equal(s.b[k[0]:k[1]], raw) {
				return s.fail()
			}
		}
		s.keys[s.nkeys] = [2]int32{int32(start), int32(start + len(raw))}
		s.nkeys++
		if s.peek() != ':' {
			return s.fail()
		}
		s.i++
		if !fn(raw) || !s.ok {
			return s.fail()
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return s.fail()
		}
	}
}

// value skips the value at the cursor, checking it, and returns its bytes.
func (s *scanner) value(depth int) []byte {
	if depth > maxScanDepth {
		s.fail()
		return nil
	}
	c := s.peek()
	start := s.i
	switch {
	case c == '"':
		s.str()
	case c == '{':
		s.object(depth, func([]byte) bool { s.value(depth + 1); return true })
	case c == '[':
		s.i++
		if s.peek() == ']' {
			s.i++
			break
		}
		for s.ok {
			s.value(depth + 1)
			if c := s.peek(); c == ',' {
				s.i++
			} else if c == ']' {
				s.i++
				break
			} else {
				s.fail()
			}
		}
	case c == 't':
		s.literal("true")
	case c == 'f':
		s.literal("false")
	case c == 'n':
		s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		s.number()
	default:
		s.fail()
	}
	if !s.ok {
		return nil
	}
	return s.b[start:s.i]
}

func (s *scanner) literal(lit string) {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		s.fail()
		return
	}
	s.i += len(lit)
}

// number skips a number of the JSON grammar.
func (s *scanner) number() {
	b, i := s.b, s.i
	digits := func() bool {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		s.fail()
		return
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			s.fail()
			return
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			s.fail()
			return
		}
	}
	s.i = i
}

// int64 reads a plain integer: digits with an optional minus, no fraction
// or exponent, at most 18 digits, not -0.
func (s *scanner) int64() int64 {
	if s.peek() != '-' && (s.i >= len(s.b) || s.b[s.i] < '0' || s.b[s.i] > '9') {
		s.fail()
		return 0
	}
	raw := s.value(0)
	if !s.ok {
		return 0
	}
	neg := raw[0] == '-'
	d := raw
	if neg {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 || neg && len(d) == 1 && d[0] == '0' {
		s.fail()
		return 0
	}
	var n int64
	for _, c := range d {
		if c < '0' || c > '9' {
			s.fail()
			return 0
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n
}

// str checks the string at the cursor and returns its raw contents
// (without quotes) and whether it holds escapes. Control characters,
// invalid UTF-8, bad escapes and lone surrogates make the scan give up.
func (s *scanner) str() (raw []byte, esc bool) {
	b := s.b
	i := s.i + 1
	start := i
	for i < len(b) {
		// Skip eight plain bytes (printable ASCII but quote and backslash)
		// per iteration: a WebAssembly guest pays the sandbox's termination
		// check on every loop iteration.
		for i+8 <= len(b) && plain8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			s.i = i + 1
			return b[start:i], esc
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				s.fail()
				return nil, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				u, ok := hexRune(b, i+2)
				if !ok {
					s.fail()
					return nil, false
				}
				i += 6
				switch {
				case u >= 0xD800 && u < 0xDC00:
					lo, ok := rune(0), false
					if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
						lo, ok = hexRune(b, i+2)
					}
					if !ok || lo < 0xDC00 || lo >= 0xE000 {
						s.fail()
						return nil, false
					}
					i += 6
				case u >= 0xDC00 && u < 0xE000:
					s.fail()
					return nil, false
				}
			default:
				s.fail()
				return nil, false
			}
		case c < 0x20:
			s.fail()
			return nil, false
		case c < utf8.RuneSelf:
			i++
		default:
			r, w := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && w == 1 {
				s.fail()
				return nil, false
			}
			i += w
		}
	}
	s.fail()
	return nil, false
}

// string reads the string at the cursor.
func (s *scanner) string() string {
	if s.peek() != '"' {
		s.fail()
		return ""
	}
	raw, esc := s.str()
	if !s.ok {
		return ""
	}
	if !esc {
		return string(raw)
	}
	return unescape(raw)
}

// unescape decodes the contents of a string str checked.
func unescape(raw []byte) string {
	var out strings.Builder
	out.Grow(len(raw))
	for i := 0; i < len(raw); {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 {
			out.Write(raw[i:])
			break
		}
		out.Write(raw[i : i+j])
		i += j
		switch c := raw[i+1]; c {
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			u, _ := hexRune(raw, i+2)
			if u >= 0xD800 && u < 0xDC00 {
				lo, _ := hexRune(raw, i+8)
				u = 0x10000 + (u-0xD800)<<10 + (lo - 0xDC00)
				i += 6
			}
			out.WriteRune(u)
			i += 6
			continue
		default: // " \ /
			out.WriteByte(c)
		}
		i += 2
	}
	return out.String()
}

func hexRune(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var u rune
	for _, c := range b[i : i+4] {
		u <<= 4
		switch {
		case c >= '0' && c <= '9':
			u |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			u |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			u |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return u, true
}

// scanSurface is the fast path of readSurface: ok is false when the caller
// must decode the data with decodeSurface.
func scanSurface(data []byte, k nodeKind) (d surfaceData, ok bool) {
	d.kind = k
	s := scanner{b: data, ok: true}
	var content []byte
	var turn, step, msg bool
	var t, st int64
	s.object(0, func(name []byte) bool {
		switch {
		case string(name) == "content" && k == kindUser:
			content, d.blocks = s.content()
		case k == kindUser:
			s.value(1)
		case string(name) == "turn":
			t, turn = s.int64(), true
		case string(name) == "step":
			st, step = s.int64(), true
		case string(name) == "message":
			msg = true
			s.object(1, func(name []byte) bool {
				if string(name) == "content" {
					content, d.blocks = s.content()
				} else {
					s.value(2)
				}
				return true
			})
		case string(name) == "stream":
			d.stream = s.value(1)
		case string(name) == "usage":
			d.usage = s.usage()
		default:
			s.value(1)
		}
		return true
	})
	if !s.end() || content == nil || k != kindUser && !msg {
		return surfaceData{}, false
	}
	if turn && step {
		d.at, d.hasStep = stepRef{t, st}, true
	}
	d.content = bytes.Clone(content)
	return d, true
}

// content reads a message's content array: its bytes, and its blocks
// when the scanner reads them itself (else nil: readContent decodes them).
func (s *scanner) content() ([]byte, []surface.Block) {
	if s.peek() != '[' {
		s.fail()
		return nil, nil
	}
	start := s.i
	if blocks := s.blocks(2); s.ok {
		return s.b[start:s.i], blocks
	}
	s.ok, s.i = true, start
	return s.value(2), nil
}

// usage reads a usage object.
func (s *scanner) usage() *surface.Usage {
	u := new(surface.Usage)
	s.object(1, func(name []byte) bool {
		switch string(name) {
		case "inputTokens":
			u.Input = s.int64()
		case "outputTokens":
			u.Output = s.int64()
		case "cacheReadTokens":
			u.CacheRead = s.int64()
		case "cacheWriteTokens":
			u.CacheWrite = s.int64()
		case "reasoningTokens":
			u.Reasoning = s.int64()
		default:
			s.value(2)
		}
		return true
	})
	return u
}

// scanStep is the fast path of readStep: ok is false when the caller
// must decode the data with decodeStep.
func scanStep(data []byte) (stepRef, bool) {
	s := scanner{b: data, ok: true}
	var r stepRef
	var turn, step bool
	s.object(0, func(name []byte) bool {
		switch string(name) {
		case "turn":
			r.turn, turn = s.int64(), true
		case "step":
			r.step, step = s.int64(), true
		default:
			s.value(1)
		}
		return true
	})
	return r, s.end() && turn && step
}

// scanContent is the fast path of readContent: ok is false when the
// caller must decode raw with decodeContent. Blocks of a known type
// carry no Unknown (pricing does not read the members the meter does not
// know); blocks of another type carry their JSON object, as decoded.
func scanContent(raw []byte) ([]surface.Block, bool) {
	s := scanner{b: raw, ok: true}
	blocks := s.blocks(0)
	return blocks, s.end()
}

// blocks reads an array of content blocks.
func (s *scanner) blocks(depth int) []surface.Block {
	if depth > maxScanDepth || s.peek() != '[' {
		s.fail()
		return nil
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return []surface.Block{}
	}
	var buf [4]surface.Block // most messages hold a few blocks: one allocation
	out := buf[:0]
	for s.ok {
		out = append(out, s.block(depth+1))
		if c := s.peek(); c == ',' {
			s.i++
		} else if c == ']' {
			s.i++
			return slices.Clone(out)
		} else {
			s.fail()
		}
	}
	return nil
}

// blockType reads a block's type, without allocating a known one.
func (s *scanner) blockType() string {
	if s.peek() == '"' {
		end := bytes.IndexByte(s.b[s.i+1:], '"')
		if end >= 0 {
			switch t := s.b[s.i+1 : s.i+1+end]; string(t) {
			case surface.BlockText, surface.BlockReasoning, surface.BlockToolCall, surface.BlockToolResult:
				s.i += end + 2
				switch string(t) {
				case surface.BlockText:
					return surface.BlockText
				case surface.BlockReasoning:
					return surface.BlockReasoning
				case surface.BlockToolCall:
					return surface.BlockToolCall
				}
				return surface.BlockToolResult
			}
		}
	}
	return s.string()
}

// block reads one content block.
func (s *scanner) block(depth int) surface.Block {
	var b surface.Block
	s.peek()
	start := s.i
	s.object(depth, func(name []byte) bool {
		switch string(name) {
		case "type":
			b.Type = s.blockType()
		case "text":
			b.Text = s.string()
		case "id":
			b.ID = s.string()
		case "name":
			b.Name = s.string()
		case "arguments":
			b.Arguments = s.string()
		case "toolCallId":
			b.ToolCallID = s.string()
		case "isError":
			switch s.peek() {
			case 't':
				s.literal("true")
				b.IsError = true
			case 'f':
				s.literal("false")
			default:
				s.fail()
			}
		case "content":
			b.Content = s.blocks(depth + 1)
		default:
			s.value(depth + 1)
		}
		return true
	})
	if !s.ok {
		return surface.Block{}
	}
	switch b.Type {
	case surface.BlockText, surface.BlockReasoning, surface.BlockToolCall, surface.BlockToolResult:
		return b
	}
	return surface.Block{Type: b.Type, Unknown: bytes.Clone(s.b[start:s.i])}
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plain8 reports whether none of the eight bytes of x is a quote, a
// backslash, a control character or a non-ASCII byte.
func plain8(x uint64) bool {
	quote := x ^ ('"' * ones)
	backslash := x ^ ('\\' * ones)
	hasZero := func(v uint64) uint64 { return (v - ones) &^ v & highs }
	control := (x - 0x20*ones) &^ x & highs // a byte below 0x20
	return (hasZero(quote) | hasZero(backslash) | control | x&highs) == 0
}
