package host

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// overflowProbe measures and summarizes on the pre-step waterfall and
// proposes nothing there, and checkpoints on overflow recovery.
type overflowProbe struct {
	probe      probeCompactor
	checkpoint checkpointCompactor
}

func (c *overflowProbe) ID() string { return c.checkpoint.ID() } // its checkpoints speak as it
func (c *overflowProbe) Compact(ctx context.Context, v *View, req CompactionRequest) ([]surface.Proposal, error) {
	if req.Reason == CompactOverflow {
		return c.checkpoint.Compact(ctx, v, req)
	}
	return c.probe.Compact(ctx, v, req)
}

// TestSpanTreeAsDocumented: the span tree docs/embedding.md draws is the
// tree of two real traced turns (the SDK's in-memory exporter) with
// automatic compactions that measure and summarize, a tool call, and a
// retry after a context overflow recovered by a compaction between the
// two attempts. Every parent-child pair the doc draws is in the trace,
// and every pair in the trace is one the doc draws; a span's name is the
// doc's operation, followed by the name the doc's placeholder stands for.
// Besides the turns, the only root is the meter's observe of the agent
// attaching, as the doc's text says.
func TestSpanTreeAsDocumented(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "docs", "embedding.md"))
	require.NoError(t, err)
	doc := string(raw)
	i := strings.Index(doc, "\n### Spans\n")
	require.GreaterOrEqual(t, i, 0, "docs/embedding.md has a Spans section")
	rest := doc[i:]
	j := strings.Index(rest, "```text\n")
	require.GreaterOrEqual(t, j, 0, "a ```text block follows")
	rest = rest[j+len("```text\n"):]
	block := rest[:strings.Index(rest, "```")]

	// The doc's pairs, by operation (a name's first word), and what each
	// operation's placeholder is.
	want := map[string]bool{}
	placeholder := map[string]string{}
	var stack []string
	for _, line := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		depth := (len(line) - len(strings.TrimLeft(line, " "))) / 2
		f := strings.Fields(line)
		require.GreaterOrEqual(t, len(f), 2, "line %q: a name and what it is", line)
		op := f[0]
		if isPlaceholder(f[1]) {
			placeholder[op] = f[1]
		}
		require.LessOrEqual(t, depth, len(stack), "line %q is indented below no parent", line)
		stack = append(stack[:depth], op)
		if depth > 0 {
			want[stack[depth-1]+" > "+op] = true
		} else {
			require.Equal(t, "invoke_agent", op, "the doc's root is the turn")
		}
	}

	rig := newOtelRig(t)
	h := newHarness(t, "be brief", func(c *Config) {
		rig.config(c)
		c.AgentName = "tester"
		c.Tools = []Tool{echoTool}
		c.MaxRetryWait = time.Millisecond
		c.Meter = &stubMeter{}
		c.Compactors = []CompactionProvider{&overflowProbe{}}
		c.Summarizer = stubSummarizer{}
	})
	h.model.then(callTool("call-1", "echo", `{"x":1}`), reply("done"), fail(llm.CodeContextOverflow), reply("fits now"))
	for _, text := range []string{"hi", "again"} {
		res := h.turn(text)
		require.Equal(t, surface.EndCompleted, res.Reason.Kind, "%v", res.Reason.Error)
	}

	spans := rig.tree(t).spans
	byID := map[string]string{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s.Name
	}
	opOf := func(name string) string { op, _, _ := strings.Cut(name, " "); return op }
	// What each placeholder names in this run.
	names := map[string][]string{
		"NAME": {"tester"}, "[NAME]": {"tester"}, "MODEL": {"m1", "sum-1"}, "TOOL": {"echo"},
		"PLUGIN": {"test-compactor", "stub-meter", "system-prompt"},
	}
	got := map[string]bool{}
	var roots []string
	for _, s := range spans {
		op, arg, _ := strings.Cut(s.Name, " ")
		ph, ok := placeholder[op]
		require.True(t, ok || arg == "", "span %q: the doc's %q has no placeholder", s.Name, op)
		if ok && !(arg == "" && strings.HasPrefix(ph, "[")) { // [NAME]: optional
			require.Contains(t, names[ph], arg, "span %q: %s", s.Name, ph)
		}
		if !s.Parent.IsValid() {
			roots = append(roots, op)
			continue
		}
		parent, ok := byID[s.Parent.SpanID().String()]
		require.True(t, ok, "span %q: its parent was exported", s.Name)
		got[opOf(parent)+" > "+op] = true
	}
	require.Equal(t, sortedKeys(want), sortedKeys(got), "the doc's span tree (parent > child)")

	// The doc's second weir.compaction of a step: overflow recovery,
	// between the failed attempt and its retry.
	tr := rig.tree(t)
	var overflow []string
	for _, c := range tr.named("weir.compaction") {
		if attrs(c)["weir.compaction.reason"].AsString() != string(CompactOverflow) {
			continue
		}
		var chats []time.Time
		for _, s := range spans {
			if s.Parent.SpanID() == c.Parent.SpanID() && opOf(s.Name) == "chat" {
				chats = append(chats, s.StartTime)
			}
		}
		slices.SortFunc(chats, time.Time.Compare)
		require.Len(t, chats, 2, "the step of the overflow recovery made two attempts")
		require.True(t, !c.StartTime.Before(chats[0]) && !c.StartTime.After(chats[1]), "the recovery runs between them")
		overflow = append(overflow, byID[c.Parent.SpanID().String()])
	}
	require.Equal(t, []string{"weir.step"}, overflow, "one overflow recovery, below a step")
	slices.Sort(roots)
	require.Equal(t, []string{"invoke_agent", "invoke_agent", "observe"}, roots, "the turns and the meter's attach are the roots")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// isPlaceholder reports whether a word of the doc's tree stands for a
// name: capitals (NAME, MODEL), in brackets when optional ([NAME]).
func isPlaceholder(w string) bool {
	w = strings.TrimSuffix(strings.TrimPrefix(w, "["), "]")
	return w != "" && strings.Trim(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == ""
}
