package surface

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// Decoder decodes JSONL event lines. It reuses its internal buffers, so one
// Decoder decodes many lines with few allocations. A Decoder is not safe for
// concurrent use; the zero value is ready to use.
type Decoder struct {
	// Prepare makes Decode also check the payload that admission needs, so
	// that parallel decoders take that work off the sequential fold. It
	// changes nothing observable: admission reports the same errors at the
	// same event.
	Prepare bool
	// Alias lets decoded events share the line's memory instead of copying
	// their data. Set it only when the caller never modifies or reuses the
	// bytes it passes to Decode.
	Alias bool

	keys, dataKeys [][]byte   // reused by the parsers
	slab           []prepared // prepared payloads are carved from here
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
// (it does not alias line). The line is validated in one pass: the envelope
// against 2.1, and data as lossless JSON; errors are *Error values with the
// seq when the line had a readable one.
func (d *Decoder) Decode(line []byte) (Event, error) {
	p := &parser{b: line, keys: d.keys[:0], envelope: true}
	defer func() { d.keys = p.keys[:0] }()
	var (
		ev                    Event
		hasType, hasSeq, hasT bool
		hasData               bool
		facts                 dataFacts
		hasFacts              bool
		dataStart             int
		dataErr               *parser
		rawOp, rawSrc         []byte
		first                 *deferred
		unknownKey            string
	)
	fail := func(rule Rule, format string, args ...any) {
		if first == nil {
			first = &deferred{rule, fmt.Sprintf(format, args...)}
		}
	}
	if p.peek() != '{' {
		return Event{}, &Error{Seq: -1, Rule: RuleEnvelope, Msg: "event is not a JSON object"}
	}
	p.object(0, func(key []byte) {
		start := p.i
		switch string(key) {
		case "type":
			if p.peek() != '"' {
				p.value(1)
				fail(RuleEnvelope, "type is not a string")
				return
			}
			ev.Type, hasType = typeName(p.strBytes()), true
		case "seq":
			p.value(1)
			val := line[start:p.i]
			n, ok := parseSafeInt(val)
			if !ok {
				fail(RuleEnvelope, "seq %s is not a non-negative safe integer", val)
				return
			}
			ev.Seq, hasSeq = n, true
		case "time":
			p.value(1)
			val := line[start:p.i]
			n, ok := parseInt(val)
			if !ok {
				fail(RuleEnvelope, "time %s is not an integer", val)
				return
			}
			ev.Time, hasT = n, true
		case "data":
			if p.peek() != '{' {
				p.value(1)
				fail(RuleEnvelope, "data is not an object")
				return
			}
			dataStart = start
			if hasType && Known(ev.Type) {
				sp := parser{b: line[start:], keys: d.dataKeys[:0]}
				facts, hasFacts = sp.scanData(ev.Type), true
				d.dataKeys = sp.keys[:0]
				p.i = start + sp.i
				if sp.err != "" {
					dataErr = &sp
					p.i = len(line) // stop: the rest cannot be trusted
					return
				}
			} else {
				sp := parser{b: line[start:], keys: d.dataKeys[:0]}
				sp.value(0)
				d.dataKeys = sp.keys[:0]
				p.i = start + sp.i
				if sp.err != "" {
					dataErr = &sp
					p.i = len(line)
					return
				}
			}
			ev.Data, hasData = line[start:p.i:p.i], true
			if !d.Alias {
				ev.Data = bytes.Clone(ev.Data)
			}
			ev.checked = p.err == ""
		case "surfaceOp":
			p.value(1)
			rawOp = line[start:p.i]
		case "sourceEventSeqs":
			p.value(1)
			rawSrc = line[start:p.i]
		case "ignorable":
			c := p.peek()
			p.value(1)
			if c != 't' {
				fail(RuleEnvelope, "ignorable must be exactly true, got %s", line[start:p.i])
				return
			}
			ev.Ignorable = true
		default:
			p.value(1)
			if unknownKey == "" {
				unknownKey = string(key)
			}
		}
	})
	seq := int64(-1)
	if hasSeq {
		seq = ev.Seq
	}
	if dataErr != nil {
		ev.Seq = seq
		ev.Data = line[:0]
		if len(line) > 0 {
			ev.Data = []byte{'{'}
		}
		return Event{}, dataError(&ev, dataErr)
	}
	if p.err == "" && p.peek() != 0 {
		p.fail(RuleEnvelope, "trailing data after the event object")
	}
	if p.err != "" {
		return Event{}, &Error{Seq: seq, Type: ev.Type, Rule: p.rule, Msg: fmt.Sprintf("line is not a JSON object: %s at byte %d", p.err, p.at)}
	}
	if hasType && KindOf(ev.Type) == KindUnknown && ev.Ignorable && hasSeq {
		// An unknown ignorable event is retained verbatim; its other keys are
		// opaque to this build.
		data := ev.Data
		if data == nil {
			data = []byte("{}")
		}
		return Event{Type: ev.Type, Seq: ev.Seq, Time: ev.Time, Data: data, Ignorable: true, checked: ev.checked,
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
		if len(d.slab) == 0 {
			d.slab = make([]prepared, 256)
		}
		pp := &d.slab[0]
		d.slab = d.slab[1:]
		if hasFacts {
			pp.p, pp.err = payloadFrom(&ev, &facts)
		} else {
			pp.p, pp.err = parsePayload(&ev)
		}
		// msgRaw must point into the event's own copy of the data.
		if pp.err == nil && pp.p.msgRaw != nil {
			if hasFacts {
				off := cap(line) - cap(pp.p.msgRaw) - dataStart
				pp.p.msgRaw = ev.Data[off : off+len(pp.p.msgRaw)]
			}
		}
		ev.pre = pp
	}
	return ev, nil
}

// Verbatim returns the original line of an unknown ignorable event, if e is
// one: such events are re-encoded exactly as they were read.
func (e *Event) Verbatim() ([]byte, bool) { return e.verbatim, e.verbatim != nil }

// parseInt accepts a JSON number that is an integer in the safe range,
// rejecting -0.
func parseInt(v []byte) (int64, bool) {
	if n, ok := parseDigits(v); ok {
		return n, true
	}
	return parseIntSlow(v)
}

// parseDigits parses a plain run of decimal digits without allocating.
func parseDigits(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 16 || (v[0] == '0' && len(v) > 1) {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, n <= MaxSeq
}

func parseIntSlow(v []byte) (int64, bool) {
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
	switch kindOf(raw) {
	case '"':
		if str(raw) == "append" {
			return Append, nil
		}
		return Op{}, fmt.Errorf("invalid surfaceOp %s", raw)
	case '{':
	default:
		return Op{}, fmt.Errorf("invalid surfaceOp %s", raw)
	}
	op := Op{Kind: OpReplace}
	var seen [3]bool
	var err error
	members(raw, func(k, val []byte) bool {
		name := str(k)
		switch name {
		case "op":
			if kindOf(val) != '"' || str(val) != "replace" {
				err = fmt.Errorf("%w: op %s is not \"replace\"", errReplaceShape, val)
			}
			seen[0] = true
		case "startSeq", "endSeq":
			n, ok := parseSafeInt(val)
			if !ok {
				err = fmt.Errorf("%w: %s %s is not a non-negative safe integer", errReplaceShape, name, val)
			} else if name == "startSeq" {
				op.Start, seen[1] = n, true
			} else {
				op.End, seen[2] = n, true
			}
		default:
			err = fmt.Errorf("%w: unexpected key %q (want exactly op, startSeq, endSeq)", errReplaceShape, name)
		}
		return err == nil
	})
	if err != nil {
		return Op{}, err
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
	if kindOf(raw) != '[' {
		return nil, fmt.Errorf("sourceEventSeqs is not an array: %s", raw)
	}
	out := make([]int64, 0, 4)
	var err error
	i := 0
	elements(raw, func(val []byte) bool {
		switch kindOf(val) {
		case '0':
			n, ok := parseSafeInt(val)
			if !ok {
				err = fmt.Errorf("sourceEventSeqs[%d] = %s is not a non-negative safe integer", i, val)
				return false
			}
			out = append(out, n)
		case 'n':
			err = fmt.Errorf("sourceEventSeqs[%d] is a hole (null)", i)
			return false
		case '[':
			first, last, ok := parseRun(val)
			switch {
			case !ok:
				err = fmt.Errorf("sourceEventSeqs[%d] = %s is not a non-negative safe integer", i, val)
			case last >= seq:
				err = fmt.Errorf("sourceEventSeqs[%d] = %s must be less than the event's own seq %d", i, val, seq)
			case int64(len(out))+last-first+1 > maxSources:
				err = fmt.Errorf("sourceEventSeqs expands to more than %d seqs", maxSources)
			}
			if err != nil {
				return false
			}
			for n := first; n <= last; n++ {
				out = append(out, n)
			}
		default:
			err = fmt.Errorf("sourceEventSeqs[%d] = %s is not a non-negative safe integer", i, val)
			return false
		}
		i++
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// parseRun reads a compressed [first,last] run of at least three seqs.
func parseRun(v []byte) (first, last int64, ok bool) {
	var ns [3]int64
	n := 0
	good := true
	elements(v, func(val []byte) bool {
		x, ok := parseSafeInt(val)
		if !ok || n == 2 {
			good = false
			return false
		}
		ns[n] = x
		n++
		return true
	})
	if !good || n != 2 || ns[1]-ns[0] < 2 {
		return 0, 0, false
	}
	return ns[0], ns[1], true
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
