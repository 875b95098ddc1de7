package v2

import (
	"bytes"
	"io"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/surface"
)

// File is a v2 session log as read: its header and its events, validated.
// Messages are parsed lazily, so a File is not safe for concurrent use.
type File struct {
	Header Header
	Events []Event
	// TornBytes counts the bytes after the last newline (a torn tail),
	// which were dropped.
	TornBytes int
	// Lenient counts the v2 envelope leniencies applied while reading.
	Lenient Leniency

	ids   map[string]int // message id -> line of its first use
	nodes []int64        // the final v2 surface
}

// Leniency counts the non-canonical v2 envelope forms a reader accepted.
type Leniency struct {
	// ImplicitAppends: surface events without surfaceOp, read as append.
	ImplicitAppends int
	// EmptyKeys: empty surface keys dropped (surfaceOp null, or
	// sourceEventSeqs [] or null), on log-only or surface events.
	EmptyKeys int
	// AssistantSources: sourceEventSeqs dropped from assistant messages.
	AssistantSources int
}

// Event is one event of a v2 log.
type Event struct {
	Line int // 1-based input line
	Type string
	Seq  int64
	Time int64
	// Data is the payload exactly as written. It shares the input's
	// memory: treat it as read-only.
	Data jsontext.Value
	// Op is OpAppend or OpReplace on surface events (an absent surfaceOp
	// reads as append) and OpNone on every other event. A replace keeps the
	// v2 start/end seqs.
	Op surface.Op
	// Sources is sourceEventSeqs; nil when absent or dropped.
	Sources   []int64
	Ignorable bool
	// Prompt is the system prompt a request/header records
	// (header.system); "" when absent.
	Prompt string

	raw     []byte // the line of an unknown ignorable event
	hasTime bool
	sys     bool             // request/header: header.system was present
	surf    bool             // a surface event
	msg     *surface.Message // parsed on first use
	header  *surface.Header  // request/header: canonical, without system
	hdata   []member         // request/header: data members, header.system removed
	turn    int64            // step/start
	step    int64            // step/start
	nodes   int              // surface nodes after this event
}

// Message returns the message of a surface event, or nil. Read checks only
// what the conversion needs (id, role, source kind, content array); the
// message is parsed in full on first use.
func (e *Event) Message() *surface.Message {
	if !e.surf {
		return nil
	}
	if e.msg == nil {
		m := new(surface.Message)
		if e.Type == surface.TypeUserMessage {
			json.Unmarshal(e.Data, m)
		} else {
			var d struct {
				Message *surface.Message `json:"message"`
			}
			json.Unmarshal(e.Data, &d)
			if d.Message != nil {
				m = d.Message
			}
		}
		e.msg = m
	}
	return e.msg
}

// Header returns the canonical request header (without its system prompt)
// of a request/header event, or nil.
func (e *Event) Header() *surface.Header { return e.header }

// Read reads and validates a v2 session log. Bytes after the last newline
// are a torn tail and are dropped; every complete line must be valid.
// Refusals are *Error values naming the line.
func Read(r io.Reader) (*File, error) {
	buf, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return parse(buf)
}

// The classified v2 vocabulary: the known v3 vocabulary of this build minus
// system/message, which v2 does not have.
func classified(typ string) bool {
	return surface.Known(typ) && typ != surface.TypeSystemMessage
}

// retired names v2 types removed before v2, for clearer refusals.
var retired = map[string]string{
	"assistant/chunk":      "raw stream chunks were removed in format v2 (streams are embedded in assistant/message)",
	"request/header-delta": "legacy header deltas are rejected in every format",
}

type reader struct {
	f    *File
	dec  jsontext.Decoder
	src  bytes.Reader
	used bool
	fold v2fold
}

