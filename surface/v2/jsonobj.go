package v2

import (
	"bytes"
	"errors"
	"io"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// member is one member of a JSON object: its name as written (quoted) and
// unquoted, and its value bytes exactly as written.
type member struct {
	raw   []byte // quoted name
	name  string
	value jsontext.Value
}

var (
	errNotObject = errors.New("not a JSON object")
	errTrailing  = errors.New("trailing data after the JSON object")
)

// members splits a JSON object into its members, in order, keeping every
// name and value byte-exact. It validates the object (syntax, UTF-8,
// duplicate names).
func members(v []byte) ([]member, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	if tok.Kind() != '{' {
		return nil, errNotObject
	}
	var ms []member
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		m := member{raw: bytes.Clone(name), name: unquote(name)}
		val, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		m.value = val.Clone()
		ms = append(ms, m)
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errTrailing
	}
	return ms, nil
}

// appendObject writes ms as a compact JSON object.
func appendObject(dst []byte, ms []member) []byte {
	dst = append(dst, '{')
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, m.raw...)
		dst = append(dst, ':')
		dst = append(dst, m.value...)
	}
	return append(dst, '}')
}

func find(ms []member, name string) int {
	for i := range ms {
		if ms[i].name == name {
			return i
		}
	}
	return -1
}

// set replaces the value of member name, or appends the member.
func set(ms []member, name string, value []byte) []member {
	if i := find(ms, name); i >= 0 {
		ms[i].value = value
		return ms
	}
	raw, _ := jsontext.AppendQuote(nil, name)
	return append(ms, member{raw: raw, name: name, value: value})
}

// drop removes member name, if present.
func drop(ms []member, name string) []member {
	if i := find(ms, name); i >= 0 {
		return append(ms[:i:i], ms[i+1:]...)
	}
	return ms
}

func unquote(v []byte) string {
	s, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		return string(v)
	}
	return string(s)
}

func quote(s string) []byte {
	b, _ := jsontext.AppendQuote(nil, s)
	return b
}

// parseInt reads a JSON number that is an integer within the safe range
// (|n| <= 2^53-1), rejecting -0.
func parseInt(v []byte) (int64, bool) {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return 0, false
	}
	const limit = 1<<53 - 1
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		if (n == 0 && v[0] == '-') || n > limit || n < -limit {
			return 0, false
		}
		return n, true
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f != float64(int64(f)) || f > limit || f < -limit || (f == 0 && v[0] == '-') {
		return 0, false
	}
	return int64(f), true
}

// parseSeq reads a non-negative safe integer.
func parseSeq(v []byte) (int64, bool) {
	n, ok := parseInt(v)
	return n, ok && n >= 0
}

// negativeZero reports whether valid JSON v holds a -0 number (any spelling:
// -0, -0.0, -0e3) outside strings.
func negativeZero(v []byte) bool {
	inStr := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '-':
			if i > 0 && (v[i-1] == 'e' || v[i-1] == 'E') {
				continue // an exponent sign, as in 1e-0
			}
			j, zero := i+1, true
			for ; j < len(v); j++ {
				d := v[j]
				if d >= '1' && d <= '9' {
					zero = false
				} else if d != '0' && d != '.' {
					break
				}
			}
			if zero {
				return true
			}
			i = j - 1
		}
	}
	return false
}

// appendSeqs writes seqs as a JSON array.
func appendSeqs(dst []byte, seqs []int64) []byte {
	dst = append(dst, '[')
	for i, s := range seqs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, s, 10)
	}
	return append(dst, ']')
}
