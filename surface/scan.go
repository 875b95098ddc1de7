package surface

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// This file holds a minimal scanner over JSON that is already known to be
// valid (checked by jsontext when it was decoded or appended). Admission
// uses it to read the few members validation needs without building Go
// values; full messages are decoded lazily, when something reads them.

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string whose opening quote is at i.
func skipString(b []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		i += j
		// The quote ends the string unless an odd run of backslashes
		// escapes it.
		k := i - 1
		for k >= 0 && b[k] == '\\' {
			k--
		}
		if (i-1-k)%2 == 0 {
			return i + 1
		}
		i++
	}
}

// skipValue returns the index after the value starting at i.
func skipValue(b []byte, i int) int {
	i = skipSpace(b, i)
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default:
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && !isSpace(b[i]) {
			i++
		}
		return i
	}
}

// members calls fn with the raw key (quotes included) and raw value of each
// member of the object obj, until fn returns false.
func members(obj []byte, fn func(key, val []byte) bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] == '}' {
			return
		}
		if obj[i] == ',' {
			i++
			continue
		}
		ks := i
		i = skipString(obj, i)
		key := obj[ks:i]
		i = skipSpace(obj, i)
		i++ // ':'
		vs := skipSpace(obj, i)
		i = skipValue(obj, vs)
		if !fn(key, obj[vs:i]) {
			return
		}
	}
}

// elements calls fn with each raw element of the array arr.
func elements(arr []byte, fn func(val []byte) bool) {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return
	}
	i++
	for {
		i = skipSpace(arr, i)
		if i >= len(arr) || arr[i] == ']' {
			return
		}
		if arr[i] == ',' {
			i++
			continue
		}
		vs := i
		i = skipValue(arr, vs)
		if !fn(arr[vs:i]) {
			return
		}
	}
}

// keyIs reports whether the raw key equals name.
func keyIs(raw []byte, name string) bool {
	if len(raw) == len(name)+2 && string(raw[1:len(raw)-1]) == name {
		return true
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return false
	}
	return str(raw) == name
}

// str returns the value of a raw JSON string.
func str(raw []byte) string {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	s, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		return ""
	}
	return string(s)
}

// kindOf is the JSON kind of a raw value: '"', '0', '{', '[', 't', 'f', 'n'.
func kindOf(raw []byte) byte {
	if len(raw) == 0 {
		return 0
	}
	switch c := raw[0]; c {
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return '0'
	default:
		return c
	}
}