func parse(buf []byte) (*File, error) {
	end := bytes.LastIndexByte(buf, '\n')
	f := &File{TornBytes: len(buf) - (end + 1), ids: map[string]int{}}
	if end < 0 {
		return nil, refuse(0, -1, "", CaseMalformed, "no complete header line (the input holds no newline)")
	}
	body := buf[:end+1]
	nl := bytes.IndexByte(body, '\n')
	h, herr := parseHeader(body[:nl])
	if herr != nil {
		return nil, herr
	}
	f.Header = h
	body = body[nl+1:]
	f.Events = make([]Event, 0, bytes.Count(body, []byte{'\n'}))
	r := reader{f: f}
	for line := 2; len(body) > 0; line++ {
		nl := bytes.IndexByte(body, '\n')
		text := body[:nl]
		body = body[nl+1:]
		if len(bytes.TrimSpace(text)) == 0 {
			return nil, refuse(line, -1, "", CaseMalformed, "blank line")
		}
		e, err := r.decode(text, line, int64(len(f.Events)))
		if err != nil {
			return nil, err
		}
		f.Events = append(f.Events, e)
	}
	f.nodes = r.fold.nodes
	return f, nil
}

// envelope keys, by their quoted spelling.
var envelopeKeys = map[string]string{}

// typeNames maps quoted known type names to their strings, so that reading
// a type does not allocate.
var typeNames = map[string]string{}

func init() {
	for _, k := range []string{"type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable"} {
		envelopeKeys[string(quote(k))] = k
	}
	for _, t := range []string{
		surface.TypeSystemMessage, surface.TypeUserMessage, surface.TypeAssistantMessage, surface.TypeToolResult,
		surface.TypeTurnStart, surface.TypeTurnEnd, surface.TypeStepStart, surface.TypeStepEnd,
		surface.TypeAssistantAttempt, surface.TypeToolCall, surface.TypeRequestHeader, surface.TypeRequestContext,
		surface.TypeEndSeed, surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeCompactionEnd,
		surface.TypeCompactionPrune, surface.TypeLLMRetry,
	} {
		typeNames[string(quote(t))] = t
	}
}

func keyOf(raw []byte) string {
	if k, ok := envelopeKeys[string(raw)]; ok {
		return k
	}
	return unquote(raw)
}

func typeName(raw []byte) string {
	if t, ok := typeNames[string(raw)]; ok {
		return t
	}
	return unquote(raw)
}

