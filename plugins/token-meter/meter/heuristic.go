package meter

import (
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

// The fixed estimator of spec 12.1. Lengths are UTF-16 code units, and the
// JSON a price is taken from is measured as the reference's JSON.stringify
// writes it: compact, keys in stored order, strings escaped the JavaScript
// way (only quote, backslash and control characters; lone surrogates as
// \uXXXX), numbers in JavaScript's shortest form. It is measured from the
// stored bytes without re-encoding them.

// overhead is the constant the estimator adds per block, per message (role
// overhead), per tool result and per tool list.
const overhead = 4

// quarter is ceil(n/4).
func quarter(n int) int64 { return int64(n+3) / 4 }

// EstimateBlock returns the fixed-estimator price of one content block:
// text and reasoning ceil(len/4)+4; tool-call
// ceil(len(name)/4)+ceil(len(arguments)/4)+4; tool-result the price of its
// inner blocks +4; any other block 4+ceil(len(JSON(block))/4).
func EstimateBlock(b *surface.Block) int64 {
	switch b.Type {
	case surface.BlockText, surface.BlockReasoning:
		return int64(tokenizer.HeuristicCount(b.Text)) + overhead
	case surface.BlockToolCall:
		return int64(tokenizer.HeuristicCount(b.Name)) + int64(tokenizer.HeuristicCount(b.Arguments)) + overhead
	case surface.BlockToolResult:
		return estimateBlocks(b.Content) + overhead
	}
	return overhead + quarter(blockJSONLen(b))
}

func estimateBlocks(content []surface.Block) int64 {
	var n int64
	for i := range content {
		n += EstimateBlock(&content[i])
	}
	return n
}

// EstimateMessage returns the fixed-estimator price of a message holding
// content: the sum of its block prices plus 4 for the role. It does not
// apply the projection rule (see EstimateNode).
func EstimateMessage(content []surface.Block) int64 {
	return estimateBlocks(content) + overhead
}

// EstimateNode returns the fixed-estimator price of a surface event of type
// typ holding message m: 0 when the event projects to no message (an
// empty-content system or assistant message, a log-only type), else
// EstimateMessage of its content.
func EstimateNode(typ string, m *surface.Message) int64 {
	if _, ok := surface.Project(typ, m); !ok {
		return 0
	}
	return EstimateMessage(m.Content)
}

// EstimateTools returns the fixed-estimator price of a tool list:
// ceil(len(JSON(tools))/4)+4, and 0 when there are none.
func EstimateTools(tools []jsontext.Value) int64 {
	if len(tools) == 0 {
		return 0
	}
	return quarter(toolsJSONLen(tools)) + overhead
}

// toolsJSONLen is the length of the JSON array of tools.
func toolsJSONLen(tools []jsontext.Value) int {
	n := 2 + len(tools) - 1 // brackets and commas
	for _, t := range tools {
		n += JSONLen(t)
	}
	return n
}

// blockJSONLen is the length of an unknown block's JSON: its stored object,
// or {"type":...} for a block built without one.
func blockJSONLen(b *surface.Block) int {
	if len(b.Unknown) > 0 {
		return JSONLen(b.Unknown)
	}
	q, _ := jsontext.AppendQuote(nil, b.Type)
	return len(`{"type":}`) + JSONLen(q)
}

// JSONLen returns the length in UTF-16 code units of JSON.stringify of the
// valid JSON value v: the value written compactly, keys in stored order,
// strings escaped as JavaScript escapes them and numbers in JavaScript's
// shortest form.
func JSONLen(v []byte) int {
	n := 0
	for i := 0; i < len(v); {
		switch c := v[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"':
			var k int
			k, i = stringLen(v, i)
			n += k
		case c == 't' || c == 'n':
			n, i = n+4, i+4
		case c == 'f':
			n, i = n+5, i+5
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(v) && isNumberByte(v[j]) {
				j++
			}
			n += numberLen(v[i:j])
			i = j
		default: // { } [ ] : ,
			n++
			i++
		}
	}
	return n
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// stringLen measures the JSON string starting at v[i] (the opening quote)
// as JSON.stringify would write its value, and returns that length and the
// index after the closing quote.
func stringLen(v []byte, i int) (int, int) {
	n := 2
	i++
	for i < len(v) {
		c := v[i]
		switch {
		case c == '"':
			return n, i + 1
		case c == '\\':
			if i+1 >= len(v) {
				return n, len(v)
			}
			switch v[i+1] {
			case 'u':
				u := hex4(v, i+2)
				i += 6
				switch {
				case u >= 0xD800 && u < 0xDC00:
					if i+6 <= len(v) && v[i] == '\\' && v[i+1] == 'u' {
						if lo := hex4(v, i+2); lo >= 0xDC00 && lo < 0xE000 {
							n += 2 // a pair: one astral character
							i += 6
							continue
						}
					}
					n += 6 // lone surrogate, written as \uXXXX
				case u >= 0xDC00 && u < 0xE000:
					n += 6
				default:
					n += unitLen(u)
				}
			case '/':
				n++ // "\/" is written as "/"
				i += 2
			default: // \" \\ \b \f \n \r \t
				n += 2
				i += 2
			}
		case c < utf8.RuneSelf:
			n += unitLen(rune(c))
			i++
		default:
			r, w := utf8.DecodeRune(v[i:])
			if r >= 0x10000 {
				n += 2
			} else {
				n++
			}
			i += w
		}
	}
	return n, i
}

// unitLen is the written length of a BMP code unit inside a string.
func unitLen(u rune) int {
	switch {
	case u == '"' || u == '\\' || u == '\b' || u == '\f' || u == '\n' || u == '\r' || u == '\t':
		return 2
	case u < 0x20:
		return 6
	}
	return 1
}

func hex4(v []byte, i int) rune {
	if i+4 > len(v) {
		return 0
	}
	var u rune
	for _, c := range v[i : i+4] {
		u <<= 4
		switch {
		case c >= '0' && c <= '9':
			u |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			u |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			u |= rune(c - 'A' + 10)
		}
	}
	return u
}

// numberLen is the length of JavaScript's String(Number(raw)).
func numberLen(raw []byte) int {
	// Integers of up to 15 digits print as written.
	d := raw
	if d[0] == '-' {
		d = d[1:]
	}
	plain := len(d) > 0 && len(d) <= 15 && (d[0] != '0' || len(d) == 1)
	for _, c := range d {
		plain = plain && c >= '0' && c <= '9'
	}
	if plain {
		if len(d) == 1 && d[0] == '0' {
			return 1 // -0 prints as 0
		}
		return len(raw)
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil && f == 0 {
		return len(raw)
	}
	return floatLen(f)
}

// floatLen is the length of JavaScript's Number::toString(f).
func floatLen(f float64) int {
	if f != f || f > 1.7976931348623157e308 || f < -1.7976931348623157e308 {
		return 4 // JSON.stringify writes null
	}
	if f == 0 {
		return 1
	}
	sign := 0
	if f < 0 {
		sign, f = 1, -f
	}
	var buf [32]byte
	s := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // d[.ddd]e±x
	e := 0
	for e < len(s) && s[e] != 'e' {
		e++
	}
	k := e // significant digits
	if k > 1 {
		k--
	}
	x, _ := strconv.Atoi(string(s[e+1:]))
	n := x + 1 // the decimal point sits after n digits
	switch {
	case k <= n && n <= 21:
		return sign + n
	case 0 < n && n <= 21:
		return sign + k + 1
	case -6 < n && n <= 0:
		return sign + 2 - n + k
	}
	m := 1
	if k > 1 {
		m = k + 1
	}
	if x < 0 {
		x = -x
	}
	return sign + m + 2 + len(strconv.Itoa(x))
}
