package surface_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// promptLog is a test session that commits prompt projections the way the
// loop does: inside an open step.
type promptLog struct {
	t   *testing.T
	l   *surface.Log
	ids int
}

func newPromptLog(t *testing.T) *promptLog {
	p := &promptLog{t: t, l: surface.New(surface.WithClock(func() int64 { return 1000 }))}
	p.logOnly(surface.TypeTurnStart, `{"turn":1}`)
	p.logOnly(surface.TypeStepStart, `{"turn":1,"step":1}`)
	return p
}

func (p *promptLog) newID() string { p.ids++; return fmt.Sprintf("id-%d", p.ids) }

func (p *promptLog) logOnly(typ, data string) {
	_, err := p.l.Append(surface.Proposal{Type: typ, Data: []byte(data)})
	require.NoError(p.t, err)
}

func (p *promptLog) opts(inHistory, series bool) surface.PromptOptions {
	return surface.PromptOptions{InHistory: inHistory, StartsSeries: series, Plugin: "system-prompt", NewID: p.newID}
}

// project runs a projection and commits its result, returning the commits.
func (p *promptLog) project(text string, inHistory, series bool) []surface.PromptCommit {
	cs := p.l.ProjectSystemPrompt(text, p.opts(inHistory, series))
	for _, c := range cs {
		p.commitSystem(c.Message, c.Op, c.Sources)
	}
	return cs
}

func (p *promptLog) commitSystem(m surface.Message, op surface.Op, src []int64) int64 {
	data, err := surface.Data(surface.StepMessage{Turn: 1, Step: 1, Message: m})
	require.NoError(p.t, err)
	e, err := p.l.Append(surface.Proposal{Type: surface.TypeSystemMessage, Data: data, Op: op, Sources: src})
	require.NoError(p.t, err)
	return e.Seq
}

func (p *promptLog) user(text string) int64 {
	data, err := surface.Data(surface.Message{ID: p.newID(), Role: "user", Source: surface.Source{Kind: "user"},
		Content: []surface.Block{surface.Text(text)}})
	require.NoError(p.t, err)
	e, err := p.l.Append(surface.Proposal{Type: surface.TypeUserMessage, Data: data, Op: surface.Append})
	require.NoError(p.t, err)
	return e.Seq
}

func logRoles(l *surface.Log) []string {
	var out []string
	for _, m := range l.Messages() {
		out = append(out, m.Role)
	}
	return out
}

func systemTexts(l *surface.Log) []string {
	var out []string
	for _, m := range l.Messages() {
		if m.Role == "system" {
			out = append(out, surface.TextOf(m.Content))
		}
	}
	return out
}

func kinds(cs []surface.PromptCommit) []string {
	var out []string
	for _, c := range cs {
		k := "append"
		if c.Op.Kind == surface.OpReplace {
			k = fmt.Sprintf("replace %d", c.Op.Start)
		}
		out = append(out, fmt.Sprintf("%s %q", k, surface.TextOf(c.Message.Content)))
	}
	return out
}

func TestE44_EmptySurfaceAppends(t *testing.T) {
	p := newPromptLog(t)
	cs := p.l.ProjectSystemPrompt("v1", p.opts(false, false))
	require.Len(t, cs, 1)
	require.Equal(t, surface.OpAppend, cs[0].Op.Kind)
	require.Equal(t, "system", cs[0].Message.Role)
	require.Equal(t, surface.Source{Kind: "plugin", Plugin: "system-prompt"}, cs[0].Message.Source)
	require.Equal(t, "v1", surface.TextOf(cs[0].Message.Content))
}

func TestE45_SameTextNothingChangedTextReplacesHead(t *testing.T) {
	p := newPromptLog(t)
	p.project("v1", false, false)
	p.user("hi")
	require.Empty(t, p.l.ProjectSystemPrompt("v1", p.opts(false, false)))
	headSeq := p.l.Nodes()[0]
	cs := p.project("v2", false, false)
	require.Equal(t, []string{fmt.Sprintf("replace %d \"v2\"", headSeq)}, kinds(cs))
	require.Equal(t, []int64{headSeq}, cs[0].Sources)
	require.Equal(t, p.l.NextSeq()-1, p.l.Nodes()[0], "node 0 is the new system/message")
}

