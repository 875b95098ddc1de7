package jsonobj

import (
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func TestMembers(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string // want: the members seen, name=value;
	}{
		{`{"a":1,"b":{"c":[null]}}`, `a=1;b={"c":[null]};`, ``},
		{` null `, ``, ``},
		{`{}`, ``, ``},
		{`{"a":1,"a":2}`, `a=1;`, `duplicate object member name "a"`},
		{`[]`, ``, `JSON array is not an object`},
		{`"x"`, ``, `JSON string is not an object`},
		{`{"a":1} {}`, `a=1;`, `trailing data after the JSON value`},
		{`{"a":1`, `a=1;`, `unexpected EOF`},
		{"{\"a\":\"\xff\"}", ``, `invalid UTF-8`},
		{`{"bad":1}`, ``, `unknown object member name "bad": known are a and b`},
		{`{"a":"s"}`, ``, `member "a": JSON string is not an integer`},
	} {
		var seen strings.Builder
		err := Members([]byte(tc.in), func(name string, v jsontext.Value) error {
			switch name {
			case "bad":
				return UnknownMember(name, "known are a and b")
			case "a":
				if v.Kind() == '"' {
					_, err := Int(v)
					return err
				}
			}
			seen.WriteString(name + "=" + string(v) + ";")
			return nil
		})
		if seen.String() != tc.want {
			t.Errorf("%s: saw %s, want %s", tc.in, seen.String(), tc.want)
		}
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want it to say %q", tc.in, err, tc.err)
		}
	}
}

func TestIntAndString(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    string // "" for nil, else the value
		nerr bool
		s    string
		serr bool
	}{
		{`null`, "", false, "", false},
		{`0`, "0", false, "", true},
		{`-9223372036854775808`, "-9223372036854775808", false, "", true},
		{`9223372036854775808`, "", true, "", true},
		{`1.5`, "", true, "", true},
		{`1e2`, "", true, "", true},
		{`"a\u00e9"`, "", true, "aé", false},
		{`true`, "", true, "", true},
		{`{}`, "", true, "", true},
	} {
		n, err := Int(jsontext.Value(tc.in))
		got := ""
		if n != nil {
			got = strconv.FormatInt(*n, 10)
		}
		if (err != nil) != tc.nerr || got != tc.n {
			t.Errorf("Int(%s) = %s, %v; want %s, error %v", tc.in, got, err, tc.n, tc.nerr)
		}
		s, err := String(jsontext.Value(tc.in))
		if (err != nil) != tc.serr || s != tc.s {
			t.Errorf("String(%s) = %q, %v; want %q, error %v", tc.in, s, err, tc.s, tc.serr)
		}
	}
}
