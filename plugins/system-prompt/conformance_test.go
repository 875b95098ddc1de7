package systemprompt

// Conformance group E (behaviour.md section 15, items 44-54) run end to
// end: the real agent loop renders the prompt through the first-party
// system-prompt module (plugins.FirstParty) under the real sandbox, and
// every item is checked through the events the loop writes. The prompt
// text is the assembly's one section, changed between turns with
// Agent.SetSections; the plugin renders it unchanged (a blank section
// renders ""). InHistory comes from host.Route.InHistory and a series
// start from a pre-step handler setting Decision.StartsSeries.

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/plugins"
	"github.com/weirhost/weir/sdk/plugintest"
	"github.com/weirhost/weir/surface"
)

// The embedded module is loaded once per test binary into the shared
// plugintest runtime, which compiles through the disk cache
// (WEIR_WAZERO_CACHE). TestE_C runs the group again with the C port as
// the module (conformanceModule).
var (
	conformanceModule = module{"firstparty", plugins.FirstParty[plugins.SystemPrompt]}
	promptMu          sync.Mutex
	promptPlugins     = map[string]*provider.Plugin{}
)

func wasmPrompt(t *testing.T, s *host.Session) *provider.SystemPrompt {
	t.Helper()
	promptMu.Lock()
	p, ok := promptPlugins[conformanceModule.name]
	if !ok {
		var err error
		p, err = provider.Load(context.Background(), plugintest.Runtime(t), provider.Spec{
			Name: plugins.SystemPrompt, Role: provider.RoleSystemPrompt, Wasm: conformanceModule.wasm})
		if err != nil {
			promptMu.Unlock()
			require.NoError(t, err)
		}
		promptPlugins[conformanceModule.name] = p
	}
	promptMu.Unlock()
	sp, err := p.SystemPrompt(s)
	require.NoError(t, err)
	return sp
}

// Group E with the C port rendering the prompt.
func TestE_C(t *testing.T) {
	wasm := buildC(t)
	old := conformanceModule
	conformanceModule = module{"c", wasm}
	t.Cleanup(func() { conformanceModule = old })
	for _, tc := range []struct {
		name string
		test func(*testing.T)
	}{
		{"E44", TestE44_WASM_EmptySurfaceAppendsHead}, {"E45", TestE45_WASM_ChangedPromptReplacesHead},
		{"E46", TestE46_WASM_EmptyPromptEmptiesHead}, {"E47", TestE47_WASM_EmptyFirstPromptReservesHead},
		{"E48", TestE48_WASM_ProjectionFromRestoredLog}, {"E49", TestE49_WASM_InHistoryContinuingAppends},
		{"E50", TestE50_WASM_InHistorySeriesStartReplacesHead}, {"E51", TestE51_WASM_SeriesStartCollapsesLaterNodes},
		{"E52", TestE52_WASM_EmptyPromptEmptiesEveryNode}, {"E53", TestE53_WASM_EmptyPromptEmptiesMultiBlockAndOpaqueNodes},
		{"E54", TestE54_WASM_CompactedLaterNodeIsAppendedAgain},
	} {
		t.Run(tc.name, tc.test)
	}
}

// eModel answers every request with a text (or the next scripted reply)
// and records the requests.
type eModel struct {
	replies []func(*llm.Request) (*llm.Result, error)
	reqs    []*llm.Request
}

func (m *eModel) Stream(_ context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Result, error) {
	m.reqs = append(m.reqs, req)
	if len(m.replies) > 0 {
		next := m.replies[0]
		m.replies = m.replies[1:]
		return next(req)
	}
	return &llm.Result{Content: []surface.Block{surface.Text(fmt.Sprintf("answer %d", len(m.reqs)))},
		FinishReason: llm.FinishStop}, nil
}

// loop is one session driven by the real agent loop with the WASM prompt.
type loop struct {
	t      *testing.T
	s      *host.Session
	a      *host.Agent
	model  *eModel
	series bool // what the pre-step handler sets as Decision.StartsSeries
}

func newLoop(t *testing.T, inHistory bool, prompt string, mod func(*host.Config)) *loop {
	return attach(t, host.NewSession("sess", surface.New(surface.WithClock(func() int64 { return 1000 })), nil,
		host.WithIDs(host.CounterIDs("m"))), inHistory, prompt, mod)
}

