package host

import (
	"fmt"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// BuildRequest builds the model request a log implies: the latest header's
// config, the messages derived from the surface (system message first when
// present) and the header's tools. It is a pure function of the log.
func BuildRequest(l *surface.Log, sessionID string) (*llm.Request, error) {
	r, err := logRequest(l, sessionID)
	if err != nil {
		return nil, err
	}
	return cloneRequest(r), nil
}

// logRequest is BuildRequest holding the log's own messages, config and
// tools: for reading (encoding) only, never for handing out.
func logRequest(l *surface.Log, sessionID string) (*llm.Request, error) {
	h := l.Header()
	if h == nil {
		return nil, fmt.Errorf("no request/header before seq %d: nothing to build a request from", l.NextSeq())
	}
	return &llm.Request{Config: h.Config, Messages: l.Messages(), Tools: h.Tools, SessionID: sessionID}, nil
}

// cloneRequest copies a request of logRequest's deeply: nothing a
// consumer can change in the copy (a message or block, nested content, an
// unknown member's or a tool's bytes, the config's pointers and stop list)
// reaches the log's request. Strings are immutable and shared. The
// messages, the pointers to them, every block and every byte come from one
// allocation each. Each block list is capped at its length, so appending
// to one cannot reach another.
func cloneRequest(r *llm.Request) *llm.Request {
	c := *r
	n, size := 0, 0
	for _, m := range r.Messages {
		size += len(m.Unknown) + len(m.Source.Unknown)
		bn, bs := blocksSize(m.Content)
		n, size = n+bn, size+bs
	}
	for _, t := range r.Tools {
		size += len(t)
	}
	a := arena{blocks: make([]surface.Block, 0, n), bytes: make([]byte, 0, size)}
	msgs := make([]surface.Message, len(r.Messages))
	c.Messages = make([]*surface.Message, len(r.Messages))
	for i, m := range r.Messages {
		msgs[i] = *m
		msgs[i].Unknown = a.value(m.Unknown)
		msgs[i].Source.Unknown = a.value(m.Source.Unknown)
		msgs[i].Content = a.copyBlocks(m.Content)
		c.Messages[i] = &msgs[i]
	}
	if r.Tools != nil {
		c.Tools = make([]jsontext.Value, len(r.Tools))
		for i, t := range r.Tools {
			c.Tools[i] = a.value(t)
		}
	}
	if t := r.Config.Temperature; t != nil {
		v := *t
		c.Config.Temperature = &v
	}
	if m := r.Config.MaxTokens; m != nil {
		v := *m
		c.Config.MaxTokens = &v
	}
	c.Config.Stop = slices.Clone(r.Config.Stop)
	return &c
}

// cloneMessage copies a message deeply enough that a consumer changing its
// content cannot reach the log's copy.
func cloneMessage(m *surface.Message) *surface.Message {
	c := *m
	c.Content = surface.CloneBlocks(m.Content)
	return &c
}

// The rebuilt requests carry the API of their attempt and the version of
// the encoder that wrote its body (llm.Request.API and Encoder, from the
// settlement's stream record), so req.Body() is the exact body that
// adapter sent, also for an attempt logged by an older build.

// RequestAt rebuilds the request that was dispatched for the attempt that
// seq belongs to. seq may name the attempt's request/header or
// request/context, or its settlement (assistant/message or
// assistant/attempt); the request is built from the log prefix before that
// settlement. seq may also name a plugin/call event: the request is then
// the model call a plugin caused (a compaction's summarization), rebuilt
// from its recorded envelope (CallRequest).
func RequestAt(events []surface.Event, seq int64, sessionID string) (*llm.Request, error) {
	if seq < 0 || seq >= int64(len(events)) {
		return nil, fmt.Errorf("seq %d is outside the log (0..%d)", seq, len(events)-1)
	}
	switch events[seq].Type {
	case surface.TypeRequestHeader, surface.TypeRequestContext, surface.TypeAssistantMessage, surface.TypeAssistantAttempt:
	case TypePluginCall:
		r, err := CallRequest(events, seq, sessionID)
		if err != nil {
			return nil, err
		}
		if r.API == "" {
			r.API = apiOf(nearestSettlement(events, seq))
		}
		if r.Encoder == 0 {
			r.Encoder = encoderOf(nearestSettlement(events, seq))
		}
		return r, nil
	default:
		return nil, fmt.Errorf("seq %d is a %s event: name a request/header, request/context, assistant/message, assistant/attempt or %s", seq, events[seq].Type, TypePluginCall)
	}
	at := seq
	for at < int64(len(events)) && !settles(events[at].Type) {
		if t := events[at].Type; at > seq && (t == surface.TypeStepEnd || t == surface.TypeTurnEnd) {
			return nil, fmt.Errorf("seq %d: no request was dispatched after it in its step", seq)
		}
		at++
	}
	if at == int64(len(events)) {
		return nil, fmt.Errorf("seq %d: the log ends before the request was settled", seq)
	}
	l, err := surface.Restore(events[:at])
	if err != nil {
		return nil, err
	}
	r, err := BuildRequest(l, sessionID)
	if err != nil {
		return nil, err
	}
	r.API, r.Encoder = apiOf(&events[at]), encoderOf(&events[at])
	return r, nil
}

// settlementStream reads what RequestAt needs of a settlement's stream record.
type settlementStream struct {
	Stream struct {
		API     llm.API `json:"api"`
		Encoder int     `json:"enc"`
	} `json:"stream"`
}

// apiOf returns the API of the attempt a settlement event records: its
// stream record's "api" member, "" (the OpenAI-compatible protocol) when
// the record names none or there is no record (e is nil).
func apiOf(e *surface.Event) llm.API {
	var d settlementStream
	if e == nil || json.Unmarshal(e.Data, &d) != nil {
		return ""
	}
	return d.Stream.API
}

// encoderOf returns the encoder version of the attempt a settlement event
// records: its stream record's "enc" member, 1 when the record has none
// (it was written before the member existed), 0 (this build's) when there
// is no record (e is nil).
func encoderOf(e *surface.Event) int {
	var d settlementStream
	switch {
	case e == nil:
		return 0
	case json.Unmarshal(e.Data, &d) != nil || d.Stream.Encoder == 0:
		return 1
	}
	return d.Stream.Encoder
}

// nearestSettlement is the settlement nearest before seq, else the first
// after it, nil when the log has none: a plugin's model call (a
// compaction's summarization) goes through the conversation's model, and
// a plugin/call that records no API or encoder went out in that model's.
func nearestSettlement(events []surface.Event, seq int64) *surface.Event {
	for i := seq; i >= 0; i-- {
		if settles(events[i].Type) {
			return &events[i]
		}
	}
	for i := seq + 1; i < int64(len(events)); i++ {
		if settles(events[i].Type) {
			return &events[i]
		}
	}
	return nil
}

func settles(typ string) bool {
	return typ == surface.TypeAssistantMessage || typ == surface.TypeAssistantAttempt
}

// Requests rebuilds every dispatched request of a log, in order, keyed by
// the seq of its settlement event.
func Requests(events []surface.Event, sessionID string) (map[int64]*llm.Request, []int64, error) {
	out := map[int64]*llm.Request{}
	var order []int64
	l := surface.New()
	for i := range events {
		if settles(events[i].Type) {
			r, err := BuildRequest(l, sessionID)
			if err != nil {
				return nil, nil, err
			}
			r.API, r.Encoder = apiOf(&events[i]), encoderOf(&events[i])
			out[events[i].Seq] = r
			order = append(order, events[i].Seq)
		}
		if err := l.Admit(events[i]); err != nil {
			return nil, nil, err
		}
	}
	return out, order, nil
}
