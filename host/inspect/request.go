package inspect

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// Request is one dispatched attempt as the requests page shows it.
type Request struct {
	Index int   `json:"request"` // 1-based
	Seq   int64 `json:"seq"`     // the settlement (what host request --at takes)
	Count int   `json:"requests"`
	// Body is the exact wire body, as host request --at prints it (without
	// its trailing newline); Pretty is the same JSON indented.
	Body   string `json:"body"`
	Pretty string `json:"pretty"`
	// Prev is the previous request's settlement seq (0 for the first) and
	// Diff a line diff of the pretty bodies.
	Prev   int64             `json:"prevSeq,omitzero"`
	Diff   string            `json:"diff,omitzero"`
	Tokens *host.Measurement `json:"tokens,omitzero"`
	Usage  *surface.Usage    `json:"usage,omitzero"`
	Failed bool              `json:"failed,omitzero"`
	// Time is the settlement's time (epoch ms) and Wall its wall time;
	// Sent and First its dispatch instant and time to first token, when
	// its stream record holds them (see Item.Wall and Item.First).
	Time  int64  `json:"time,omitzero"`
	Wall  int64  `json:"wallMs,omitzero"`
	Sent  int64  `json:"sentMs,omitzero"`
	First *int64 `json:"firstTokenMs,omitzero"`
	// Prompt is the latest system-prompt event before the request: the
	// prompt version it carried; PromptNew reports that it came after the
	// previous request (so this is the first request to carry it).
	Prompt    *PromptEvent `json:"prompt,omitzero"`
	PromptNew bool         `json:"promptNew,omitzero"`
	// Messages are the request's messages as the page shows them (at
	// most ShownMessages: the first and the latest); Omitted counts those
	// left out.
	Messages []Item `json:"messages,omitzero"`
	Omitted  int    `json:"omittedMessages,omitzero"`
	// Call marks a plugin\'s model call (Seq is its plugin/call event).
	Call bool `json:"pluginCall,omitzero"`
}

// Body rebuilds the wire body of the request settled (or named) at seq:
// host.RequestAt and llm.EncodeRequest, as host request --at does.
func Body(s *Session, seq int64) ([]byte, error) {
	req, err := host.RequestAt(s.Log.Events(), seq, s.ID)
	if err != nil {
		return nil, err
	}
	return llm.EncodeRequest(req)
}

func pretty(b []byte) string {
	v := jsontext.Value(append([]byte(nil), b...))
	if v.Indent(jsontext.WithIndent("  ")) != nil {
		return string(b)
	}
	return string(v)
}

// keptRequests is how many built requests a model keeps: views of one
// request, concurrent or in a row, share one build (the body, its pretty
// form and the diff, each as large as the request), so a view costs only
// its bounded page.
const keptRequests = 4

type builtRequest struct {
	key  int64 // the request's index, or -seq for a plugin call
	once sync.Once
	r    *Request
	err  error
}

// built returns the request key names, building it once however many
// views want it.
func (m *Model) built(key int64, build func() (*Request, error)) (*Request, error) {
	m.reqMu.Lock()
	var b *builtRequest
	if i := slices.IndexFunc(m.reqs, func(b *builtRequest) bool { return b.key == key }); i >= 0 {
		b = m.reqs[i]
		m.reqs = append(slices.Delete(m.reqs, i, i+1), b)
	} else {
		b = &builtRequest{key: key}
		if len(m.reqs) >= keptRequests {
			m.reqs = slices.Delete(m.reqs, 0, 1)
		}
		m.reqs = append(m.reqs, b)
	}
	m.reqMu.Unlock()
	b.once.Do(func() { b.r, b.err = build() })
	return b.r, b.err
}

// Request returns the requests page's view of the index-th request
// (1-based). It is shared: callers must not change it.
func (m *Model) Request(index int) (*Request, error) {
	return m.built(int64(index), func() (*Request, error) { return m.request(index) })
}