// attach starts a loop instance over an existing session.
func attach(t *testing.T, s *host.Session, inHistory bool, prompt string, mod func(*host.Config)) *loop {
	l := &loop{t: t, s: s, model: &eModel{}}
	cfg := host.Config{Route: host.Route{Provider: "test", Model: "m1", ContextWindow: 100_000, InHistory: inHistory},
		Model: l.model, Prompt: wasmPrompt(t, s), Sections: []host.Section{{Key: "base", Text: prompt}}}
	if mod != nil {
		mod(&cfg)
	}
	a, err := host.NewAgent(s, cfg)
	require.NoError(t, err)
	_, err = a.PreStepChain.Add("series", func(_ context.Context, in host.PreStep) (host.PreStep, error) {
		in.Decision.StartsSeries = l.series
		return in, nil
	})
	require.NoError(t, err)
	l.a = a
	return l
}

// turn renders prompt for one turn and returns the system/message events
// that turn committed.
func (l *loop) turn(prompt, text string) []surface.Event {
	l.t.Helper()
	l.a.SetSections([]host.Section{{Key: "base", Text: prompt}})
	from := l.s.Log().NextSeq()
	res, err := l.a.Run(context.Background(), l.a.UserMessage(text))
	require.NoError(l.t, err)
	require.Equal(l.t, surface.EndCompleted, res.Reason.Kind)
	var out []surface.Event
	for _, e := range l.s.Log().Events() {
		if e.Seq >= from && e.Type == surface.TypeSystemMessage {
			out = append(out, e)
		}
	}
	return out
}

// systemTexts are the texts of the system messages derived from the surface.
func (l *loop) systemTexts() []string {
	var out []string
	for _, m := range l.s.Log().Messages() {
		if m.Role == surface.RoleSystem {
			out = append(out, surface.TextOf(m.Content))
		}
	}
	return out
}

func (l *loop) roles() []string {
	var out []string
	for _, m := range l.s.Log().Messages() {
		out = append(out, m.Role)
	}
	return out
}

// stepMessage decodes the message a system/message event carries.
func stepMessage(t *testing.T, e surface.Event) surface.Message {
	var sm surface.StepMessage
	require.NoError(t, json.Unmarshal(e.Data, &sm))
	return sm.Message
}

func TestE44_WASM_EmptySurfaceAppendsHead(t *testing.T) {
	l := newLoop(t, false, "v1", nil)
	sys := l.turn("v1", "one")
	require.Len(t, sys, 1)
	require.Equal(t, surface.Append, sys[0].Op)
	require.Nil(t, sys[0].Sources)
	m := stepMessage(t, sys[0])
	require.Equal(t, surface.RoleSystem, m.Role)
	require.Equal(t, surface.Source{Kind: "plugin", Plugin: plugins.SystemPrompt}, m.Source)
	require.Equal(t, []surface.Block{surface.Text("v1")}, m.Content)
	require.Equal(t, sys[0].Seq, l.s.Log().Nodes()[0], "the head is node 0")
	req := l.model.reqs[0]
	require.Equal(t, surface.RoleSystem, req.Messages[0].Role)
	require.Equal(t, "v1", surface.TextOf(req.Messages[0].Content))
}

func TestE45_WASM_ChangedPromptReplacesHead(t *testing.T) {
	l := newLoop(t, false, "v1", nil)
	head := l.turn("v1", "one")[0].Seq
	require.Empty(t, l.turn("v1", "two"), "an unchanged prompt commits nothing")
	sys := l.turn("v2", "three")
	require.Len(t, sys, 1)
	require.Equal(t, surface.Replace(head, head), sys[0].Op)
	require.Equal(t, []int64{head}, sys[0].Sources)
	require.Equal(t, "v2", surface.TextOf(stepMessage(t, sys[0]).Content))
	require.Equal(t, sys[0].Seq, l.s.Log().Nodes()[0], "node 0 is the new seq")
	require.Equal(t, []string{"v2"}, l.systemTexts())
}

