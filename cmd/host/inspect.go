package cli

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/weirhost/weir/host"
	winspect "github.com/weirhost/weir/host/inspect"
	"github.com/weirhost/weir/surface"
)

func init() {
	register(&command{name: "inspect", args: "FILE", summary: "show a session: surface, prompt versions, compactions, tokens, plugin failures and model calls", run: inspectCmd})
}

// inspectJSON is the documented shape of "host inspect --json".
type inspectJSON struct {
	Session           string               `json:"session"`
	MigratedFrom      int                  `json:"migratedFrom,omitzero"`
	Events            int                  `json:"events"`
	ReplaceGeneration uint64               `json:"replaceGeneration"`
	ContentGeneration uint64               `json:"contentGeneration"`
	Surface           []nodeJSON           `json:"surface"`
	Prompts           []promptJSON         `json:"prompts"`
	Compactions       []compactionJSON     `json:"compactions"`
	Tokens            *host.Measurement    `json:"tokens,omitzero"`
	Rewrites          []rewriteJSON        `json:"toolResultRewrites"`
	Failures          []host.PluginFailure `json:"pluginFailures"`
	Calls             []host.PluginUsage   `json:"pluginCalls"`
}

// rewriteJSON is one tool-result rewrite: the result at Replaces is shown
// to the model as the one at Seq.
type rewriteJSON struct {
	Seq         int64  `json:"seq"`
	Replaces    int64  `json:"replaces"`
	CallID      string `json:"callId"`
	CharsBefore int    `json:"charsBefore"`
	CharsAfter  int    `json:"charsAfter"`
}

type nodeJSON struct {
	Node    int    `json:"node"`
	Seq     int64  `json:"seq"`
	Type    string `json:"type"`
	Role    string `json:"role"`
	Tokens  int64  `json:"tokens"`
	Empty   bool   `json:"empty,omitzero"`
	Preview string `json:"preview"`
}

type promptJSON struct {
	Seq      int64  `json:"seq"`
	Op       string `json:"op"`
	Kind     string `json:"kind"` // set, changed (node 0), updated (in-history append), emptied, replaced
	Replaces int64  `json:"replaces,omitzero"`
	Text     string `json:"text"`
	Diff     string `json:"diff,omitzero"` // against the prompt in effect before the change
}

type compactionJSON struct {
	ID         string  `json:"compactionId"`
	Start      int64   `json:"startSeq"`
	Shadowed   []int64 `json:"shadowedSeqs,omitzero"`
	TokenCount int64   `json:"shadowedTokenCount,omitzero"`
	Provider   string  `json:"provider,omitzero"`
	Model      string  `json:"model,omitzero"`
	Checkpoint int64   `json:"checkpointSeq,omitzero"`
	Plugin     string  `json:"plugin,omitzero"` // the plugin whose checkpoint it is
	// Unbracketed marks a checkpoint no compaction bracket encloses: its
	// shadowed seqs are the messages it cites.
	Unbracketed  bool   `json:"unbracketed,omitzero"`
	End          int64  `json:"endSeq,omitzero"`
	Error        string `json:"error,omitzero"`
	TokensBefore int64  `json:"tokensBefore,omitzero"`
	TokensAfter  int64  `json:"tokensAfter,omitzero"`
}

func inspectCmd(e *env, args []string) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object")
	configFile := fs.String("config", "", "the configuration whose sessions.store holds SESSION when it is a session id (default ./weir.yaml, then weir/weir.yaml in the user config folder)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("usage: %[1]s inspect [--json] FILE", prog)
	}
	s, err := loadLog(pos[0], *configFile)
	if err != nil {
		return err
	}
	out := inspect(s)
	if *asJSON {
		return writeJSON(e.stdout, out)
	}
	printInspect(e.stdout, out)
	return nil
}

