package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/surface"
)

func init() {
	register(&command{name: "replay", args: "FILE", summary: "load and fold a session log; print its surface and messages", run: replay})
}

// replayJSON is the documented shape of "host replay --json".
type replayJSON struct {
	Session           string        `json:"session"`
	Version           int           `json:"version"`
	MigratedFrom      int           `json:"migratedFrom,omitzero"`
	Events            int           `json:"events"`
	TornBytes         int64         `json:"tornBytes,omitzero"`
	Nodes             []int64       `json:"nodes"`
	ReplaceGeneration uint64        `json:"replaceGeneration"`
	ContentGeneration uint64        `json:"contentGeneration"`
	Messages          []messageJSON `json:"messages"`
}

type messageJSON struct {
	Role    string          `json:"role"`
	Content []surface.Block `json:"content"`
}

func replay(e *env, args []string) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object instead of a summary")
	configFile := fs.String("config", "", "the configuration whose sessions.store holds SESSION when it is a session id (default ./weir.yaml, then weir/weir.yaml in the user config folder)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("usage: %[1]s replay [--json] FILE", prog)
	}
	s, err := loadLog(pos[0], *configFile)
	if err != nil {
		return err
	}
	l := s.log
	if *asJSON {
		out := replayJSON{Session: s.id, Version: 3, MigratedFrom: s.migratedFrom, Events: l.Len(), TornBytes: s.torn,
			Nodes: l.Nodes(), ReplaceGeneration: l.ReplaceGeneration(), ContentGeneration: l.ContentGeneration(),
			Messages: []messageJSON{}}
		for _, m := range l.Messages() {
			out.Messages = append(out.Messages, messageJSON{Role: m.Role, Content: m.Content})
		}
		return writeJSON(e.stdout, out)
	}
	w := e.stdout
	fmt.Fprintf(w, "session %s: %d events, %d surface nodes, replaceGeneration %d, contentGeneration %d\n",
		termLine(s.id), l.Len(), l.NodeCount(), l.ReplaceGeneration(), l.ContentGeneration())
	if s.migratedFrom != 0 {
		fmt.Fprintf(w, "converted in memory from format v%d\n", s.migratedFrom)
	}
	if s.torn > 0 {
		fmt.Fprintf(w, "a torn tail of %d bytes after the last newline was ignored\n", s.torn)
	}
	fmt.Fprintf(w, "\n%5s %7s  %-18s %-9s %s\n", "node", "seq", "type", "role", "preview")
	for i, n := range l.Surface() {
		m, _ := l.Message(n.Seq)
		preview := "(projects to nothing)"
		if !n.Empty {
			preview = termLine(previewOf(m, 60))
		}
		op := ""
		if n.Op.Kind == surface.OpReplace {
			op = fmt.Sprintf(" [replaced %d..%d]", n.Op.Start, n.Op.End)
		}
		fmt.Fprintf(w, "%5d %7d  %-18s %-9s %s%s\n", i, n.Seq, termLine(n.Type), termLine(n.Role), preview, op)
	}
	fmt.Fprintf(w, "\n%d wire messages\n", len(l.Messages()))
	return nil
}

// previewOf is a one-line preview of a message's content.
func previewOf(m *surface.Message, width int) string {
	if m == nil {
		return ""
	}
	var parts []string
	for _, b := range m.Content {
		switch b.Type {
		case surface.BlockText:
			parts = append(parts, b.Text)
		case surface.BlockReasoning:
			parts = append(parts, "(thinking) "+b.Text)
		case surface.BlockToolCall:
			parts = append(parts, fmt.Sprintf("→ %s(%s)", b.Name, b.Arguments))
		case surface.BlockToolResult:
			t := surface.TextOf(b.Content)
			if b.IsError {
				t = "error: " + t
			}
			parts = append(parts, "← "+t)
		default:
			parts = append(parts, "["+b.Type+"]")
		}
	}
	s := strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
	if r := []rune(s); len(r) > width {
		s = string(r[:width-1]) + "…"
	}
	return s
}

func writeJSON(w interface{ Write([]byte) (int, error) }, v any) error {
	b, err := surface.Data(v)
	if err != nil {
		return err
	}
	if err := (*jsontext.Value)(&b).Indent(); err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