func TestE46_WASM_EmptyPromptEmptiesHead(t *testing.T) {
	l := newLoop(t, false, "v2", nil)
	l.turn("v2", "one")
	nodes := len(l.s.Log().Nodes())
	sys := l.turn("", "two")
	require.Len(t, sys, 1)
	require.Equal(t, surface.OpReplace, sys[0].Op.Kind)
	require.Empty(t, stepMessage(t, sys[0]).Content, "an empty-content replace")
	require.Equal(t, sys[0].Seq, l.s.Log().Nodes()[0])
	require.Equal(t, []string{"user", "assistant", "user", "assistant"}, l.roles(), "the empty head derives no message")
	require.Len(t, l.s.Log().Nodes(), nodes+2, "the head is still a node")
	require.Equal(t, surface.RoleUser, l.model.reqs[1].Messages[0].Role)
	require.Empty(t, l.turn("", "three"), "\"\" again commits nothing")
	empty := l.s.Log().Nodes()[0]
	sys = l.turn("v3", "four")
	require.Len(t, sys, 1)
	require.Equal(t, surface.Replace(empty, empty), sys[0].Op)
	require.Equal(t, "v3", surface.TextOf(stepMessage(t, sys[0]).Content))
}

func TestE47_WASM_EmptyFirstPromptReservesHead(t *testing.T) {
	l := newLoop(t, false, "", nil)
	sys := l.turn("", "one")
	require.Len(t, sys, 1)
	require.Equal(t, surface.Append, sys[0].Op)
	m := stepMessage(t, sys[0])
	require.Equal(t, surface.RoleSystem, m.Role)
	require.Empty(t, m.Content)
	nodes := l.s.Log().Nodes()
	require.Equal(t, sys[0].Seq, nodes[0])
	ev, _ := l.s.Log().Event(nodes[1])
	require.Equal(t, surface.TypeUserMessage, ev.Type, "nodes are [head, user, ...]")
	require.Equal(t, []string{"user"}, rolesOf(l.model.reqs[0].Messages), "no system message is sent")

	sys = l.turn("Follow this guidance.", "two")
	require.Len(t, sys, 1)
	require.Equal(t, surface.Replace(nodes[0], nodes[0]), sys[0].Op)
	ms := l.s.Log().Messages()
	require.Equal(t, surface.RoleSystem, ms[0].Role)
	require.Equal(t, "Follow this guidance.", surface.TextOf(ms[0].Content))
	require.Equal(t, surface.RoleUser, ms[1].Role)
	require.Equal(t, "one", surface.TextOf(ms[1].Content))
}

func rolesOf(ms []*surface.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Role)
	}
	return out
}

// reseed starts a new session from the events of l's (resume).
func (l *loop) reseed(inHistory bool, prompt string) *loop {
	seeded, err := surface.Seed(l.s.Log().Events())
	require.NoError(l.t, err)
	return attach(l.t, host.NewSession("sess", seeded, nil, host.WithIDs(host.CounterIDs("r"))), inHistory, prompt, nil)
}

func TestE48_WASM_ProjectionFromRestoredLog(t *testing.T) {
	l := newLoop(t, false, "v1", nil)
	l.turn("v1", "one")
	cur := l.turn("current", "two")[0].Seq
	r := l.reseed(false, "current")
	require.Equal(t, cur, r.s.Log().Nodes()[0])
	require.Empty(t, r.turn("current", "three"), "the restored head already holds the prompt")
	sys := r.turn("next", "four")
	require.Len(t, sys, 1)
	require.Equal(t, surface.Replace(cur, cur), sys[0].Op)
	require.Equal(t, []string{"next"}, r.systemTexts())

	// A restored empty head.
	l = newLoop(t, false, "", nil)
	head := l.turn("", "one")[0].Seq
	r = l.reseed(false, "")
	require.Empty(t, r.turn("", "two"))
	sys = r.turn("text", "three")
	require.Len(t, sys, 1)
	require.Equal(t, surface.Replace(head, head), sys[0].Op)
	require.Equal(t, []string{"text"}, r.systemTexts())
}

