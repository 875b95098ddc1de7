package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/weirhost/weir/host"
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
	// log, when set, lets the printer say what a replacement shadowed.
	log *surface.Log
	// compactors are the configured compaction plugins' names: a
	// tool-result rewrite names its plugin when only one could have made it.
	compactors []string
	bracket    string // the open compaction bracket's id, "" when none
	by         string // the plugin whose checkpoint the open bracket holds
	// prompts classifies system/message events (node 0 replaced, appended
	// in history, ...); watch seeds it with the events already logged.
	prompts *winspect.PromptTracker
}

func newPrinter(w io.Writer) *printer {
	return &printer{w: w, callIdx: -1, prompts: winspect.NewPromptTracker()}
}

// watch prints l's events from now on and names the compaction plugins
// whose work it shows; the events already in l (a resumed session) only
// teach the printer which system nodes are on the surface.
func (p *printer) watch(l *surface.Log, compactors []host.CompactionProvider) {
	p.log = l
	for _, c := range compactors {
		p.compactors = append(p.compactors, c.ID())
	}
	for _, e := range l.Events() {
		m, _ := l.Message(e.Seq)
		p.prompts.Observe(e, m)
	}
	l.Observe(p.event)
}

// shadowed counts the cited events of a replacement that are messages:
// the nodes it shadowed (and any other message it cites).
func (p *printer) shadowed(e surface.Event) int {
	if p.log == nil {
		return len(e.Sources)
	}
	n := 0
	for _, seq := range e.Sources {
		if c, ok := p.log.Event(seq); ok && surface.KindOf(c.Type).IsSurface() {
			n++
		}
	}
	return n
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
		if e.Op.Kind == surface.OpReplace {
			p.endLine()
			p.rewrite(e)
			return
		}
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
	case surface.TypeUserMessage:
		if e.Op.Kind != surface.OpReplace {
			return
		}
		var m surface.Message
		if json.Unmarshal(e.Data, &m) != nil {
			return
		}
		if p.bracket != "" {
			p.by = m.Source.Plugin // shown with the receipt
			return
		}
		p.endLine()
		fmt.Fprintf(p.w, "· compaction by %s: checkpoint seq %d replaces %d nodes (seq %d..%d), without a compaction bracket\n",
			termLine(strconv.Quote(m.Source.Plugin)), e.Seq, p.shadowed(e), e.Op.Start, e.Op.End)
	case surface.TypeCompactionStart:
		var d host.CompactionStart
		if json.Unmarshal(e.Data, &d) == nil {
			p.bracket, p.by = d.ID, ""
		}
	case surface.TypeCompactionPrune:
		var d host.CompactionPrune
		if json.Unmarshal(e.Data, &d) == nil {
			p.endLine()
			fmt.Fprintf(p.w, "· prune: %d tool results (%d bytes)%s\n", len(d.ShadowedSeqs), d.Bytes, p.byLine())
		}
	case surface.TypeCompactionSummary:
		p.endLine()
		var d host.CompactionSummary
		if json.Unmarshal(e.Data, &d) == nil {
			by := ""
			if d.Provider != "" || d.Model != "" {
				by = ", summarized by " + termLine(d.Provider) + "/" + termLine(d.Model)
			}
			fmt.Fprintf(p.w, "· compaction: %d nodes shadowed (%d tokens)%s\n", len(d.ShadowedSeqs), d.ShadowedTokenCount, by)
		}
	case surface.TypeCompactionEnd:
		var d host.CompactionEnd
		by := p.by
		p.bracket, p.by = "", ""
		if json.Unmarshal(e.Data, &d) != nil {
			return
		}
		p.endLine()
		switch {
		case d.Error != "":
			fmt.Fprintf(p.w, "· compaction failed: %s\n", termLine(d.Error))
		case d.TokensBefore > 0 && by != "":
			fmt.Fprintf(p.w, "· compaction receipt: tokens %d → %d, checkpoint by %s\n", d.TokensBefore, d.TokensAfter, termLine(strconv.Quote(by)))
		case d.TokensBefore > 0:
			fmt.Fprintf(p.w, "· compaction receipt: tokens %d → %d\n", d.TokensBefore, d.TokensAfter)
		}
	}
}

// rewrite shows a tool-result rewrite: which result, how much smaller.
func (p *printer) rewrite(e surface.Event) {
	var d surface.StepMessage
	if json.Unmarshal(e.Data, &d) != nil {
		return
	}
	before := -1
	if p.log != nil {
		if m, ok := p.log.Message(e.Op.Start); ok {
			before = len(surface.TextOf(toolContent(m)))
		}
	}
	after := len(surface.TextOf(toolContent(&d.Message)))
	size := fmt.Sprintf("%d chars", after)
	if before >= 0 {
		size = fmt.Sprintf("%d → %d chars", before, after)
	}
	fmt.Fprintf(p.w, "· tool result of call %s rewritten (seq %d → %d, %s)%s\n",
		termLine(d.Message.Source.CallID), e.Op.Start, e.Seq, size, p.byLine())
}

// byLine names the compaction plugin when only one is configured.
func (p *printer) byLine() string {
	if len(p.compactors) == 1 {
		return " by " + termLine(strconv.Quote(p.compactors[0]))
	}
	return ""
}

// toolContent is the inner content of a tool result's block.
func toolContent(m *surface.Message) []surface.Block {
	if len(m.Content) == 1 {
		return m.Content[0].Content
	}
	return nil
}

func oneLine(s string, width int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > width {
		s = string(r[:width-1]) + "…"
	}
	return s
}
