// Package jsonobj reads JSON objects member by member with jsontext, for
// guest modules that decode small objects without the reflective
// unmarshaler of go-json-experiment/json (which links reflect, fmt and
// time, about a quarter of a Go guest's code).
//
// Members, Int and String accept and refuse what json.Unmarshal does into
// a struct of pointer, integer and string fields: member names match
// exactly, a duplicate name, invalid JSON or UTF-8 and trailing data fail,
// and null stands for an absent value. Unknown members are the caller's
// choice: fn skips them by returning nil, or refuses them with UnknownMember.
package jsonobj

import (
	"bytes"
	"errors"
	"io"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// Members calls fn with the name and value of each member of the JSON
// object raw, in document order; v is valid only during the call. A null
// raw is an object without members. An error of fn is returned with the
// member's name in front. The object is checked as it is read, so fn may
// have seen the members before a malformed one: on an error, discard what
// fn filled.
func Members(raw []byte, fn func(name string, v jsontext.Value) error) error {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case 'n':
	case '{':
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			if err != nil {
				return err
			}
			name := tok.String() // the token is void after the next read
			v, err := dec.ReadValue()
			if err != nil {
				return err
			}
			if err := fn(name, v); err != nil {
				if _, ok := err.(*unknownError); ok {
					return err
				}
				return errors.New("member " + strconv.Quote(name) + ": " + err.Error())
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
	default:
		return errors.New("JSON " + KindName(tok.Kind()) + " is not an object")
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = errors.New("trailing data after the JSON value")
		}
		return err
	}
	return nil
}

type unknownError struct{ msg string }

func (e *unknownError) Error() string { return e.msg }

// UnknownMember is the error for fn to return for a member it does not
// know; known describes the members that are.
func UnknownMember(name, known string) error {
	return &unknownError{"unknown object member name " + strconv.Quote(name) + ": " + known}
}

// Int reads a JSON integer that fits in an int64; null is nil.
func Int(v jsontext.Value) (*int64, error) {
	switch v.Kind() {
	case 'n':
		return nil, nil
	case '0':
	default:
		return nil, errors.New("JSON " + KindName(v.Kind()) + " is not an integer")
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return nil, errors.New("JSON number " + string(v) + " is not a 64-bit integer")
	}
	return &n, nil
}

// String reads a JSON string; null is "".
func String(v jsontext.Value) (string, error) {
	switch v.Kind() {
	case 'n':
		return "", nil
	case '"':
	default:
		return "", errors.New("JSON " + KindName(v.Kind()) + " is not a string")
	}
	b, err := jsontext.AppendUnquote(nil, v)
	return string(b), err
}

// KindName names a JSON kind in errors: null, boolean, string, number,
// object or array.
func KindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}