func TestE46_EmptyRenderEmptiesHead(t *testing.T) {
	p := newPromptLog(t)
	p.project("v2", false, false)
	p.user("hi")
	cs := p.project("", false, false)
	require.Len(t, cs, 1)
	require.Equal(t, surface.OpReplace, cs[0].Op.Kind)
	require.Empty(t, cs[0].Message.Content)
	require.Equal(t, []string{"user"}, logRoles(p.l))
	require.Empty(t, p.l.ProjectSystemPrompt("", p.opts(false, false)))
	cs = p.l.ProjectSystemPrompt("v3", p.opts(false, false))
	require.Len(t, cs, 1)
	require.Equal(t, surface.OpReplace, cs[0].Op.Kind)
}

func TestE47_EmptyFirstPromptReservesHead(t *testing.T) {
	p := newPromptLog(t)
	cs := p.project("", false, false)
	require.Len(t, cs, 1)
	require.Equal(t, surface.OpAppend, cs[0].Op.Kind)
	require.Empty(t, cs[0].Message.Content)
	head := p.l.Nodes()[0]
	u := p.user("hi")
	require.Equal(t, []int64{head, u}, p.l.Nodes())
	cs = p.project("Follow this guidance.", false, false)
	require.Equal(t, []string{fmt.Sprintf("replace %d \"Follow this guidance.\"", head)}, kinds(cs))
	msgs := p.l.Messages()
	require.Equal(t, []string{"system", "user"}, logRoles(p.l))
	require.Equal(t, "Follow this guidance.", surface.TextOf(msgs[0].Content))
	require.Equal(t, "hi", surface.TextOf(msgs[1].Content))
}

func TestE48_RestoredLogProjectsFromCurrentHead(t *testing.T) {
	p := newPromptLog(t)
	p.project("first", false, false)
	p.user("hi")
	p.project("current", false, false)
	restored, err := surface.Restore(p.l.Events())
	require.NoError(t, err)
	require.Empty(t, restored.ProjectSystemPrompt("current", p.opts(false, false)))
	cs := restored.ProjectSystemPrompt("next", p.opts(false, false))
	require.Equal(t, []string{fmt.Sprintf("replace %d \"next\"", restored.Nodes()[0])}, kinds(cs))

	q := newPromptLog(t)
	q.project("", false, false)
	q.user("hi")
	restored, err = surface.Restore(q.l.Events())
	require.NoError(t, err)
	require.Empty(t, restored.ProjectSystemPrompt("", q.opts(false, false)))
	cs = restored.ProjectSystemPrompt("text", q.opts(false, false))
	require.Equal(t, []string{fmt.Sprintf("replace %d \"text\"", restored.Nodes()[0])}, kinds(cs))
}

func TestE49_InHistoryContinuingAppends(t *testing.T) {
	p := newPromptLog(t)
	p.project("v1", true, false)
	p.user("a")
	cs := p.project("v2", true, false)
	require.Equal(t, []string{`append "v2"`}, kinds(cs))
	require.Equal(t, []string{"system", "user", "system"}, logRoles(p.l))
	require.Empty(t, p.l.ProjectSystemPrompt("v2", p.opts(true, false)))
	p.user("b")
	require.Equal(t, []string{`append "v3"`}, kinds(p.project("v3", true, false)))
	require.Equal(t, []string{"v1", "v2", "v3"}, systemTexts(p.l))
}

func TestE50_InHistoryNewSeriesReplacesHead(t *testing.T) {
	p := newPromptLog(t)
	p.project("v1", true, false)
	p.user("a")
	head := p.l.Nodes()[0]
	require.Equal(t, []string{fmt.Sprintf("replace %d \"v2\"", head)}, kinds(p.project("v2", true, true)))
}