func TestE49_WASM_InHistoryContinuingAppends(t *testing.T) {
	l := newLoop(t, true, "v1", nil)
	head := l.turn("v1", "one")[0].Seq
	sys := l.turn("v2", "two")
	require.Len(t, sys, 1)
	require.Equal(t, surface.Append, sys[0].Op)
	require.Equal(t, head, l.s.Log().Nodes()[0], "the head is unchanged")
	require.Equal(t, []string{"system", "user", "assistant", "system", "user", "assistant"}, l.roles())
	require.Empty(t, l.turn("v2", "three"), "v2 again commits nothing")
	sys = l.turn("v3", "four")
	require.Len(t, sys, 1)
	require.Equal(t, surface.Append, sys[0].Op)
	require.Equal(t, []string{"v1", "v2", "v3"}, l.systemTexts())
}

func TestE50_WASM_InHistorySeriesStartReplacesHead(t *testing.T) {
	l := newLoop(t, true, "v1", nil)
	head := l.turn("v1", "one")[0].Seq
	l.series = true
	sys := l.turn("v2", "two")
	require.Len(t, sys, 1)
	require.Equal(t, surface.Replace(head, head), sys[0].Op)
	require.Equal(t, []string{"v2"}, l.systemTexts())
}

func TestE51_WASM_SeriesStartCollapsesLaterNodes(t *testing.T) {
	l := newLoop(t, true, "v1", nil)
	head := l.turn("v1", "one")[0].Seq
	later := l.turn("v2", "two")[0].Seq
	l.series = true
	sys := l.turn("v4", "three")
	require.Len(t, sys, 2)
	require.Equal(t, surface.Replace(later, later), sys[0].Op, "the later node first")
	require.Empty(t, stepMessage(t, sys[0]).Content)
	require.Equal(t, surface.Replace(head, head), sys[1].Op)
	require.Equal(t, "v4", surface.TextOf(stepMessage(t, sys[1]).Content))
	require.Equal(t, []string{"v4"}, l.systemTexts())
	last := l.model.reqs[len(l.model.reqs)-1]
	require.Equal(t, "v4", surface.TextOf(last.Messages[0].Content))
	l.series = false
	require.Empty(t, l.turn("v4", "four"), "v4 continuing commits nothing")
}

func TestE52_WASM_EmptyPromptEmptiesEveryNode(t *testing.T) {
	l := newLoop(t, true, "v1", nil)
	head := l.turn("v1", "one")[0].Seq
	later := l.turn("v2", "two")[0].Seq
	sys := l.turn("", "three")
	require.Len(t, sys, 2)
	require.Equal(t, surface.Replace(later, later), sys[0].Op, "the later node first")
	require.Equal(t, surface.Replace(head, head), sys[1].Op)
	for _, e := range sys {
		require.Empty(t, stepMessage(t, e).Content)
	}
	require.NotContains(t, l.roles(), "system")
	require.Empty(t, l.turn("", "four"), "\"\" again commits nothing")
	l.a.SetRoute(host.Route{Provider: "test", Model: "m1", ContextWindow: 100_000}) // replacement mode
	sys = l.turn("v3", "five")
	require.Len(t, sys, 1)
	require.Equal(t, surface.OpReplace, sys[0].Op.Kind)
	require.Equal(t, "v3", surface.TextOf(stepMessage(t, sys[0]).Content))
	require.Equal(t, []string{"v3"}, l.systemTexts())
}

// The loop's prompt provider always commits one text block, so a head
// with two text blocks and a later node with non-text content are written
// into the log before it is seeded; the WASM prompt then renders "" on the
// resumed, continuing in-history route.
func TestE53_WASM_EmptyPromptEmptiesMultiBlockAndOpaqueNodes(t *testing.T) {
	l := newLoop(t, true, "v1", nil)
	head := l.turn("v1", "one")[0].Seq
	later := l.turn("v2", "two")[0].Seq
	evs := append([]surface.Event(nil), l.s.Log().Events()...)
	edit := func(seq int64, content []surface.Block) {
		var sm surface.StepMessage
		require.NoError(t, json.Unmarshal(evs[seq].Data, &sm))
		sm.Message.Content = content
		data, err := surface.Data(sm)
		require.NoError(t, err)
		evs[seq].Data = data
	}
	edit(head, []surface.Block{surface.Text("part one"), surface.Text("part two")})
	edit(later, []surface.Block{{Type: "image", Unknown: jsontext.Value(`{"mediaType":"image/png","data":"iVBORw0KGgo="}`)}})
	seeded, err := surface.Seed(evs)
	require.NoError(t, err)
	r := attach(t, host.NewSession("sess", seeded, nil, host.WithIDs(host.CounterIDs("r"))), true, "", nil)
	require.Len(t, r.systemTexts(), 2)
	sys := r.turn("", "three")
	require.Len(t, sys, 2)
	require.Equal(t, surface.Replace(later, later), sys[0].Op)
	require.Equal(t, surface.Replace(head, head), sys[1].Op)
	for _, e := range sys {
		require.Empty(t, stepMessage(t, e).Content)
	}
	require.NotContains(t, r.roles(), "system", "only user (and assistant) messages remain")
	last := r.model.reqs[len(r.model.reqs)-1]
	require.NotContains(t, rolesOf(last.Messages), "system")
}

