package host

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/weirhost/weir/surface"
)

// TypedTool is a Tool whose arguments are a Go type In and whose result is
// a Go value Out. Its parameters schema is derived from In, once, when it
// is made (NewTool), and every call's arguments are checked against that
// schema before they are decoded, so fn only ever sees arguments that
// match it. A call whose arguments do not match gets an error result that
// names the rule they break, which the model sees and can correct.
//
// In must be a struct (or a pointer to one) or a map with string keys: a
// tool's parameters are a JSON object. Field names follow the "json" tags;
// a field's "jsonschema" tag is its description; a field with omitempty
// or omitzero is optional, the others are required; fields not in In are
// refused. Out is sent as text when it is a string and as JSON otherwise.
type TypedTool[In, Out any] struct {
	name        string
	description string
	schema      jsontext.Value // the schema object sent on the wire
	resolved    *jsonschema.Resolved
	fn          func(ctx context.Context, in In) (Out, error)
}

// ErrToolArguments is the error (errors.Is) of a call whose arguments are
// not JSON or do not match the tool's schema.
var ErrToolArguments = errors.New("tool arguments do not match the tool's parameters schema")

// NewTool makes a TypedTool named name that runs fn. It fails when In
// cannot be described by a JSON schema of an object (a channel or function
// field, a non-object type, a recursive type).
func NewTool[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error)) (*TypedTool[In, Out], error) {
	if name == "" {
		return nil, errors.New("tool: empty name")
	}
	if fn == nil {
		return nil, fmt.Errorf("tool %q: nil function", name)
	}
	t := reflect.TypeFor[In]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct && (t.Kind() != reflect.Map || t.Key().Kind() != reflect.String) {
		return nil, fmt.Errorf("tool %q: arguments type %s is not a struct or a map with string keys (a tool's parameters are a JSON object)", name, t)
	}
	s, err := jsonschema.ForType(t, nil)
	if err != nil {
		return nil, fmt.Errorf("tool %q: arguments type %s: %w", name, t, err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("tool %q: arguments type %s: %w", name, t, err)
	}
	params, err := stdjson.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("tool %q: arguments type %s: %w", name, t, err)
	}
	obj, err := surface.Data(struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  jsontext.Value `json:"parameters"`
	}{name, description, params})
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", name, err)
	}
	return &TypedTool[In, Out]{name: name, description: description, schema: obj, resolved: resolved, fn: fn}, nil
}

// MustTool is NewTool for tools defined at package level: it panics where
// NewTool returns an error.
func MustTool[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error)) *TypedTool[In, Out] {
	t, err := NewTool(name, description, fn)
	if err != nil {
		panic(err)
	}
	return t
}

// Name is the tool's name.
func (t *TypedTool[In, Out]) Name() string { return t.name }

// Schema is the tool's schema object, its parameters derived from In.
func (t *TypedTool[In, Out]) Schema() jsontext.Value { return t.schema }

// Run checks arguments against the schema, decodes them into In, calls the
// function and encodes its result. Empty arguments are an empty object.
func (t *TypedTool[In, Out]) Run(ctx context.Context, arguments string) ([]surface.Block, error) {
	in, err := t.Decode(arguments)
	if err != nil {
		return nil, err
	}
	out, err := t.fn(ctx, in)
	if err != nil {
		return nil, err
	}
	if s, ok := any(out).(string); ok {
		return []surface.Block{surface.Text(s)}, nil
	}
	b, err := json.Marshal(out, json.Deterministic(true))
	if err != nil {
		return nil, fmt.Errorf("tool %q: encoding its result: %w", t.name, err)
	}
	return []surface.Block{surface.Text(string(b))}, nil
}

// Decode checks arguments against the tool's schema and decodes them into
// an In. Its error wraps ErrToolArguments.
func (t *TypedTool[In, Out]) Decode(arguments string) (In, error) {
	var in In
	if strings.TrimSpace(arguments) == "" {
		arguments = "{}"
	}
	var v any
	dec := stdjson.NewDecoder(strings.NewReader(arguments))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return in, fmt.Errorf("%w: not JSON: %v", ErrToolArguments, err)
	}
	if dec.More() {
		return in, fmt.Errorf("%w: more than one JSON value", ErrToolArguments)
	}
	if err := t.resolved.Validate(numbers(v)); err != nil {
		return in, fmt.Errorf("%w: %v", ErrToolArguments, err)
	}
	dec = stdjson.NewDecoder(bytes.NewReader([]byte(arguments)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, fmt.Errorf("%w: %v", ErrToolArguments, err)
	}
	return in, nil
}

// numbers turns json.Number values into the int64 or float64 the schema
// validator expects, keeping integers exact.
func numbers(v any) any {
	switch x := v.(type) {
	case stdjson.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}