func inspect(s *loaded) inspectJSON {
	l := s.log
	out := inspectJSON{Session: s.id, MigratedFrom: s.migratedFrom, Events: l.Len(),
		ReplaceGeneration: l.ReplaceGeneration(), ContentGeneration: l.ContentGeneration(),
		Surface: []nodeJSON{}, Prompts: []promptJSON{}, Compactions: []compactionJSON{}, Rewrites: []rewriteJSON{}, Failures: []host.PluginFailure{},
		Calls: host.PluginCalls(l.Events())}
	if out.Calls == nil {
		out.Calls = []host.PluginUsage{}
	}
	meas := measure(l)
	out.Tokens = meas
	price := map[int64]int64{}
	if meas != nil {
		for _, n := range meas.Nodes {
			price[n.Seq] = n.Tokens
		}
	}
	for i, n := range l.Surface() {
		m, _ := l.Message(n.Seq)
		out.Surface = append(out.Surface, nodeJSON{Node: i, Seq: n.Seq, Type: n.Type, Role: n.Role, Tokens: price[n.Seq],
			Empty: n.Empty, Preview: previewOf(m, 60)})
	}
	prompts := winspect.NewPromptTracker()
	byID := map[string]*compactionJSON{}
	var order []string
	for _, e := range l.Events() {
		m, _ := l.Message(e.Seq)
		if pe, ok := prompts.Observe(e, m); ok {
			p := promptJSON{Seq: e.Seq, Op: "append", Kind: pe.Kind, Text: pe.Text, Diff: pe.Diff}
			if e.Op.Kind == surface.OpReplace {
				p.Op, p.Replaces = "replace", e.Op.Start
			}
			out.Prompts = append(out.Prompts, p)
			continue
		}
		switch e.Type {
		case surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeCompactionEnd:
			p, err := host.Payload(e)
			if err != nil {
				continue
			}
			var id string
			switch d := p.(type) {
			case *host.CompactionStart:
				id = d.ID
			case *host.CompactionSummary:
				id = d.ID
			case *host.CompactionEnd:
				id = d.ID
			}
			c := byID[id]
			if c == nil {
				c = &compactionJSON{ID: id, Start: e.Seq}
				byID[id] = c
				order = append(order, id)
			}
			switch d := p.(type) {
			case *host.CompactionSummary:
				c.Shadowed, c.TokenCount, c.Provider, c.Model = d.ShadowedSeqs, d.ShadowedTokenCount, d.Provider, d.Model
			case *host.CompactionEnd:
				c.End, c.Error, c.TokensBefore, c.TokensAfter = e.Seq, d.Error, d.TokensBefore, d.TokensAfter
			}
		case surface.TypeUserMessage:
			if id, plugin, ok := host.CheckpointOf(l, e.Seq); ok && byID[id] != nil {
				byID[id].Checkpoint, byID[id].Plugin = e.Seq, plugin
				continue
			}
			m, ok := l.Message(e.Seq)
			if e.Op.Kind != surface.OpReplace || !ok || m.Source.Kind != "plugin" {
				continue
			}
			// A checkpoint without a bracket: still a compaction.
			c := compactionJSON{Start: e.Seq, Checkpoint: e.Seq, Plugin: m.Source.Plugin, Unbracketed: true}
			for _, seq := range e.Sources {
				if src, ok := l.Event(seq); ok && surface.KindOf(src.Type).IsSurface() {
					c.Shadowed = append(c.Shadowed, seq)
				}
			}
			key := "\x00" + strconv.FormatInt(e.Seq, 10) // never a compaction id
			byID[key] = &c
			order = append(order, key)
		case surface.TypeToolResult:
			if e.Op.Kind != surface.OpReplace {
				continue
			}
			now, _ := l.Message(e.Seq)
			was, _ := l.Message(e.Op.Start)
			if now == nil || was == nil {
				continue
			}
			out.Rewrites = append(out.Rewrites, rewriteJSON{Seq: e.Seq, Replaces: e.Op.Start, CallID: now.Source.CallID,
				CharsBefore: len(surface.TextOf(toolContent(was))), CharsAfter: len(surface.TextOf(toolContent(now)))})
		case surface.TypePluginFailure:
			var f host.PluginFailure
			if json.Unmarshal(e.Data, &f) == nil {
				out.Failures = append(out.Failures, f)
			}
		}
	}
	for _, id := range order {
		out.Compactions = append(out.Compactions, *byID[id])
	}
	return out
}

