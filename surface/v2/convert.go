package v2

import (
	"errors"
	"io"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/surface"
)

// Plugin is the source plugin of the generated system messages.
const Plugin = "system-prompt"

// IDPrefix starts every generated system message id:
// "v2-sys-<session id>-<v3 seq of the system/message>".
const IDPrefix = "v2-sys-"

// Result is a converted log: the v3 header and events.
type Result struct {
	// Header is the v2 header with version 3 and migratedFrom 2; every
	// other member is carried unchanged.
	Header Header
	// Events are the v3 events, seq i at index i. They load under
	// surface.Restore.
	Events []surface.Event
	// SeqOf maps each v2 seq to its v3 seq.
	SeqOf []int64
	// Prompts are the v3 seqs of the generated system/message events.
	Prompts []int64
	Stats   Stats
	// Log is Events restored under the v3 rules (surface.Restore), ready
	// for replay or inspection. It shares Events' memory.
	Log *surface.Log
}

// Stats summarizes a conversion.
type Stats struct {
	Leniency
	// TornBytes counts the dropped bytes after the input's last newline.
	TornBytes int
	// Appends and Replacements count the generated system/message events
	// (node-0 append, node-0 replacements).
	Appends, Replacements int
	// Headers counts request/header events rewritten (header.system
	// removed, reason adjusted).
	Headers int
	// Reasons counts headers whose reason became "series", or "change"
	// with startsSeries, because their prompt changed.
	Reasons int
	// Ignorable counts unknown ignorable events carried over.
	Ignorable int
}

// Convert reads a v2 session log from r and converts it to v3. Nothing is
// written; see Write and ConvertFile.
func Convert(r io.Reader) (*Result, error) {
	f, err := Read(r)
	if err != nil {
		return nil, err
	}
	return Migrate(f)
}

// insertion is a system/message the conversion commits.
type insertion struct {
	after      int // index of the v2 event it follows
	cause      int // index of the request/header that records the prompt
	turn, step int64
	text       string
}

// fix is the v3 reason of a request/header whose prompt changed.
type fix struct {
	reason string
	starts bool // startsSeries: true
}

// Migrate converts a read v2 log to v3. See the package documentation for
// the placement rules and the refusals.
func Migrate(f *File) (*Result, error) {
	ins, fixes, perr := plan(f)
	if perr != nil {
		return nil, perr
	}
	n := len(f.Events)
	res := &Result{SeqOf: make([]int64, n)}
	res.Header = f.Header
	res.Header.Version, res.Header.MigratedFrom = 3, 2
	res.Header.Fields = slices.Clone(f.Header.Fields)
	res.Stats.Leniency, res.Stats.TornBytes = f.Lenient, f.TornBytes
	out := make([]surface.Event, 0, n+len(ins))
	lines := make([]int, 0, n+len(ins)) // v3 seq -> input line
	head := int64(-1)
	var last int64 // time of the latest event carrying one
	k := 0
	for i := range f.Events {
		e := &f.Events[i]
		seq := int64(len(out))
		res.SeqOf[i] = seq
		ev, err := convertEvent(e, seq, res.SeqOf, fixes, &res.Stats)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
		lines = append(lines, e.Line)
		if e.hasTime {
			last = e.Time
		}
		for ; k < len(ins) && ins[k].after == i; k++ {
			in := &ins[k]
			seq := int64(len(out))
			id := IDPrefix + f.Header.ID + "-" + strconv.FormatInt(seq, 10)
			if line, used := f.ids[id]; used {
				return nil, refuse(line, int64(line-2), f.Events[line-2].Type, CaseIDCollision,
					"message id %q is already used here; it is the id generated for the system/message that the request/header at line %d needs",
					id, f.Events[in.cause].Line)
			}
			ev := surface.Event{Type: surface.TypeSystemMessage, Seq: seq, Time: last,
				Data: systemData(in.turn, in.step, id, in.text), Op: surface.Append}
			if head >= 0 {
				ev.Op, ev.Sources = surface.Replace(head, head), []int64{head}
				res.Stats.Replacements++
			} else {
				res.Stats.Appends++
			}
			out = append(out, ev)
			lines = append(lines, f.Events[in.cause].Line)
			res.Prompts = append(res.Prompts, seq)
			head = seq
		}
	}
	res.Events = out
	log, err := surface.Restore(out)
	if err != nil {
		x := &Error{Seq: -1, Case: CaseV3Admission, Msg: "the converted log does not load under the v3 rules", Err: err}
		var se *surface.Error
		if errors.As(err, &se) && se.Seq >= 0 && se.Seq < int64(len(lines)) {
			x.Line, x.Seq, x.Type = lines[se.Seq], int64(lines[se.Seq]-2), f.Events[lines[se.Seq]-2].Type
			x.Msg += " (its converted seq is " + strconv.FormatInt(se.Seq, 10) + ")"
		}
		return nil, x
	}
	if err := sameSurface(f, res, log, head); err != nil {
		return nil, err
	}
	res.Log = log
	return res, nil
}

