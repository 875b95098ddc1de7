package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/go-json-experiment/json"
	winspect "github.com/weirhost/weir/host/inspect"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// printer shows a running session to a person: streamed text as it
// arrives, tool calls and results, prompt changes as a collapsed line, and
// compaction receipts.
type printer struct {
	w       io.Writer
	kind    llm.DeltaKind // kind of the open streamed line, 0 when none
	callIdx int
	// prompts classifies system/message events (node 0 replaced, appended
	// in history, ...); watch seeds it with the events already logged.
	prompts *winspect.PromptTracker
}

func newPrinter(w io.Writer) *printer {
	return &printer{w: w, callIdx: -1, prompts: winspect.NewPromptTracker()}
}

// watch prints l's events from now on; the events already in l (a resumed
// session) only teach the printer which system nodes are on the surface.
func (p *printer) watch(l *surface.Log) {
	for _, e := range l.Events() {
		m, _ := l.Message(e.Seq)
		p.prompts.Observe(e, m)
	}
	l.Observe(p.event)
}

func (p *printer) delta(d llm.Delta) {
	if d.Kind != p.kind || (d.Kind == llm.DeltaToolCall && d.Call != p.callIdx) {
		p.endLine()
		switch d.Kind {
		case llm.DeltaReasoning:
			fmt.Fprint(p.w, "  (thinking) ")
		case llm.DeltaText:
			fmt.Fprint(p.w, "assistant: ")
		case llm.DeltaToolCall:
			fmt.Fprintf(p.w, "  → %s ", termLine(d.Name))
			p.callIdx = d.Call
		}
		p.kind = d.Kind
	}
	fmt.Fprint(p.w, termSafe(d.Text))
}

func (p *printer) endLine() {
	if p.kind != 0 {
		fmt.Fprintln(p.w)
		p.kind = 0
		p.callIdx = -1
	}
}

func (p *printer) finish() { p.endLine() }

// event prints what a person should see of a committed event.
func (p *printer) event(e surface.Event) {
	if e.Type != surface.TypeSystemMessage {
		p.prompts.Observe(e, nil) // the tracker needs only system messages' text
	}
	switch e.Type {
	case surface.TypeToolResult:
		if e.Op.Kind != surface.OpAppend {
			return
		}
		p.endLine()
		var d surface.StepMessage
		if json.Unmarshal(e.Data, &d) == nil && len(d.Message.Content) == 1 {
			b := d.Message.Content[0]
			t := oneLine(surface.TextOf(b.Content), 100)
			if b.IsError {
				t = "error: " + t
			}
			fmt.Fprintf(p.w, "  ← %s\n", termLine(t))
		}
	case surface.TypeSystemMessage:
		p.endLine()
		var d surface.StepMessage
		if json.Unmarshal(e.Data, &d) != nil {
			return
		}
		pe, _ := p.prompts.Observe(e, &d.Message)
		text := pe.Text
		switch pe.Kind {
		case winspect.PromptSet:
			if text == "" {
				fmt.Fprintf(p.w, "· system prompt: (empty; node 0 reserved)\n")
			} else {
				fmt.Fprintf(p.w, "· system prompt set (%d chars)\n", len(text))
			}
		case winspect.PromptChanged:
			fmt.Fprintf(p.w, "· prompt changed (node 0 replaced: seq %d → %d, %d chars)\n", e.Op.Start, e.Seq, len(text))
		case winspect.PromptUpdated:
			fmt.Fprintf(p.w, "· prompt updated (appended in history: seq %d, %d chars)\n", e.Seq, len(text))
		case winspect.PromptEmptied:
			fmt.Fprintf(p.w, "· earlier prompt update emptied (seq %d → %d)\n", e.Op.Start, e.Seq)
		default:
			fmt.Fprintf(p.w, "· system node replaced (seq %d → %d, %d chars)\n", e.Op.Start, e.Seq, len(text))
		}
	case surface.TypeCompactionSummary:
		p.endLine()
		var d struct {
			ShadowedSeqs       []int64 `json:"shadowedSeqs"`
			ShadowedTokenCount int64   `json:"shadowedTokenCount"`
			Provider           string  `json:"provider"`
			Model              string  `json:"model"`
		}
		if json.Unmarshal(e.Data, &d) == nil {
			fmt.Fprintf(p.w, "· compaction: %d nodes shadowed (%d tokens), summarized by %s/%s\n", len(d.ShadowedSeqs), d.ShadowedTokenCount, termLine(d.Provider), termLine(d.Model))
		}
	case surface.TypeCompactionEnd:
		var d struct {
			Error        string `json:"error"`
			TokensBefore int64  `json:"tokensBefore"`
			TokensAfter  int64  `json:"tokensAfter"`
		}
		if json.Unmarshal(e.Data, &d) != nil {
			return
		}
		p.endLine()
		switch {
		case d.Error != "":
			fmt.Fprintf(p.w, "· compaction failed: %s\n", termLine(d.Error))
		case d.TokensBefore > 0:
			fmt.Fprintf(p.w, "· compaction receipt: tokens %d → %d\n", d.TokensBefore, d.TokensAfter)
		}
	}
}

func oneLine(s string, width int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > width {
		s = string(r[:width-1]) + "…"
	}
	return s
}