// decode reads and validates one event line. The returned event's Data
// aliases line.
func (r *reader) decode(line []byte, lineNo int, want int64) (Event, *Error) {
	e := Event{Line: lineNo, Seq: -1}
	bad := func(c Case, format string, args ...any) (Event, *Error) {
		return Event{}, refuse(lineNo, e.Seq, e.Type, c, format, args...)
	}
	syntax := func(err error) (Event, *Error) {
		return Event{}, &Error{Line: lineNo, Seq: -1, Case: CaseMalformed, Msg: "not one JSON object", Err: err}
	}
	r.src.Reset(line)
	if !r.used {
		r.dec = *jsontext.NewDecoder(&r.src)
		r.used = true
	} else {
		r.dec.Reset(&r.src)
	}
	d := &r.dec
	tok, err := d.ReadToken()
	if err != nil {
		return syntax(err)
	}
	if tok.Kind() != '{' {
		return bad(CaseMalformed, "the line is not a JSON object")
	}
	var (
		hasType, hasData        bool
		rawSeq, rawTime, rawIgn []byte
		rawOp, rawSrc           []byte
		unknownKey              string
	)
	for d.PeekKind() != '}' {
		name, err := d.ReadValue()
		if err != nil {
			return syntax(err)
		}
		key := keyOf(name)
		val, err := d.ReadValue()
		if err != nil {
			return syntax(err)
		}
		// The value's own bytes in the line: kept without copying.
		end := int(d.InputOffset())
		val = jsontext.Value(line[end-len(val) : end : end])
		switch key {
		case "type":
			if val.Kind() != '"' {
				return bad(CaseMalformed, "type %s is not a string", val)
			}
			e.Type, hasType = typeName(val), true
		case "seq":
			rawSeq = val
		case "time":
			rawTime = val
		case "data":
			e.Data, hasData = val, true
		case "surfaceOp":
			rawOp = val
		case "sourceEventSeqs":
			rawSrc = val
		case "ignorable":
			rawIgn = val
		default:
			if unknownKey == "" {
				unknownKey = key
			}
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return syntax(err)
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return bad(CaseMalformed, "trailing data after the event object")
	}
	if !hasType {
		return bad(CaseMalformed, "missing type")
	}
	if e.Type == "" {
		return bad(CaseMalformed, "type is empty")
	}
	if rawSeq == nil {
		return bad(CaseMalformed, "missing seq")
	}
	seq, ok := parseSeq(rawSeq)
	if !ok {
		return bad(CaseMalformed, "seq %s is not a non-negative safe integer", rawSeq)
	}
	e.Seq = seq
	if seq != want {
		return bad(CaseMalformed, "seq %d does not continue the log: expected seq %d", seq, want)
	}
	if rawIgn != nil {
		if jsontext.Value(rawIgn).Kind() != 't' {
			return bad(CaseMalformed, "ignorable must be exactly true, got %s", rawIgn)
		}
		e.Ignorable = true
	}
	if rawTime != nil {
		t, ok := parseInt(rawTime)
		if !ok {
			return bad(CaseMalformed, "time %s is not an integer", rawTime)
		}
		e.Time, e.hasTime = t, true
	}
	if e.Type == surface.TypeSystemMessage {
		return bad(CaseV3Shape, "system/message events exist only in format v3 (v2 records the prompt in request/header.header.system)")
	}
	if !classified(e.Type) {
		if e.Ignorable {
			// Retained as written; only its seq changes on conversion.
			e.raw = bytes.TrimSpace(line)
			if hasData && e.Data.Kind() != '{' {
				return bad(CaseMalformed, "data is not an object")
			}
			return e, nil
		}
		if why, ok := retired[e.Type]; ok {
			return bad(CaseUnclassified, "event type %q without ignorable: true: %s", e.Type, why)
		}
		return bad(CaseUnclassified, "event type %q is not one the converter classifies, and it lacks ignorable: true", e.Type)
	}
	switch {
	case !e.hasTime:
		return bad(CaseMalformed, "missing time")
	case !hasData:
		return bad(CaseMalformed, "missing data")
	case e.Data.Kind() != '{':
		return bad(CaseMalformed, "data is not an object")
	case unknownKey != "":
		return bad(CaseMalformed, "unknown envelope key %q", unknownKey)
	case negativeZero(e.Data):
		return bad(CaseMalformed, "data holds -0, which is not lossless JSON")
	}
	op, perr := parseOp(rawOp, seq)
	if perr != nil {
		return Event{}, perr.at(lineNo, seq, e.Type)
	}
	src, emptySrc, perr := parseSources(rawSrc, seq)
	if perr != nil {
		return Event{}, perr.at(lineNo, seq, e.Type)
	}
	kind := surface.KindOf(e.Type)
	if !kind.IsSurface() {
		if op.Kind != surface.OpNone {
			return bad(CaseSurfaceKeys, "log-only event carries surfaceOp %s; v2 allows surface keys on log-only events only when empty", rawOp)
		}
		if src != nil {
			return bad(CaseSurfaceKeys, "log-only event carries sourceEventSeqs %s; v2 allows surface keys on log-only events only when empty", rawSrc)
		}
		if rawOp != nil || emptySrc {
			r.f.Lenient.EmptyKeys++
		}
		if err := r.logOnly(&e); err != nil {
			return Event{}, err
		}
		e.nodes = len(r.fold.nodes)
		return e, nil
	}
	if rawOp != nil && op.Kind == surface.OpNone || emptySrc {
		r.f.Lenient.EmptyKeys++
	}
	if op.Kind == surface.OpNone {
		op = surface.Append
		r.f.Lenient.ImplicitAppends++
	}
	e.Op, e.Sources = op, src
	if kind == surface.KindAssistant {
		if op.Kind == surface.OpReplace {
			return bad(CaseInexpressible, "an assistant/message replacement has no v3 form: it must cite the nodes it shadows, and v3 forbids sourceEventSeqs on assistant messages")
		}
		if e.Sources != nil {
			e.Sources = nil
			r.f.Lenient.AssistantSources++
		}
	}
	id, why := checkMessage(e.Type, e.Data)
	if why != "" {
		return bad(CaseMalformed, "%s", why)
	}
	e.surf = true
	if err := r.fold.apply(&e); err != nil {
		return Event{}, err
	}
	e.nodes = len(r.fold.nodes)
	if _, seen := r.f.ids[id]; !seen {
		r.f.ids[id] = lineNo
	}
	return e, nil
}

// logOnly reads what the conversion needs from a log-only payload.
func (r *reader) logOnly(e *Event) *Error {
	bad := func(err error, format string, args ...any) *Error {
		x := refuse(e.Line, e.Seq, e.Type, CaseMalformed, format, args...)
		x.Err = err
		return x
	}
	switch e.Type {
	case surface.TypeStepStart:
		var d struct {
			Turn *int64 `json:"turn"`
			Step *int64 `json:"step"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil || d.Turn == nil || d.Step == nil {
			return bad(err, "step/start needs integer data.turn and data.step")
		}
		e.turn, e.step = *d.Turn, *d.Step
	case surface.TypeRequestHeader:
		ms, err := members(e.Data)
		if err != nil {
			return bad(err, "data is not an object")
		}
		i := find(ms, "header")
		if i < 0 || ms[i].value.Kind() != '{' {
			return bad(nil, "data.header must be an object")
		}
		hms, err := members(ms[i].value)
		if err != nil {
			return bad(err, "data.header is not an object")
		}
		if j := find(hms, "system"); j >= 0 {
			switch v := hms[j].value; v.Kind() {
			case '"':
				e.Prompt = unquote(v)
			case 'n':
			default:
				return bad(nil, "header.system must be a string, got %s", v)
			}
			hms, e.sys = drop(hms, "system"), true
		}
		ms[i].value = appendObject(nil, hms)
		e.hdata = ms
		h, err := surface.FoldHeader([]surface.Event{{Type: e.Type, Seq: e.Seq, Time: e.Time, Data: appendObject(nil, ms)}}, nil)
		if err != nil {
			return bad(err, "invalid request header")
		}
		e.header = h
	case surface.TypeCompactionSummary, surface.TypeCompactionPrune:
		if _, err := remapCompaction(e.Data, e.Seq, nil); err != nil {
			return err.at(e.Line, e.Seq, e.Type)
		}
	}
	return nil
}

// msgHead is what reading checks of a message; the v3 payload rules apply
// in full after conversion.
type msgHead struct {
	ID     *string `json:"id"`
	Role   string  `json:"role"`
	Source struct {
		Kind string `json:"kind"`
	} `json:"source"`
	Content jsontext.Value `json:"content"`
}

// checkMessage checks the message of a surface event and returns its id.
func checkMessage(typ string, data []byte) (string, string) {
	var m *msgHead
	role := surface.RoleUser
	if typ == surface.TypeUserMessage {
		m = new(msgHead)
		if err := json.Unmarshal(data, m); err != nil {
			return "", "data is not a message: " + err.Error()
		}
	} else {
		var d struct {
			Message *msgHead `json:"message"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			return "", "data does not hold a message: " + err.Error()
		}
		if d.Message == nil {
			return "", "data.message is missing"
		}
		m = d.Message
		if typ == surface.TypeAssistantMessage {
			role = surface.RoleAssistant
		}
	}
	switch {
	case m.ID == nil || *m.ID == "":
		return "", "message id must be a non-empty string"
	case m.Role != role:
		return "", "message role must be " + role + ", got " + string(quote(m.Role))
	case m.Source.Kind == "":
		return "", "message source must have a non-empty kind"
	case m.Content.Kind() != '[':
		return "", "message content must be an array"
	}
	return *m.ID, ""
}

// partial is an error found without knowing the line; at completes it.
type partial struct {
	c   Case
	msg string
}

func (p *partial) at(line int, seq int64, typ string) *Error {
	return refuse(line, seq, typ, p.c, "%s", p.msg)
}

func fault(c Case, msg string) *partial { return &partial{c, msg} }

// parseOp reads a v2 surfaceOp: absent or null (OpNone), "append", or
// {"op":"replace","start":s,"end":e} with s and e earlier seqs.
func parseOp(raw []byte, seq int64) (surface.Op, *partial) {
	v := jsontext.Value(raw)
	switch v.Kind() {
	case 0, 'n':
		return surface.Op{}, nil
	case '"':
		if unquote(v) == "append" {
			return surface.Append, nil
		}
	case '{':
		ms, err := members(v)
		if err != nil {
			break
		}
		for _, m := range ms {
			if m.name == "startSeq" || m.name == "endSeq" {
				return surface.Op{}, fault(CaseV3ReplaceKeys, "replace surfaceOp "+string(raw)+" uses the v3 key names startSeq/endSeq; a v2 replace names its range start/end")
			}
		}
		op := surface.Op{Kind: surface.OpReplace}
		var seen [3]bool
		for _, m := range ms {
			switch m.name {
			case "op":
				if m.value.Kind() != '"' || unquote(m.value) != "replace" {
					return surface.Op{}, fault(CaseMalformed, "invalid replace surfaceOp "+string(raw)+`: op is not "replace"`)
				}
				seen[0] = true
			case "start", "end":
				n, ok := parseSeq(m.value)
				if !ok {
					return surface.Op{}, fault(CaseMalformed, "invalid replace surfaceOp "+string(raw)+": "+m.name+" is not a non-negative safe integer")
				}
				if n >= seq {
					return surface.Op{}, fault(CaseFold, "replace surfaceOp "+string(raw)+" must reference earlier events")
				}
				if m.name == "start" {
					op.Start, seen[1] = n, true
				} else {
					op.End, seen[2] = n, true
				}
			default:
				return surface.Op{}, fault(CaseMalformed, "invalid replace surfaceOp "+string(raw)+": unexpected key "+string(quote(m.name)))
			}
		}
		if seen != [3]bool{true, true, true} {
			return surface.Op{}, fault(CaseMalformed, "invalid replace surfaceOp "+string(raw)+": want exactly op, start, end")
		}
		return op, nil
	}
	return surface.Op{}, fault(CaseMalformed, "invalid surfaceOp "+string(raw))
}

// parseSources reads sourceEventSeqs: every element an earlier seq, no
// duplicates; runs stored as [first,last] pairs are expanded. It reports
// empty (and returns nil) for [] and null, which v2 writers emitted.
func parseSources(raw []byte, seq int64) (src []int64, empty bool, err *partial) {
	v := jsontext.Value(raw)
	switch v.Kind() {
	case 0:
		return nil, false, nil
	case 'n':
		return nil, true, nil
	case '[':
	default:
		return nil, false, fault(CaseMalformed, "sourceEventSeqs "+string(raw)+" is not an array")
	}
	var elems []jsontext.Value
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, false, fault(CaseMalformed, "sourceEventSeqs "+string(raw)+" is not an array of seqs")
	}
	if len(elems) == 0 {
		return nil, true, nil
	}
	bad := func(el jsontext.Value) (src []int64, empty bool, err *partial) {
		return nil, false, fault(CaseMalformed, "sourceEventSeqs element "+string(el)+" is not a non-negative safe integer")
	}
	out := make([]int64, 0, len(elems))
	for _, el := range elems {
		if el.Kind() == '[' {
			var run []jsontext.Value
			if json.Unmarshal(el, &run) != nil || len(run) != 2 {
				return bad(el)
			}
			first, ok1 := parseSeq(run[0])
			last, ok2 := parseSeq(run[1])
			if !ok1 || !ok2 || last-first < 2 {
				return bad(el)
			}
			if last >= seq {
				// Checked before expanding: a run is never longer than the log.
				return nil, false, fault(CaseMalformed, "sourceEventSeqs run "+string(el)+" cites seq "+itoa(last)+", which is not an earlier event")
			}
			for n := first; n <= last; n++ {
				out = append(out, n)
			}
			continue
		}
		n, ok := parseSeq(el)
		if !ok {
			return bad(el)
		}
		out = append(out, n)
	}
	sorted := slices.Clone(out)
	slices.Sort(sorted)
	for i, n := range sorted {
		if n >= seq {
			return nil, false, fault(CaseMalformed, "sourceEventSeqs cites seq "+itoa(n)+", which is not an earlier event")
		}
		if i > 0 && sorted[i-1] == n {
			return nil, false, fault(CaseMalformed, "sourceEventSeqs has duplicate "+itoa(n))
		}
	}
	return out, false, nil
}