// plan decides where each system/message goes and which header reasons
// change. It walks the v2 log once, tracking the open step.
func plan(f *File) ([]insertion, map[int]fix, *Error) {
	var ins []insertion
	fixes := map[int]fix{}
	open, headers := -1, 0 // open step/start index, headers seen in that step
	have, head := false, ""
	var prev *surface.Header
	for i := range f.Events {
		e := &f.Events[i]
		switch e.Type {
		case surface.TypeStepStart:
			open, headers = i, 0
		case surface.TypeStepEnd, surface.TypeTurnStart, surface.TypeTurnEnd:
			open = -1
		case surface.TypeRequestHeader:
			if !have || e.Prompt != head {
				what := "the first recorded prompt"
				if have {
					what = "a prompt change"
				}
				if open < 0 {
					return nil, nil, refuse(e.Line, e.Seq, e.Type, CaseOutsideStep,
						"the header records %s outside any open step; a system/message can be committed only inside a step", what)
				}
				st := &f.Events[open]
				after := open // after step/start, before the step's user messages
				if headers > 0 {
					after = i - 1 // a retry: right before its header, as a per-attempt projection would
				}
				if !have {
					if st.nodes > 0 {
						return nil, nil, refuse(e.Line, e.Seq, e.Type, CaseHeadTaken,
							"the first recorded prompt must become surface node 0, but %d surface node(s) already precede its step (step/start at line %d); the prompt would have to move in front of that history",
							st.nodes, st.Line)
					}
				} else if r := reason(e); r == surface.ReasonChange || r == surface.ReasonSeries {
					if prev.Equal(*e.header) {
						fixes[i] = fix{reason: surface.ReasonSeries}
					} else {
						fixes[i] = fix{reason: surface.ReasonChange, starts: true}
					}
				}
				ins = append(ins, insertion{after: after, cause: i, turn: st.turn, step: st.step, text: e.Prompt})
				have, head = true, e.Prompt
			}
			prev = e.header
			headers++
		}
	}
	return ins, fixes, nil
}

func reason(e *Event) string {
	if i := find(e.hdata, "reason"); i >= 0 {
		return unquote(e.hdata[i].value)
	}
	return ""
}

// convertEvent returns the v3 form of a v2 event placed at seq.
func convertEvent(e *Event, seq int64, seqOf []int64, fixes map[int]fix, st *Stats) (surface.Event, *Error) {
	if e.raw != nil {
		ms, err := members(e.raw)
		if err == nil {
			var line []byte
			line = appendObject(line, set(ms, "seq", strconv.AppendInt(nil, seq, 10)))
			ev, derr := surface.DecodeEvent(line)
			if derr == nil {
				st.Ignorable++
				return ev, nil
			}
			err = derr
		}
		return surface.Event{}, &Error{Line: e.Line, Seq: e.Seq, Type: e.Type, Case: CaseMalformed, Msg: "unknown ignorable event cannot be carried", Err: err}
	}
	ev := surface.Event{Type: e.Type, Seq: seq, Time: e.Time, Data: e.Data, Ignorable: e.Ignorable}
	switch {
	case e.surf:
		ev.Op = e.Op
		if e.Op.Kind == surface.OpReplace {
			ev.Op = surface.Replace(seqOf[e.Op.Start], seqOf[e.Op.End])
		}
		if e.Sources != nil {
			ev.Sources = make([]int64, len(e.Sources))
			for i, s := range e.Sources {
				ev.Sources[i] = seqOf[s]
			}
		}
	case e.header != nil:
		fx, ok := fixes[int(e.Seq)]
		if !ok && !e.sys {
			break // nothing to change: keep the bytes
		}
		ms := slices.Clone(e.hdata)
		if ok {
			st.Reasons++
			ms = set(ms, "reason", quote(fx.reason))
			if fx.starts {
				ms = set(ms, "startsSeries", []byte("true"))
			} else {
				ms = drop(ms, "startsSeries")
			}
		}
		st.Headers++
		ev.Data = appendObject(nil, ms)
	case e.Type == surface.TypeCompactionSummary || e.Type == surface.TypeCompactionPrune:
		data, err := remapCompaction(e.Data, e.Seq, func(s int64) int64 { return seqOf[s] })
		if err != nil {
			return surface.Event{}, err.at(e.Line, e.Seq, e.Type)
		}
		ev.Data = data
	}
	return ev, nil
}