// Call returns the requests page's view of a model call a plugin caused
// (a compaction's summarization), named by its plugin/call seq. It is
// shared: callers must not change it.
func (m *Model) Call(seq int64) (*Request, error) {
	return m.built(-seq, func() (*Request, error) { return m.call(seq) })
}

func (m *Model) request(index int) (*Request, error) {
	if index < 1 || index > len(m.Requests) {
		return nil, fmt.Errorf("request %d does not exist: the session has %d requests", index, len(m.Requests))
	}
	seq := m.Requests[index-1]
	req, err := host.RequestAt(m.Session.Log.Events(), seq, m.Session.ID)
	var body []byte
	if err == nil {
		body, err = llm.EncodeRequest(req)
	}
	if err != nil {
		return nil, fmt.Errorf("request %d (seq %d) cannot be rebuilt: %w", index, seq, err)
	}
	r := &Request{Index: index, Seq: seq, Count: len(m.Requests), Body: string(body), Pretty: pretty(body)}
	r.Messages, r.Omitted = messageView(req.Messages)
	if index > 1 {
		r.Prev = m.Requests[index-2]
		if pb, err := Body(m.Session, r.Prev); err == nil {
			r.Diff = LineDiff(pretty(pb), r.Pretty)
		}
	}
	events := m.Session.Log.Events()
	if mt, err := newMeter(); err == nil && mt.Observe(events[:seq]) == nil {
		if t, err := mt.Measure(context.Background(), nil); err == nil {
			t.Nodes = nil
			r.Tokens = t
		}
	}
	for i := len(m.Prompts) - 1; i >= 0; i-- {
		if p := m.Prompts[i]; p.Seq < seq {
			r.Prompt, r.PromptNew = &p, p.Seq > r.Prev
			break
		}
	}
	e := events[seq]
	r.Failed = e.Type == surface.TypeAssistantAttempt
	r.Time, r.Wall = e.Time, wall(events, int(seq))
	var d surface.StepMessage
	if json.Unmarshal(e.Data, &d) == nil {
		r.Usage = d.Usage
		timeReply(&r.First, &r.Sent, &r.Wall, e.Time, d.Stream)
	}
	return r, nil
}

func (m *Model) call(seq int64) (*Request, error) {
	body, err := Body(m.Session, seq)
	if err != nil {
		return nil, fmt.Errorf("the plugin call at seq %d cannot be rebuilt: %w", seq, err)
	}
	return &Request{Seq: seq, Count: len(m.Requests), Body: string(body), Pretty: pretty(body), Call: true}, nil
}

// ShownMessages is the most messages a request page renders: the first
// (the system prompt, usually) and the latest.
const ShownMessages = 100

// messageView renders a request's messages as trajectory items (role,
// text, reasoning, tool calls; a tool result's text).
func messageView(msgs []*surface.Message) ([]Item, int) {
	omitted := 0
	if len(msgs) > ShownMessages {
		omitted = len(msgs) - ShownMessages
		msgs = append(msgs[:1:1], msgs[len(msgs)-ShownMessages+1:]...)
	}
	out := make([]Item, 0, len(msgs))
	for _, msg := range msgs {
		it := Item{Kind: ItemMessage, Role: msg.Role}
		if len(msg.Content) > 0 && msg.Content[0].Type == surface.BlockToolResult {
			b := msg.Content[0]
			it.Kind, it.CallID, it.IsError, it.Text = ItemTool, b.ToolCallID, b.IsError, surface.TextOf(b.Content)
		} else {
			fillMessage(&it, msg)
		}
		out = append(out, it)
	}
	return out, omitted
}

// IndexOf returns the 1-based index of the request whose settlement is at
// seq or that seq (a request/header or request/context) leads to; 0 when
// none.
func (m *Model) IndexOf(seq int64) int {
	for i, s := range m.Requests {
		if s >= seq {
			return i + 1
		}
	}
	return 0
}
