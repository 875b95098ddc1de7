package surface

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// Decoder decodes JSONL event lines. It reuses its internal buffers, so one
// Decoder decodes many lines with few allocations. A Decoder is not safe for
// concurrent use; the zero value is ready to use.
type Decoder struct {
	// Prepare makes Decode also parse the payload that admission needs, so
	// that parallel decoders take that work off the sequential fold. It
	// changes nothing observable: admission reports the same errors at the
	// same event.
	Prepare bool

	dec jsontext.Decoder
	rd  bytes.Buffer
	on  bool
}

// prepared is a payload parsed ahead of admission, or the error parsing it.
type prepared struct {
	p   payload
	err *Error
}

// DecodeEvent decodes one event line with a fresh Decoder.
func DecodeEvent(line []byte) (Event, error) {
	var d Decoder
	return d.Decode(line)
}

type deferred struct {
	rule Rule
	msg  string
}

// Decode decodes one JSON event object. The returned event owns its memory
// (it does not alias line). Shape errors that the envelope rules cover are
// reported as *Error with the seq when the line had a readable one.
func (d *Decoder) Decode(line []byte) (Event, error) {
	d.rd = *bytes.NewBuffer(line)
	if !d.on {
		d.dec = *jsontext.NewDecoder(&d.rd)
		d.on = true
	} else {
		d.dec.Reset(&d.rd)
	}
	var (
		ev                    Event
		hasType, hasSeq, hasT bool
		hasData               bool
		rawOp, rawSrc         []byte
		first                 *deferred
		unknownKey            string
	)
	fail := func(rule Rule, format string, args ...any) {
		if first == nil {
			first = &deferred{rule, fmt.Sprintf(format, args...)}
		}
	}
	syntax := func(err error) (Event, error) {
		return Event{}, &Error{Seq: -1, Rule: RuleEnvelope, Msg: "not a JSON object: " + err.Error()}
	}
	tok, err := d.dec.ReadToken()
	if err != nil {
		return syntax(err)
	}
	if tok.Kind() != '{' {
		return Event{}, &Error{Seq: -1, Rule: RuleEnvelope, Msg: "event is not a JSON object"}
	}
	for d.dec.PeekKind() != '}' {
		name, err := d.dec.ReadToken()
		if err != nil {
			return syntax(err)
		}
		key := name.String()
		val, err := d.dec.ReadValue()
		if err != nil {
			return syntax(err)
		}
		switch key {
		case "type":
			if val.Kind() != '"' {
				fail(RuleEnvelope, "type is not a string")
				continue
			}
			ev.Type, hasType = unquote(val), true
		case "seq":
			n, ok := parseSafeInt(val)
			if !ok {
				fail(RuleEnvelope, "seq %s is not a non-negative safe integer", val)
				continue
			}
			ev.Seq, hasSeq = n, true
		case "time":
			n, ok := parseInt(val)
			if !ok {
				fail(RuleEnvelope, "time %s is not an integer", val)
				continue
			}
			ev.Time, hasT = n, true
		case "data":
			if val.Kind() != '{' {
				fail(RuleEnvelope, "data is not an object")
				continue
			}
			if at := negativeZero(val); at >= 0 {
				fail(RuleLossless, "data holds -0 at byte %d", at)
			}
			ev.Data, hasData, ev.checked = bytes.Clone(val), true, true
		case "surfaceOp":
			rawOp = bytes.Clone(val)
		case "sourceEventSeqs":
			rawSrc = bytes.Clone(val)
		case "ignorable":
			if val.Kind() != 't' {
				fail(RuleEnvelope, "ignorable must be exactly true, got %s", val)
				continue
			}
			ev.Ignorable = true
		default:
			if unknownKey == "" {
				unknownKey = key
			}
		}
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return syntax(err)
	}
	if _, err := d.dec.ReadToken(); err != io.EOF {
		return Event{}, &Error{Seq: -1, Rule: RuleEnvelope, Msg: "trailing data after the event object"}
	}
	seq := int64(-1)
	if hasSeq {
		seq = ev.Seq
	}
	if hasType && KindOf(ev.Type) == KindUnknown && ev.Ignorable && hasSeq {
		// An unknown ignorable event is retained verbatim; its other keys are
		// opaque to this build.
		data := ev.Data
		if data == nil {
			data = []byte("{}")
		}
		return Event{Type: ev.Type, Seq: ev.Seq, Time: ev.Time, Data: data, Ignorable: true,
			verbatim: bytes.Clone(bytes.TrimSpace(line))}, nil
	}
	if first != nil {
		return Event{}, &Error{Seq: seq, Type: ev.Type, Rule: first.rule, Msg: first.msg}
	}
	switch {
	case !hasType:
		return Event{}, errorf(seq, "", RuleEnvelope, "missing type")
	case !hasSeq:
		return Event{}, errorf(seq, ev.Type, RuleEnvelope, "missing seq")
	case !hasT:
		return Event{}, errorf(seq, ev.Type, RuleEnvelope, "missing time")
	case !hasData:
		return Event{}, errorf(seq, ev.Type, RuleEnvelope, "missing data")
	case unknownKey != "":
		return Event{}, errorf(seq, ev.Type, RuleEnvelope, "unknown envelope key %q", unknownKey)
	}
	if rawOp != nil {
		op, err := parseOp(rawOp)
		if err != nil {
			return Event{}, &Error{Seq: seq, Type: ev.Type, Rule: RuleSurfaceOp, Msg: err.Error()}
		}
		ev.Op = op
	}
	if rawSrc != nil {
		src, err := parseSources(rawSrc, ev.Seq)
		if err != nil {
			return Event{}, &Error{Seq: seq, Type: ev.Type, Rule: RuleSources, Msg: err.Error()}
		}
		ev.Sources = src
	}
	if d.Prepare && Known(ev.Type) {
		p, err := parsePayload(&ev)
		ev.pre = &prepared{p: p, err: err}
	}
	return ev, nil
}

