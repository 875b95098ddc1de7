package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/go-json-experiment/json"
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
}

func newPrinter(w io.Writer) *printer { return &printer{w: w, callIdx: -1} }

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
		text := surface.TextOf(d.Message.Content)
		switch {
		case e.Op.Kind == surface.OpAppend && text == "":
			fmt.Fprintf(p.w, "· system prompt: (empty; node 0 reserved)\n")
		case e.Op.Kind == surface.OpAppend:
			fmt.Fprintf(p.w, "· system prompt set (%d chars)\n", len(text))
		default:
			fmt.Fprintf(p.w, "· prompt changed: node 0 replaced (seq %d → %d, %d chars)\n", e.Op.Start, e.Seq, len(text))
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