// overflowCompactor, on a context overflow, replaces every node after the
// system head with a checkpoint (as host's checkpointCompactor does).
type overflowCompactor struct{ calls int }

func (c *overflowCompactor) ID() string { return "test-compactor" }

func (c *overflowCompactor) Compact(_ context.Context, v *host.View, req host.CompactionRequest) ([]surface.Proposal, error) {
	if req.Reason != host.CompactOverflow {
		return nil, nil
	}
	c.calls++
	nodes := v.Nodes()
	var shadowed []int64
	for _, n := range nodes[1:] {
		shadowed = append(shadowed, n.Seq)
	}
	next := v.NextSeq()
	id := fmt.Sprintf("cmp-%d", next)
	start, _ := surface.Data(map[string]any{"compactionId": id, "turn": req.Turn})
	summary, _ := surface.Data(map[string]any{"compactionId": id, "summary": "summary", "shadowedSeqs": shadowed})
	cp, _ := surface.Data(surface.Message{ID: v.NewID(), Role: "user", Source: surface.Source{Kind: "plugin", Plugin: c.ID()},
		Content: []surface.Block{surface.Text("<compacted-summary>summary</compacted-summary>")}})
	end, _ := surface.Data(map[string]any{"compactionId": id, "turn": req.Turn})
	return []surface.Proposal{
		{Type: surface.TypeCompactionStart, Data: start},
		{Type: surface.TypeCompactionSummary, Data: summary},
		{Type: surface.TypeUserMessage, Data: cp, Op: surface.Replace(shadowed[0], shadowed[len(shadowed)-1]),
			Sources: append([]int64{next, next + 1}, shadowed...)},
		{Type: surface.TypeCompactionEnd, Data: end},
	}, nil
}

// Any compaction advances contentGeneration, and the loop starts a series
// at the next projection it makes. To project "late prompt" on a
// continuing series after the later node was compacted away, the
// compaction runs on a context overflow: the retry starts the series (and
// logs its header) without projecting again, so the next turn's
// projection continues it.
func TestE54_WASM_CompactedLaterNodeIsAppendedAgain(t *testing.T) {
	comp := &overflowCompactor{}
	l := newLoop(t, true, "first prompt", func(c *host.Config) { c.Compactors = []host.CompactionProvider{comp} })
	head := l.turn("first prompt", "one")[0].Seq
	later := l.turn("late prompt", "two")[0]
	require.Equal(t, surface.Append, later.Op)
	l.model.replies = append(l.model.replies, func(*llm.Request) (*llm.Result, error) {
		return &llm.Result{}, &llm.Error{Code: llm.CodeContextOverflow, What: "too long"}
	})
	require.Empty(t, l.turn("late prompt", "three"), "the later node still holds the prompt")
	require.Equal(t, 1, comp.calls)
	require.NotContains(t, l.s.Log().Nodes(), later.Seq, "the compaction replaced the later node")
	require.Equal(t, []string{"first prompt"}, l.systemTexts())

	sys := l.turn("late prompt", "four")
	require.Len(t, sys, 1)
	require.Equal(t, surface.Append, sys[0].Op, "continuing: appended, not replacing the head")
	require.Equal(t, head, l.s.Log().Nodes()[0])
	require.Equal(t, []string{"first prompt", "late prompt"}, l.systemTexts())
}