// remapCompaction validates the seq lists of compaction/summary and
// compaction/prune data (shadowedSeqs, shadowedRange.start/end must name
// earlier events) and, when remap is non-nil, returns the data with those
// seqs remapped. Data without either member is returned unchanged.
func remapCompaction(data []byte, seq int64, remap func(int64) int64) ([]byte, *partial) {
	ms, err := members(data)
	if err != nil {
		return nil, fault(CaseMalformed, "data is not an object")
	}
	earlier := func(v jsontext.Value, what string) (int64, *partial) {
		n, ok := parseSeq(v)
		if !ok {
			return 0, fault(CaseMalformed, what+" "+string(v)+" is not a non-negative safe integer")
		}
		if n >= seq {
			return 0, fault(CaseMalformed, what+" "+string(v)+" does not name an earlier event")
		}
		if remap != nil {
			n = remap(n)
		}
		return n, nil
	}
	touched := false
	if i := find(ms, "shadowedSeqs"); i >= 0 {
		var elems []jsontext.Value
		if json.Unmarshal(ms[i].value, &elems) != nil || ms[i].value.Kind() != '[' {
			return nil, fault(CaseMalformed, "shadowedSeqs must be an array of seqs")
		}
		seqs := make([]int64, len(elems))
		for j, el := range elems {
			n, err := earlier(el, "shadowedSeqs element")
			if err != nil {
				return nil, err
			}
			seqs[j] = n
		}
		ms[i].value, touched = appendSeqs(nil, seqs), true
	}
	if i := find(ms, "shadowedRange"); i >= 0 {
		rms, err := members(ms[i].value)
		if err != nil {
			return nil, fault(CaseMalformed, "shadowedRange must be an object {start, end}")
		}
		for _, name := range [2]string{"start", "end"} {
			j := find(rms, name)
			if j < 0 {
				return nil, fault(CaseMalformed, "shadowedRange lacks "+name)
			}
			n, err := earlier(rms[j].value, "shadowedRange."+name)
			if err != nil {
				return nil, err
			}
			rms[j].value = strconv.AppendInt(nil, n, 10)
		}
		ms[i].value, touched = appendObject(nil, rms), true
	}
	if remap == nil || !touched {
		return data, nil
	}
	return appendObject(nil, ms), nil
}

// systemData is the data of a generated system/message.
func systemData(turn, step int64, id, text string) []byte {
	b := []byte(`{"turn":`)
	b = strconv.AppendInt(b, turn, 10)
	b = append(b, `,"step":`...)
	b = strconv.AppendInt(b, step, 10)
	b = append(b, `,"message":{"id":`...)
	b = append(b, quote(id)...)
	b = append(b, `,"role":"system","source":{"kind":"plugin","plugin":`...)
	b = append(b, quote(Plugin)...)
	b = append(b, `},"content":[`...)
	if text != "" {
		b = append(b, `{"type":"text","text":`...)
		b = append(b, quote(text)...)
		b = append(b, '}')
	}
	return append(b, "]}}"...)
}

// sameSurface checks that the converted surface derives the v2 wire
// messages: the v3 nodes are the generated head followed by the v2 nodes
// (same events, same data), and the head holds the latest recorded prompt.
func sameSurface(f *File, res *Result, log *surface.Log, head int64) *Error {
	want := make([]int64, 0, len(f.nodes)+1)
	if head >= 0 {
		want = append(want, head)
	}
	for _, s := range f.nodes {
		want = append(want, res.SeqOf[s])
	}
	if got := log.Nodes(); !slices.Equal(got, want) {
		return refuse(0, -1, "", CaseDerivation, "the converted surface %v is not the v2 surface behind its system head %v", got, want)
	}
	if head < 0 {
		return nil
	}
	prompt := ""
	for i := len(f.Events) - 1; i >= 0; i-- {
		if f.Events[i].header != nil {
			prompt = f.Events[i].Prompt
			break
		}
	}
	m, _ := log.Message(head)
	if m == nil || surface.TextOf(m.Content) != prompt || (prompt == "") != (len(m.Content) == 0) {
		return refuse(0, -1, "", CaseDerivation, "the converted system head does not hold the latest recorded prompt")
	}
	return nil
}