// v2fold is the v2 surface: v2 seqs in surface order.
type v2fold struct{ nodes []int64 }

func (f *v2fold) apply(e *Event) *Error {
	if e.Op.Kind == surface.OpAppend {
		f.nodes = append(f.nodes, e.Seq)
		return nil
	}
	from, to := slices.Index(f.nodes, e.Op.Start), slices.Index(f.nodes, e.Op.End)
	switch {
	case from < 0:
		return refuse(e.Line, e.Seq, e.Type, CaseFold, "replace start seq %d is not on the surface", e.Op.Start)
	case to < 0:
		return refuse(e.Line, e.Seq, e.Type, CaseFold, "replace end seq %d is not on the surface", e.Op.End)
	case from > to:
		return refuse(e.Line, e.Seq, e.Type, CaseFold, "replace start seq %d (node %d) is after end seq %d (node %d)", e.Op.Start, from, e.Op.End, to)
	}
	var missing []int64
	for _, n := range f.nodes[from : to+1] {
		if !slices.Contains(e.Sources, n) {
			missing = append(missing, n)
		}
	}
	if missing != nil {
		return refuse(e.Line, e.Seq, e.Type, CaseFold, "replace must cite every shadowed node in sourceEventSeqs; missing %v", missing)
	}
	f.nodes[from] = e.Seq
	f.nodes = slices.Delete(f.nodes, from+1, to+1)
	return nil
}

// Messages derives the wire messages of the whole v2 log: the v2 surface
// projected in order (as surface.Project does), preceded by the latest
// request header's system prompt as a system message when it is non-empty.
// The prompt message has no id in v2; it is returned with an empty id and
// the system-prompt plugin source.
func (f *File) Messages() []*surface.Message { return f.messagesThrough(len(f.Events)) }

// messagesThrough derives the wire messages after the first n events.
func (f *File) messagesThrough(n int) []*surface.Message {
	var fold v2fold
	var out []*surface.Message
	prompt := ""
	for i := range f.Events[:n] {
		e := &f.Events[i]
		switch {
		case e.surf:
			fold.apply(e)
		case e.header != nil:
			prompt = e.Prompt
		}
	}
	if prompt != "" {
		m := surface.SystemMessage("", Plugin, prompt)
		out = append(out, &m)
	}
	for _, s := range fold.nodes {
		e := &f.Events[s]
		if m, ok := surface.Project(e.Type, e.Message()); ok {
			out = append(out, m)
		}
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
