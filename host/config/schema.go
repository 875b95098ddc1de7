package config

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// kind is the shape of a configuration key.
type kind uint8

const (
	kindStruct   kind = iota // fixed keys
	kindMap                  // named entries (models, perModel)
	kindList                 // ordered entries (sections, plugins)
	kindString               // text
	kindInt                  // whole number
	kindFloat                // number
	kindBool                 // true or false
	kindDuration             // "2s", "1m30s"
	kindObject               // free-form mapping, kept as JSON
)

// node is the schema of one key, derived from the koanf tags of Config.
type node struct {
	kind   kind
	fields []field // kindStruct, in declaration order
	elem   *node   // kindMap and kindList
}

type field struct {
	name string
	node *node
}

func (n *node) field(name string) *node {
	for _, f := range n.fields {
		if f.name == name {
			return f.node
		}
	}
	return nil
}

// fieldFold finds a field by name ignoring case.
func (n *node) fieldFold(name string) (string, *node) {
	for _, f := range n.fields {
		if strings.EqualFold(f.name, name) {
			return f.name, f.node
		}
	}
	return "", nil
}

func (n *node) names() []string {
	out := make([]string, len(n.fields))
	for i, f := range n.fields {
		out[i] = f.name
	}
	return out
}

func (n *node) leaf() bool { return n.kind >= kindString }

var (
	durationType = reflect.TypeFor[time.Duration]()
	objectType   = reflect.TypeFor[jsontext.Value]()
	schema       = build(reflect.TypeFor[Config]())
)

func build(t reflect.Type) *node {
	switch t {
	case durationType:
		return &node{kind: kindDuration}
	case objectType:
		return &node{kind: kindObject}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return build(t.Elem())
	case reflect.Struct:
		n := &node{kind: kindStruct}
		for i := range t.NumField() {
			f := t.Field(i)
			if tag := f.Tag.Get("koanf"); tag != "" && tag != "-" {
				n.fields = append(n.fields, field{tag, build(f.Type)})
			}
		}
		return n
	case reflect.Map:
		return &node{kind: kindMap, elem: build(t.Elem())}
	case reflect.Slice:
		return &node{kind: kindList, elem: build(t.Elem())}
	case reflect.String:
		return &node{kind: kindString}
	case reflect.Int64, reflect.Int:
		return &node{kind: kindInt}
	case reflect.Float64:
		return &node{kind: kindFloat}
	case reflect.Bool:
		return &node{kind: kindBool}
	}
	panic("config: no schema for " + t.String())
}

// invalid marks a value that failed its type check: it shadows lower
// sources (so no spurious default shows through) and is dropped before
// decoding, its key remembered so validation does not report it twice.
type invalid struct{}

// nameRE is what route and plugin names may look like: they are key path
// segments, so no dots.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// want says what a key of kind n must hold, for messages.
func want(n *node) string {
	switch n.kind {
	case kindStruct:
		return "a mapping with the keys " + strings.Join(n.names(), ", ")
	case kindMap:
		return "a mapping of names to entries"
	case kindList:
		return "a list"
	case kindString:
		return "a string"
	case kindInt:
		return "a whole number"
	case kindFloat:
		return "a number"
	case kindBool:
		return "true or false"
	case kindDuration:
		return `a duration such as "2s" or "1m30s"`
	case kindObject:
		return "a mapping (it is passed to the plugin as a JSON object)"
	}
	return "a value"
}

