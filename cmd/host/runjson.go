package cli

import (
	"bytes"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/surface"
)

// runJSON is what "weir run --json" prints on standard output once the
// turn has ended (docs/cli.md): the session, the turn's result and every
// event the command committed, as the log holds them.
type runJSON struct {
	// Session is the session file, or the session id of the store.
	Session string `json:"session"`
	Turn    int64  `json:"turn"`
	// End is the turn's end: kind completed, aborted, error or blocked,
	// with the cancel cause or the error where it applies.
	End   surface.EndReason `json:"end"`
	Steps int               `json:"steps"`
	// Text is the text of the turn's last assistant message ("" when it
	// had none).
	Text string `json:"text"`
	// Events are the log lines committed once the session was open, in
	// seq order: the turn's, from its turn/start to its turn/end.
	Events []jsontext.Value `json:"events"`
}

// turnRecorder collects the events committed to a log from the moment it
// is made.
type turnRecorder struct {
	log *surface.Log
	mu  sync.Mutex
	evs []surface.Event
}

func recordTurn(l *surface.Log) *turnRecorder {
	r := &turnRecorder{log: l}
	l.Observe(func(ev surface.Event) {
		r.mu.Lock()
		r.evs = append(r.evs, ev)
		r.mu.Unlock()
	})
	return r
}

// write prints the turn's JSON document to w.
func (r *turnRecorder) write(w io.Writer, session string, turn int64, end surface.EndReason, steps int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := runJSON{Session: session, Turn: turn, End: end, Steps: steps, Events: make([]jsontext.Value, 0, len(r.evs))}
	for i := range r.evs {
		ev := &r.evs[i]
		out.Events = append(out.Events, jsontext.Value(bytes.TrimSpace(surface.AppendEvent(nil, ev))))
		if ev.Type == surface.TypeAssistantMessage && ev.Op.Kind == surface.OpAppend {
			if m, ok := r.log.Message(ev.Seq); ok {
				out.Text = surface.TextOf(m.Content)
			}
		}
	}
	return writeJSON(w, out)
}