func TestE51_SeriesNormalizesLaterNodes(t *testing.T) {
	p := newPromptLog(t)
	p.project("v1", true, false)
	p.user("a")
	p.project("v3", true, false)
	head, later := p.l.Nodes()[0], p.l.Nodes()[2]
	cs := p.project("v4", true, true)
	require.Equal(t, []string{fmt.Sprintf("replace %d \"\"", later), fmt.Sprintf("replace %d \"v4\"", head)}, kinds(cs))
	require.Equal(t, []string{"v4"}, systemTexts(p.l))
	require.Empty(t, p.l.ProjectSystemPrompt("v4", p.opts(true, false)))
}

func TestE52_EmptyRenderEmptiesEverySystemNode(t *testing.T) {
	p := newPromptLog(t)
	p.project("v1", true, false)
	p.user("a")
	p.project("v2", true, false)
	head, later := p.l.Nodes()[0], p.l.Nodes()[2]
	cs := p.project("", true, false)
	require.Equal(t, []string{fmt.Sprintf("replace %d \"\"", later), fmt.Sprintf("replace %d \"\"", head)}, kinds(cs))
	require.Equal(t, []string{"user"}, logRoles(p.l))
	require.Empty(t, p.l.ProjectSystemPrompt("", p.opts(true, false)))
	cs = p.l.ProjectSystemPrompt("v3", p.opts(false, false))
	require.Len(t, cs, 1)
	require.Equal(t, surface.OpReplace, cs[0].Op.Kind)
	require.Equal(t, "v3", surface.TextOf(cs[0].Message.Content))
}

func TestE53_OpaqueNodesAreEmptied(t *testing.T) {
	for _, mode := range []struct {
		name      string
		inHistory bool
	}{{"in-history continuing", true}, {"replacement", false}} {
		t.Run(mode.name, func(t *testing.T) {
			p := newPromptLog(t)
			head := p.commitSystem(surface.Message{ID: p.newID(), Role: "system", Source: surface.Source{Kind: "plugin", Plugin: "system-prompt"},
				Content: []surface.Block{surface.Text("a"), surface.Text("b")}}, surface.Append, nil)
			p.user("u")
			later := p.commitSystem(surface.Message{ID: p.newID(), Role: "system", Source: surface.Source{Kind: "plugin", Plugin: "system-prompt"},
				Content: []surface.Block{{Type: "image", Unknown: []byte(`{"type":"image","url":"x"}`)}}}, surface.Append, nil)
			cs := p.project("", mode.inHistory, false)
			// Both nodes are emptied, the later one first, each in place.
			require.Equal(t, []string{fmt.Sprintf("replace %d \"\"", later), fmt.Sprintf("replace %d \"\"", head)}, kinds(cs))
			for _, c := range cs {
				require.Empty(t, c.Message.Content)
			}
			require.Equal(t, []string{"user"}, logRoles(p.l))
			require.Len(t, p.l.Nodes(), 3, "the emptied nodes keep their places")
			require.Empty(t, p.l.ProjectSystemPrompt("", p.opts(mode.inHistory, false)))
		})
	}
}

func TestE54_ShadowedLaterNodeIsAppendedAgain(t *testing.T) {
	p := newPromptLog(t)
	p.project("first prompt", true, false)
	p.user("u")
	p.project("late prompt", true, false)
	late := p.l.Nodes()[2]
	data, err := surface.Data(surface.Message{ID: p.newID(), Role: "user", Source: surface.Source{Kind: "plugin", Plugin: "compact"},
		Content: []surface.Block{surface.Text("summary")}})
	require.NoError(t, err)
	_, err = p.l.Append(surface.Proposal{Type: surface.TypeUserMessage, Data: data, Op: surface.Replace(late, late), Sources: []int64{late}})
	require.NoError(t, err)
	require.Equal(t, []string{`append "late prompt"`}, kinds(p.l.ProjectSystemPrompt("late prompt", p.opts(true, false))))
}