func printInspect(w io.Writer, out inspectJSON) {
	fmt.Fprintf(w, "session %s: %d events, %d surface nodes, replaceGeneration %d, contentGeneration %d\n",
		termLine(out.Session), out.Events, len(out.Surface), out.ReplaceGeneration, out.ContentGeneration)
	fmt.Fprintf(w, "\nSurface\n%5s %7s %7s  %-18s %-9s %s\n", "node", "seq", "tokens", "type", "role", "preview")
	for _, n := range out.Surface {
		preview := termLine(n.Preview)
		if n.Empty {
			preview = "(projects to nothing)"
		}
		fmt.Fprintf(w, "%5d %7d %7d  %-18s %-9s %s\n", n.Node, n.Seq, n.Tokens, termLine(n.Type), termLine(n.Role), preview)
	}
	fmt.Fprintf(w, "\nPrompt versions (%d)\n", len(out.Prompts))
	for i, p := range out.Prompts {
		how := winspect.PromptEvent{Kind: p.Kind, Text: p.Text}.Label()
		if p.Op == "replace" {
			how += fmt.Sprintf(", seq %d → %d", p.Replaces, p.Seq)
		}
		fmt.Fprintf(w, "  v%d  seq %d, %s, %d chars\n", i+1, p.Seq, how, len(p.Text))
		if p.Diff != "" {
			for _, line := range strings.Split(p.Diff, "\n") {
				fmt.Fprintf(w, "        %s\n", termLine(oneLine(line, 100)))
			}
		}
	}
	fmt.Fprintf(w, "\nCompactions (%d)\n", len(out.Compactions))
	for _, c := range out.Compactions {
		if c.Unbracketed {
			fmt.Fprintf(w, "  (no bracket)  checkpoint seq %d by %s  %d nodes shadowed (seqs %s)\n", c.Checkpoint,
				termLine(strconv.Quote(c.Plugin)), len(c.Shadowed), seqList(c.Shadowed))
			continue
		}
		status := "ok"
		if c.Error != "" {
			status = "failed: " + termLine(c.Error)
		} else if c.End == 0 {
			status = "open (no compaction/end)"
		}
		fmt.Fprintf(w, "  %s  seq %d..%d  %d nodes shadowed (%d tokens)  %s/%s  %s", termLine(c.ID), c.Start, c.End, len(c.Shadowed), c.TokenCount, termLine(c.Provider), termLine(c.Model), status)
		if c.TokensBefore > 0 {
			fmt.Fprintf(w, "  tokens %d → %d", c.TokensBefore, c.TokensAfter)
		}
		if c.Checkpoint > 0 {
			fmt.Fprintf(w, "  checkpoint seq %d by %s", c.Checkpoint, termLine(strconv.Quote(c.Plugin)))
		}
		fmt.Fprintln(w)
	}
	if len(out.Rewrites) > 0 {
		fmt.Fprintf(w, "\nTool-result rewrites (%d)\n", len(out.Rewrites))
		for _, r := range out.Rewrites {
			fmt.Fprintf(w, "  seq %d replaces seq %d (call %s): %d → %d chars\n", r.Seq, r.Replaces, termLine(r.CallID), r.CharsBefore, r.CharsAfter)
		}
	}
	if t := out.Tokens; t != nil {
		printTokens(w, t)
	}
	fmt.Fprintf(w, "\nPlugin failures (%d)\n", len(out.Failures))
	for _, f := range out.Failures {
		note := ""
		if f.Disabled {
			note = " [disabled for the session]"
		}
		fmt.Fprintf(w, "  %s %s (turn %d step %d)%s: %s\n", termLine(string(f.Kind)), termLine(strconv.Quote(f.Plugin)), f.Turn, f.Step, note, termLine(f.Error))
	}
	fmt.Fprintf(w, "\nModel calls by plugins (%d)\n", len(out.Calls))
	for _, c := range out.Calls {
		u := c.Usage
		fmt.Fprintf(w, "  %s %s: %d calls (%d failed, %d refused by the budget), %d input + %d cached + %d output tokens, %.1fs\n",
			termLine(string(c.Kind)), termLine(strconv.Quote(c.Plugin)), c.Calls, c.Failed, c.Refused, u.Input, u.CacheRead+u.CacheWrite, u.Output, float64(c.DurationMs)/1000)
	}
}

// printTokens prints the token breakdown table.
func printTokens(w io.Writer, t *host.Measurement) {
	b := t.Breakdown
	fmt.Fprintf(w, "\nTokens (%s, baseline %s)\n", termLine(t.Tokenizer), termLine(t.Baseline))
	fmt.Fprintf(w, "  %-13s %8d\n  %-13s %8d\n  %-13s %8d\n  %-13s %8d\n  %-13s %8d\n  %-13s %8d\n",
		"system", b.System, "user", b.User, "assistant", b.Assistant, "tool results", b.ToolResults, "tools schema", b.Tools, "total", t.TotalTokens)
}

// seqList prints seqs as "3, 6, 11".
func seqList(seqs []int64) string {
	parts := make([]string, len(seqs))
	for i, s := range seqs {
		parts[i] = strconv.FormatInt(s, 10)
	}
	return strings.Join(parts, ", ")
}