// Verbatim returns the original line of an unknown ignorable event, if e is
// one: such events are re-encoded exactly as they were read.
func (e *Event) Verbatim() ([]byte, bool) { return e.verbatim, e.verbatim != nil }

func unquote(v jsontext.Value) string {
	s, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		return string(v)
	}
	return string(s)
}

// parseInt accepts a JSON number that is an integer in the safe range,
// rejecting -0.
func parseInt(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		if n == 0 && v[0] == '-' {
			return 0, false
		}
		if n > MaxSeq || n < -MaxSeq {
			return 0, false
		}
		return n, true
	}
	if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f != float64(int64(f)) || f > MaxSeq || f < -MaxSeq {
		return 0, false
	}
	if f == 0 && v[0] == '-' {
		return 0, false
	}
	return int64(f), true
}

func parseSafeInt(v []byte) (int64, bool) {
	n, ok := parseInt(v)
	return n, ok && n >= 0
}

var errReplaceShape = errors.New("invalid replace surfaceOp")

func parseOp(raw []byte) (Op, error) {
	v := jsontext.Value(raw)
	switch v.Kind() {
	case '"':
		if unquote(v) == "append" {
			return Append, nil
		}
		return Op{}, fmt.Errorf("invalid surfaceOp %s", raw)
	case '{':
	default:
		return Op{}, fmt.Errorf("invalid surfaceOp %s", raw)
	}
	dec := jsontext.NewDecoder(bytes.NewBuffer(raw))
	dec.ReadToken()
	op := Op{Kind: OpReplace}
	var seen [3]bool
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return Op{}, fmt.Errorf("%w: %v", errReplaceShape, err)
		}
		name := tok.String()
		val, err := dec.ReadValue()
		if err != nil {
			return Op{}, fmt.Errorf("%w: %v", errReplaceShape, err)
		}
		switch name {
		case "op":
			if unquote(val) != "replace" || val.Kind() != '"' {
				return Op{}, fmt.Errorf("%w: op %s is not \"replace\"", errReplaceShape, val)
			}
			seen[0] = true
		case "startSeq", "endSeq":
			n, ok := parseSafeInt(val)
			if !ok {
				return Op{}, fmt.Errorf("%w: %s %s is not a non-negative safe integer", errReplaceShape, name, val)
			}
			if name == "startSeq" {
				op.Start, seen[1] = n, true
			} else {
				op.End, seen[2] = n, true
			}
		default:
			return Op{}, fmt.Errorf("%w: unexpected key %q (want exactly op, startSeq, endSeq)", errReplaceShape, name)
		}
	}
	if !seen[0] || !seen[1] || !seen[2] {
		return Op{}, fmt.Errorf("%w: want exactly op, startSeq, endSeq in %s", errReplaceShape, raw)
	}
	return op, nil
}

