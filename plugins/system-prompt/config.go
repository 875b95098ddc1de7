package systemprompt

import (
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// readConfig decodes the configuration object (see the package comment)
// from dec. A null anywhere a value is expected leaves the default.
// Syntax errors are the decoder's, which name the place in the document.
func readConfig(dec *jsontext.Decoder, c *config) error {
	return readObject(dec, "the configuration", func(name string) error {
		switch name {
		case "perModel":
			return readObject(dec, "perModel", func(route string) error {
				if c.PerModel == nil {
					c.PerModel = map[string][]section{}
				}
				where := "perModel[" + strconv.Quote(route) + "]"
				secs := []section{}
				err := readArray(dec, where, func(i int) error {
					var s section
					at := where + "[" + strconv.Itoa(i) + "]"
					err := readObject(dec, at, func(name string) error {
						switch name {
						case "key":
							return readString(dec, at+".key", &s.Key)
						case "text":
							return readString(dec, at+".text", &s.Text)
						}
						return fmt.Errorf("%s: unknown field %q: a section has the fields key and text", at, name)
					})
					secs = append(secs, s)
					return err
				})
				c.PerModel[route] = secs
				return err
			})
		case "data":
			c.Data = nil
			return readArray(dec, "data", func(i int) error {
				var k string
				err := readString(dec, "data["+strconv.Itoa(i)+"]", &k)
				c.Data = append(c.Data, k)
				return err
			})
		}
		return fmt.Errorf("unknown field %q: the configuration has the fields perModel and data", name)
	})
}

// readObject reads an object (or null), calling member with each name to
// read that member's value.
func readObject(dec *jsontext.Decoder, where string, member func(name string) error) error {
	tok, err := dec.ReadToken()
	switch {
	case err != nil:
		return err
	case tok.Kind() == 'n':
		return nil
	case tok.Kind() != '{':
		return fmt.Errorf("%s must be a JSON object, not %s", where, kindName(tok.Kind()))
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if err := member(name.String()); err != nil {
			return err
		}
	}
	_, err = dec.ReadToken()
	return err
}

// readArray reads an array (or null), calling elem with each index to read
// that element.
func readArray(dec *jsontext.Decoder, where string, elem func(i int) error) error {
	tok, err := dec.ReadToken()
	switch {
	case err != nil:
		return err
	case tok.Kind() == 'n':
		return nil
	case tok.Kind() != '[':
		return fmt.Errorf("%s must be a JSON array, not %s", where, kindName(tok.Kind()))
	}
	for i := 0; dec.PeekKind() != ']'; i++ {
		if err := elem(i); err != nil {
			return err
		}
	}
	_, err = dec.ReadToken()
	return err
}

// readString reads a string (or null, which leaves *s as it is).
func readString(dec *jsontext.Decoder, where string, s *string) error {
	tok, err := dec.ReadToken()
	switch {
	case err != nil:
		return err
	case tok.Kind() == 'n':
		return nil
	case tok.Kind() != '"':
		return fmt.Errorf("%s must be a string, not %s", where, kindName(tok.Kind()))
	}
	*s = tok.String()
	return nil
}

// kindName names the kind of a JSON value's first token.
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case '{', '}':
		return "an object"
	case '[', ']':
		return "an array"
	}
	return "null"
}
