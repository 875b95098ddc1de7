package host

import (
	"strings"

	"github.com/weirhost/weir/surface"
)

// clearedContext is the snapshot text that says earlier runtime context no
// longer applies.
const clearedContext = "No runtime context now; earlier runtime-context snapshots no longer apply."

// runtimeContext is the loop's runtime-context projection (spec 10): it owns
// user messages whose source is the system-prompt provider's plugin id and
// appends a new snapshot only when the rendered context changes.
type runtimeContext struct {
	plugin string
	ever   bool // an owned snapshot existed at some point
	seq    int64
	text   string
	opaque bool
	live   bool // retained: the snapshot at seq is on the surface
}

// restore scans the log newest-first over owned messages (at attachment).
func (r *runtimeContext) restore(l *surface.Log) {
	onSurface := map[int64]bool{}
	for _, s := range l.Nodes() {
		onSurface[s] = true
	}
	evs := l.Events()
	for i := len(evs) - 1; i >= 0; i-- {
		e := &evs[i]
		if e.Type != surface.TypeUserMessage {
			continue
		}
		m, _ := l.Message(e.Seq)
		if !r.owns(m) {
			continue
		}
		r.ever = true
		if onSurface[e.Seq] {
			r.retain(e.Seq, m)
			return
		}
	}
}

func (r *runtimeContext) owns(m *surface.Message) bool {
	return m != nil && m.Source.Kind == "plugin" && m.Source.Plugin == r.plugin
}

func (r *runtimeContext) retain(seq int64, m *surface.Message) {
	r.ever, r.live, r.seq = true, true, seq
	r.opaque = !(len(m.Content) == 1 && m.Content[0].Type == surface.BlockText)
	r.text = surface.TextOf(m.Content)
}

// observe updates the state for a committed event.
func (r *runtimeContext) observe(l *surface.Log, e surface.Event) {
	if e.Type == surface.TypeUserMessage && e.Op.Kind == surface.OpAppend {
		if m, ok := l.Message(e.Seq); ok && r.owns(m) {
			r.retain(e.Seq, m)
			return
		}
	}
	if r.live && e.Op.Kind == surface.OpReplace {
		for _, s := range e.Sources {
			if s == r.seq {
				r.live = false
				return
			}
		}
	}
}

// project returns the snapshot message to enter, or nil.
func (r *runtimeContext) project(sections []Section, newID func() string) *surface.Message {
	var parts []string
	var keys []string
	for _, s := range sections {
		if s.Text != "" {
			parts = append(parts, s.Text)
			keys = append(keys, s.Key)
		}
	}
	current := strings.Join(parts, "\n\n")
	if !r.ever && current == "" {
		return nil
	}
	text := current
	if text == "" {
		text = clearedContext
	}
	if r.live && !r.opaque && r.text == text {
		return nil
	}
	m := &surface.Message{ID: newID(), Role: surface.RoleUser,
		Source:  surface.Source{Kind: "plugin", Plugin: r.plugin},
		Content: []surface.Block{surface.Text(text)}}
	if len(keys) > 0 {
		b, _ := surface.Data(map[string][]string{"sections": keys})
		m.Source.Unknown = b
	}
	return m
}