// parseSources decodes sourceEventSeqs of the event with the given seq.
// Storage may compress runs of consecutive seqs as [first,last] pairs; they
// are expanded here. A run is expanded only when it stays below seq and the
// whole array within maxSources, so a short line cannot demand unbounded
// memory.
func parseSources(raw []byte, seq int64) ([]int64, error) {
	v := jsontext.Value(raw)
	if v.Kind() != '[' {
		return nil, fmt.Errorf("sourceEventSeqs is not an array: %s", raw)
	}
	dec := jsontext.NewDecoder(bytes.NewBuffer(raw))
	dec.ReadToken()
	out := []int64{}
	for i := 0; dec.PeekKind() != ']'; i++ {
		val, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		switch val.Kind() {
		case '0':
			n, ok := parseSafeInt(val)
			if !ok {
				return nil, fmt.Errorf("sourceEventSeqs[%d] = %s is not a non-negative safe integer", i, val)
			}
			out = append(out, n)
		case 'n':
			return nil, fmt.Errorf("sourceEventSeqs[%d] is a hole (null)", i)
		case '[':
			first, last, ok := parseRun(val)
			if !ok {
				return nil, fmt.Errorf("sourceEventSeqs[%d] = %s is not a non-negative safe integer", i, val)
			}
			if last >= seq {
				return nil, fmt.Errorf("sourceEventSeqs[%d] = %s must be less than the event's own seq %d", i, val, seq)
			}
			if int64(len(out))+last-first+1 > maxSources {
				return nil, fmt.Errorf("sourceEventSeqs expands to more than %d seqs", maxSources)
			}
			for n := first; n <= last; n++ {
				out = append(out, n)
			}
		default:
			return nil, fmt.Errorf("sourceEventSeqs[%d] = %s is not a non-negative safe integer", i, val)
		}
	}
	return out, nil
}

// parseRun reads a compressed [first,last] run of at least three seqs.
func parseRun(v jsontext.Value) (first, last int64, ok bool) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(v))
	dec.ReadToken()
	var ns []int64
	for dec.PeekKind() != ']' {
		val, err := dec.ReadValue()
		if err != nil {
			return 0, 0, false
		}
		n, ok := parseSafeInt(val)
		if !ok {
			return 0, 0, false
		}
		ns = append(ns, n)
	}
	if len(ns) != 2 || ns[1]-ns[0] < 2 {
		return 0, 0, false
	}
	return ns[0], ns[1], true
}

// negativeZero returns the offset of a -0 number literal (including forms
// such as -0.0 and -0e5) outside strings in valid JSON v, or -1.
func negativeZero(v []byte) int {
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
			j := i + 1
			zero := true
			for ; j < len(v); j++ {
				d := v[j]
				if d == 'e' || d == 'E' {
					break
				}
				if d >= '1' && d <= '9' {
					zero = false
				} else if d != '0' && d != '.' {
					break
				}
			}
			if zero {
				return i
			}
			i = j - 1
		}
	}
	return -1
}

// AppendEvent appends the canonical v3 JSON encoding of e (no newline) to dst.
// Keys are written in the order type, seq, time, data, surfaceOp,
// sourceEventSeqs, ignorable.
func AppendEvent(dst []byte, e *Event) []byte {
	if raw, ok := e.Verbatim(); ok {
		return append(dst, raw...)
	}
	dst = append(dst, `{"type":`...)
	dst, _ = jsontext.AppendQuote(dst, e.Type)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	dst = append(dst, `,"time":`...)
	dst = strconv.AppendInt(dst, e.Time, 10)
	dst = append(dst, `,"data":`...)
	if len(e.Data) == 0 {
		dst = append(dst, "{}"...)
	} else {
		dst = append(dst, e.Data...)
	}
	switch e.Op.Kind {
	case OpAppend:
		dst = append(dst, `,"surfaceOp":"append"`...)
	case OpReplace:
		dst = append(dst, `,"surfaceOp":{"op":"replace","startSeq":`...)
		dst = strconv.AppendInt(dst, e.Op.Start, 10)
		dst = append(dst, `,"endSeq":`...)
		dst = strconv.AppendInt(dst, e.Op.End, 10)
		dst = append(dst, '}')
	}
	if e.Sources != nil {
		dst = append(dst, `,"sourceEventSeqs":[`...)
		for i, s := range e.Sources {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, s, 10)
		}
		dst = append(dst, ']')
	}
	if e.Ignorable {
		dst = append(dst, `,"ignorable":true`...)
	}
	return append(dst, '}')
}

// MarshalJSON encodes e as its canonical v3 line.
func (e Event) MarshalJSON() ([]byte, error) { return AppendEvent(nil, &e), nil }

// UnmarshalJSON decodes a v3 event line.
func (e *Event) UnmarshalJSON(b []byte) error {
	ev, err := DecodeEvent(b)
	if err != nil {
		return err
	}
	*e = ev
	return nil
}
