package inspect

import (
	"strings"

	"github.com/weirhost/weir/surface"
)

// Prompt event kinds, as a person should read a system/message event.
const (
	// PromptSet is the first system prompt of a session.
	PromptSet = "set"
	// PromptChanged is a replacement of surface node 0.
	PromptChanged = "changed"
	// PromptUpdated is an in-history append: a system message appended
	// after the conversation began, while an earlier one survives.
	PromptUpdated = "updated"
	// PromptEmptied is an empty-content replacement of a later system node
	// (the route left in-history mode, or the prompt was cleared).
	PromptEmptied = "emptied"
	// PromptReplaced is a non-empty replacement of a system node that is
	// not node 0.
	PromptReplaced = "replaced"
)

// PromptEvent is one system/message event, classified.
type PromptEvent struct {
	Seq  int64  `json:"seq"`
	Kind string `json:"kind"`
	// Replaces is the seq of the system node a replacement took the place of.
	Replaces int64 `json:"replaces,omitzero"`
	// Text is the new message's text ("" for an empty message).
	Text string `json:"text"`
	// InEffect is the prompt in effect before the step's system commits:
	// the text of the latest non-empty system node on the surface.
	InEffect string `json:"inEffect"`
	// Diff is a line diff from InEffect to Text ("" for the first prompt
	// and for emptying replacements).
	Diff string `json:"diff,omitzero"`
}

// Label is the one-line description of a prompt event the terminal and
// the web view show.
func (p PromptEvent) Label() string {
	switch p.Kind {
	case PromptSet:
		if p.Text == "" {
			return "system prompt: (empty; node 0 reserved)"
		}
		return "system prompt set"
	case PromptChanged:
		return "prompt changed (node 0 replaced)"
	case PromptUpdated:
		return "prompt updated (appended in history)"
	case PromptEmptied:
		return "earlier prompt update emptied"
	default:
		return "system node replaced"
	}
}

// PromptTracker follows the system nodes of a surface through a log, in
// order, and classifies each system/message event. Feed it every event
// (Observe); it keeps only the system nodes and the surface head.
type PromptTracker struct {
	head     int64 // seq of surface node 0, -1 before the first surface event
	system   []sysNode
	inEffect string
	inRun    bool // the previous event was a system/message
}

type sysNode struct {
	seq  int64
	text string
}

// NewPromptTracker returns a tracker for a log read from its start.
func NewPromptTracker() *PromptTracker { return &PromptTracker{head: -1} }

func (t *PromptTracker) effective() string {
	for i := len(t.system) - 1; i >= 0; i-- {
		if t.system[i].text != "" {
			return t.system[i].text
		}
	}
	return ""
}

// Observe folds e; for a system/message it returns the classification
// (ok true). msg is e's message (nil for other events).
func (t *PromptTracker) Observe(e surface.Event, msg *surface.Message) (PromptEvent, bool) {
	isSys := e.Type == surface.TypeSystemMessage
	if isSys && !t.inRun {
		t.inEffect = t.effective()
	}
	t.inRun = isSys
	if !surface.KindOf(e.Type).IsSurface() {
		return PromptEvent{}, false
	}
	text := ""
	if msg != nil {
		text = surface.TextOf(msg.Content)
	}
	var out PromptEvent
	switch e.Op.Kind {
	case surface.OpAppend:
		if t.head < 0 {
			t.head = e.Seq
		}
		if isSys {
			out = PromptEvent{Seq: e.Seq, Kind: PromptSet, Text: text, InEffect: t.inEffect}
			if len(t.system) > 0 {
				out.Kind = PromptUpdated
			}
			t.system = append(t.system, sysNode{e.Seq, text})
		}
	case surface.OpReplace:
		atHead := e.Op.Start == t.head
		if atHead {
			t.head = e.Seq
		}
		// Drop the system nodes the replacement shadowed.
		shadowed := map[int64]bool{e.Op.Start: true, e.Op.End: true}
		for _, s := range e.Sources {
			shadowed[s] = true
		}
		pos := -1
		kept := t.system[:0]
		for _, n := range t.system {
			if shadowed[n.seq] {
				if pos < 0 {
					pos = len(kept)
				}
				continue
			}
			kept = append(kept, n)
		}
		t.system = kept
		if isSys {
			if pos < 0 {
				pos = len(t.system)
			}
			t.system = append(t.system, sysNode{})
			copy(t.system[pos+1:], t.system[pos:])
			t.system[pos] = sysNode{e.Seq, text}
			out = PromptEvent{Seq: e.Seq, Kind: PromptReplaced, Replaces: e.Op.Start, Text: text, InEffect: t.inEffect}
			switch {
			case atHead:
				out.Kind = PromptChanged
			case text == "":
				out.Kind = PromptEmptied
			}
		}
	}
	if !isSys {
		return PromptEvent{}, false
	}
	if out.Kind != PromptSet && out.Kind != PromptEmptied {
		out.Diff = LineDiff(out.InEffect, out.Text)
	}
	return out, true
}

// LineDiff is a small line diff: the lines only in a ("- "), then the lines
// only in b ("+ "), each counted with multiplicity.
func LineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	inB := map[string]int{}
	for _, x := range bl {
		inB[x]++
	}
	inA := map[string]int{}
	for _, x := range al {
		inA[x]++
	}
	var out []string
	for _, x := range al {
		if inB[x] == 0 {
			out = append(out, "- "+x)
		} else {
			inB[x]--
		}
	}
	for _, x := range bl {
		if inA[x] == 0 {
			out = append(out, "+ "+x)
		} else {
			inA[x]--
		}
	}
	return strings.Join(out, "\n")
}