// got describes a decoded YAML value for messages.
func got(v any) string {
	switch v := v.(type) {
	case nil:
		return "nothing"
	case string:
		return strconv.Quote(v)
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprint(v)
}

// scalar checks a decoded YAML value against a leaf kind and normalizes
// it: strings, int64, bool, time.Duration, or a JSON object.
func scalar(n *node, v any) (any, string) {
	bad := func() (any, string) { return nil, "must be " + want(n) + ", got " + got(v) }
	switch n.kind {
	case kindString:
		if s, ok := v.(string); ok {
			return s, ""
		}
	case kindInt:
		switch x := v.(type) {
		case int:
			return int64(x), ""
		case int64:
			return x, ""
		case uint64:
			if x <= math.MaxInt64 {
				return int64(x), ""
			}
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
				return int64(x), ""
			}
		}
	case kindFloat:
		switch x := v.(type) {
		case int:
			return float64(x), ""
		case int64:
			return float64(x), ""
		case uint64:
			return float64(x), ""
		case float64:
			return x, ""
		}
	case kindBool:
		if b, ok := v.(bool); ok {
			return b, ""
		}
	case kindDuration:
		switch x := v.(type) {
		case string:
			return parseDuration(x)
		case time.Duration:
			return x, ""
		case int, int64, float64:
			return nil, "must be " + want(n) + ", got " + got(v) + " with no unit; write it as \"" + got(v) + "s\" for seconds"
		}
	case kindObject:
		switch x := v.(type) {
		case nil:
			return jsontext.Value("{}"), ""
		case map[string]any:
			b, err := json.Marshal(x, json.Deterministic(true))
			if err != nil {
				return nil, "cannot be passed to the plugin as JSON: " + err.Error()
			}
			return jsontext.Value(b), ""
		case jsontext.Value:
			if x.Kind() == '{' {
				return x, ""
			}
		}
	}
	return bad()
}

func parseDuration(s string) (any, string) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return nil, "must be " + want(&node{kind: kindDuration}) + ", got " + strconv.Quote(s)
	}
	return d, ""
}

// parseText converts the text of an environment variable or a string flag
// to a leaf kind.
func parseText(n *node, s string) (any, string) {
	switch n.kind {
	case kindString:
		return s, ""
	case kindInt:
		i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, "must be a whole number, got " + strconv.Quote(s)
		}
		return i, ""
	case kindFloat:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, "must be a number, got " + strconv.Quote(s)
		}
		return f, ""
	case kindBool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return nil, "must be true or false, got " + strconv.Quote(s)
		}
		return b, ""
	case kindDuration:
		return parseDuration(s)
	case kindObject:
		v := jsontext.Value(s)
		if !v.IsValid() || v.Kind() != '{' {
			return nil, "must be a JSON object, got " + strconv.Quote(s)
		}
		return v, ""
	}
	return nil, "cannot be set from text: it is " + want(n)
}

// encode turns a Go value of the configuration model into a tree of the
// normalized form (plugins keyed by name, as in every source layer).
func encode(n *node, v reflect.Value, top bool) any {
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	switch n.kind {
	case kindStruct:
		m := map[string]any{}
		t := v.Type()
		i := 0
		for j := range t.NumField() {
			tag := t.Field(j).Tag.Get("koanf")
			if tag == "" || tag == "-" {
				continue
			}
			f := n.fields[i]
			i++
			fv := v.Field(j)
			if top && f.name == "plugins" {
				pm := map[string]any{}
				for k := range fv.Len() {
					e := encode(f.node.elem, fv.Index(k), false).(map[string]any)
					pm[e["name"].(string)] = e
				}
				m[f.name] = pm
				continue
			}
			m[f.name] = encode(f.node, fv, false)
		}
		return m
	case kindMap:
		m := map[string]any{}
		iter := v.MapRange()
		for iter.Next() {
			m[iter.Key().String()] = encode(n.elem, iter.Value(), false)
		}
		return m
	case kindList:
		l := make([]any, v.Len())
		for i := range l {
			l[i] = encode(n.elem, v.Index(i), false)
		}
		return l
	case kindString:
		return v.String()
	case kindInt:
		return v.Int()
	case kindFloat:
		return v.Float()
	case kindBool:
		return v.Bool()
	case kindDuration:
		return time.Duration(v.Int())
	case kindObject:
		return jsontext.Value(slices.Clone(v.Bytes()))
	}
	return nil
}
