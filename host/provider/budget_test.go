package provider_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/plugins"
	"github.com/weirhost/weir/surface"
)

// countingModel answers every request; it counts the summarization
// requests (those ending in the loop plugin's instruction) apart from the
// conversation's. With block, a summarization waits for its context to end.
type countingModel struct {
	mu        sync.Mutex
	summaries int
	turns     int
	block     bool
}

func (m *countingModel) Stream(ctx context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Result, error) {
	m.mu.Lock()
	last := req.Messages[len(req.Messages)-1]
	summary := strings.HasPrefix(surface.TextOf(last.Content), "Summarize, round ")
	if summary {
		m.summaries++
	} else {
		m.turns++
	}
	m.mu.Unlock()
	if summary && m.block {
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	return text("fine"), nil // 105 tokens of usage
}

func (m *countingModel) counts() (summaries, turns int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.summaries, m.turns
}

func pluginCalls(t *testing.T, l *loop) []host.PluginCall {
	var out []host.PluginCall
	for _, e := range l.events(host.TypePluginCall) {
		require.True(t, e.Ignorable)
		var c host.PluginCall
		require.NoError(t, json.Unmarshal(e.Data, &c))
		out = append(out, c)
	}
	return out
}

// TestSummarizeLoopIsStoppedByTheBudget runs a plugin that calls summarize
// in a loop, in automatic and manual compaction, and counts the model
// calls that reached the model.
func TestSummarizeLoopIsStoppedByTheBudget(t *testing.T) {
	cases := []struct {
		name      string
		config    string
		budget    host.CompactionBudget
		manual    bool
		block     bool
		summaries int    // model calls the compaction made
		key       string // the configuration key the failure names
		refused   int    // calls refused (recorded on the refused record)
	}{
		{name: "automatic, stops at the first refusal", config: `{"calls":100}`,
			summaries: host.DefaultMaxSummarizeCalls, key: host.KeyMaxSummarizeCalls, refused: 1},
		{name: "manual, ignores refusals and proposes anyway", config: `{"calls":1000,"ignoreErrors":true,"propose":true}`, manual: true,
			summaries: host.DefaultMaxSummarizeCalls, key: host.KeyMaxSummarizeCalls, refused: 1000 - host.DefaultMaxSummarizeCalls},
		{name: "token cap: the call crossing it completes", config: `{"calls":100}`, budget: host.CompactionBudget{MaxTokens: 250},
			summaries: 3, key: host.KeyMaxSummarizeTokens, refused: 1},
		{name: "manual, token cap", config: `{"calls":100,"ignoreErrors":true}`, budget: host.CompactionBudget{MaxTokens: 250}, manual: true,
			summaries: 3, key: host.KeyMaxSummarizeTokens, refused: 97},
		{name: "wall clock includes time inside summarize", config: `{"calls":100}`, block: true, manual: true,
			budget: host.CompactionBudget{WallClock: 500 * time.Millisecond}, summaries: 1, key: host.KeyCompactionWall},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lp := load(t, "loop", "summarize-loop", provider.RoleCompaction, c.config, provider.Limits{Call: 30 * time.Second})
			comp, err := lp.Compaction()
			require.NoError(t, err)
			m := &countingModel{}
			l := newLoop(t, func(_ *host.Session, cfg *host.Config) {
				cfg.Model, cfg.Summarizer = m, nil // summarization goes to the model
				cfg.Compactors = []host.CompactionProvider{comp}
				cfg.CompactionBudget = c.budget
			})
			l.turn("one") // the surface is empty at its pre-step: no summarizing
			require.Equal(t, uint64(1), lp.Stats().Calls)
			m.block = c.block
			if c.manual {
				_, err := l.a.CompactNow(context.Background())
				require.ErrorIs(t, err, host.ErrBudget)
				require.ErrorContains(t, err, c.key)
			} else {
				require.Equal(t, surface.EndCompleted, l.turn("two").Reason.Kind, "the step goes on without the compaction")
			}
			summaries, _ := m.counts()
			require.Equal(t, c.summaries, summaries, "model calls the compaction made")
			fails := l.failures()
			require.Len(t, fails, 1)
			require.Equal(t, "summarize-loop", fails[0].Plugin)
			require.Contains(t, fails[0].Error, "compaction budget exceeded")
			require.Contains(t, fails[0].Error, c.key)
			require.False(t, fails[0].Excused, "a budget overrun counts against the plugin")
			require.Empty(t, l.events(surface.TypeCompactionStart), "a compaction past its budget proposes nothing")

			calls := pluginCalls(t, l)
			var made int
			for _, pc := range calls {
				require.Equal(t, "summarize-loop", pc.Plugin)
				require.Equal(t, "compaction", pc.Kind)
				require.Equal(t, "summarize", pc.Call)
				if pc.Outcome != "refused" {
					made++
				}
			}
			require.Equal(t, c.summaries, made, "one record per model call")
			evs := l.s.Log().Events()
			for i, e := range l.events(host.TypePluginCall) {
				req, err := host.RequestAt(evs, e.Seq, l.s.ID())
				if calls[i].Outcome == "refused" {
					require.ErrorContains(t, err, "refused by the compaction budget and never sent")
					continue
				}
				require.NoError(t, err)
				require.Regexp(t, fmt.Sprintf(`^Summarize, round %d at step \d+\.$`, i+1), surface.TextOf(req.Messages[len(req.Messages)-1].Content))
			}
			last := calls[len(calls)-1]
			if c.refused > 0 {
				require.Equal(t, "refused", last.Outcome)
				require.Equal(t, c.refused, last.Refused)
				require.Contains(t, last.Error, c.key)
			} else {
				require.Equal(t, "error", last.Outcome)
				require.Contains(t, last.Error, c.key)
			}
			usage := host.PluginCalls(l.s.Log().Events())
			require.Len(t, usage, 1)
			require.Equal(t, c.summaries, usage[0].Calls)
			require.Equal(t, c.refused, usage[0].Refused)
			if !c.block {
				require.Equal(t, int64(100*c.summaries), usage[0].Usage.Input)
				require.Equal(t, int64(5*c.summaries), usage[0].Usage.Output)
			}
			m.block = false
		})
	}
}

// flakyLoop runs turns with the flaky plugin as the compaction provider.
func flakyLoop(t *testing.T, s *host.Session, config string) (*loop, *provider.Plugin, *provider.Compaction) {
	lp := load(t, "flaky", "flaky", provider.RoleCompaction, config, provider.Limits{Call: 500 * time.Millisecond})
	comp, err := lp.Compaction()
	require.NoError(t, err)
	l := newLoop(t, func(_ *host.Session, cfg *host.Config) { cfg.Compactors = []host.CompactionProvider{comp} })
	if s != nil {
		// Another process resumes the session.
		a, err := host.NewAgent(s, host.Config{Route: host.Route{Provider: "test", Model: "m1", ContextWindow: 100_000},
			Model: l.model, Prompt: &host.SectionPrompt{}, Compactors: []host.CompactionProvider{comp}})
		require.NoError(t, err)
		l.s, l.a = s, a
	}
	return l, lp, comp
}

// TestIntermittentFailuresDisableThePlugin: a plugin that fails (or hangs)
// every third call, and works in between, is disabled at its third failure.
func TestIntermittentFailuresDisableThePlugin(t *testing.T) {
	for _, config := range []string{`{"every":3}`, `{"every":3,"hang":true}`} {
		t.Run(config, func(t *testing.T) {
			l, lp, comp := flakyLoop(t, nil, config)
			for turn := 1; turn <= 9; turn++ {
				require.Equal(t, surface.EndCompleted, l.turn(fmt.Sprint("turn ", turn)).Reason.Kind)
				fails := l.failures()
				require.Len(t, fails, turn/3, "turn %d", turn)
				require.Equal(t, turn >= 9, comp.Disabled(l.s.ID()), "turn %d", turn)
			}
			fails := l.failures()
			require.False(t, fails[0].Disabled)
			require.False(t, fails[1].Disabled)
			require.True(t, fails[2].Disabled)
			require.Contains(t, fails[2].Error, `plugin "flaky" is disabled for session session-1: 3 failures within 10 steps`)
			calls := lp.Stats().Calls
			for turn := 10; turn <= 13; turn++ {
				l.turn(fmt.Sprint("turn ", turn))
			}
			require.Equal(t, calls, lp.Stats().Calls, "a disabled plugin is not called")
			require.Len(t, l.failures(), 3, "the breaker says so once")
		})
	}
}

// TestBreakerStateComesFromTheLog: a new process (a new plugin load, a new
// adapter, a new agent) resuming a session keeps what the log says about
// the plugin's failures.
func TestBreakerStateComesFromTheLog(t *testing.T) {
	cases := []struct {
		name       string
		before     int // turns run by the first process
		calledNext bool
		failures   int // failures in the log at the end
	}{
		// Disabled at turn 9: the new process never calls it.
		{name: "disabled stays disabled", before: 9, calledNext: false, failures: 3},
		// Two failures (turns 3, 6): the next failure (turn 9) disables it.
		{name: "two failures count", before: 7, calledNext: true, failures: 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, lp, _ := flakyLoop(t, nil, `{"every":3}`)
			for turn := 1; turn <= c.before; turn++ {
				l.turn(fmt.Sprint("turn ", turn))
			}
			require.NoError(t, lp.Close(context.Background()))
			log, err := surface.Restore(l.s.Log().Events())
			require.NoError(t, err)
			s := host.NewSession("session-1", log, nil, host.WithIDs(host.CounterIDs("r")))
			l2, lp2, comp2 := flakyLoop(t, s, `{"every":3}`)
			for turn := c.before + 1; turn <= 12; turn++ {
				l2.turn(fmt.Sprint("turn ", turn))
			}
			require.Equal(t, c.calledNext, lp2.Stats().Calls > 0)
			fails := l2.failures()
			require.Len(t, fails, c.failures)
			require.True(t, fails[len(fails)-1].Disabled)
			require.True(t, comp2.Disabled(s.ID()))
			if c.calledNext {
				require.Contains(t, fails[2].Error, "flaky: turn 9 is one of the bad ones")
			}
		})
	}
}

// TestFailedFirstRenderReservesTheHead: when the prompt fails on the
// session's first step, node 0 is still an (empty) system message, and the
// next good prompt replaces it rather than landing after the history.
func TestFailedFirstRenderReservesTheHead(t *testing.T) {
	lp := load(t, "trap", "trap", provider.RoleSystemPrompt, "", provider.Limits{})
	l := newLoop(t, func(s *host.Session, cfg *host.Config) {
		sp, err := lp.SystemPrompt(s)
		require.NoError(t, err)
		cfg.Prompt = sp
		cfg.Sections = []host.Section{{Key: "role", Text: "fail"}}
	})
	l.turn("one")
	require.Len(t, l.failures(), 1)
	nodes := l.s.Log().Surface()
	require.Equal(t, surface.TypeSystemMessage, nodes[0].Type, "node 0 is reserved")
	require.True(t, nodes[0].Empty)
	head := nodes[0].Seq
	m, _ := l.s.Log().Message(head)
	require.Empty(t, m.Content)
	require.Equal(t, "trap", m.Source.Plugin)

	l.a.SetSections([]host.Section{{Key: "role", Text: "Be helpful."}})
	l.turn("two")
	nodes = l.s.Log().Surface()
	require.Equal(t, surface.TypeSystemMessage, nodes[0].Type)
	e, _ := l.s.Log().Event(nodes[0].Seq)
	require.Equal(t, surface.Replace(head, head), e.Op, "the prompt replaces node 0")
	require.Equal(t, "Be helpful.", l.lastSystemPrompt())
	require.Len(t, l.events(surface.TypeSystemMessage), 2)
	l.checkReconstruction()
}

// importedSession is a session whose log holds a conversation but no
// request/header (migrated or imported), words words per message.
func importedSession(t *testing.T, turns, words int) *host.Session {
	log := surface.New(surface.WithClock(func() int64 { return 1_750_000_000_000 }))
	s := host.NewSession("session-1", log, nil, host.WithIDs(host.CounterIDs("m")))
	body := strings.Repeat("word ", words)
	add := func(typ string, v any, op surface.Op) {
		data, err := surface.Data(v)
		require.NoError(t, err)
		_, err = s.Propose(host.Proposer{Kind: host.ByLoop}, surface.Proposal{Type: typ, Data: data, Op: op})
		require.NoError(t, err)
	}
	type ref struct {
		Turn int64 `json:"turn"`
		Step int64 `json:"step,omitzero"`
	}
	add(surface.TypeTurnStart, ref{Turn: 1}, surface.Op{})
	add(surface.TypeStepStart, ref{1, 1}, surface.Op{})
	add(surface.TypeSystemMessage, surface.StepMessage{Turn: 1, Step: 1, Message: surface.Message{ID: s.NewID(), Role: surface.RoleSystem,
		Source: surface.Source{Kind: "plugin", Plugin: "system-prompt"}, Content: []surface.Block{surface.Text("You are helpful.")}}}, surface.Append)
	for i := range turns {
		if i > 0 {
			add(surface.TypeStepStart, ref{1, int64(i + 1)}, surface.Op{})
		}
		add(surface.TypeUserMessage, surface.Message{ID: s.NewID(), Role: surface.RoleUser, Source: surface.Source{Kind: "user"},
			Content: []surface.Block{surface.Text(body)}}, surface.Append)
		add(surface.TypeAssistantMessage, surface.StepMessage{Turn: 1, Step: int64(i + 1), Message: surface.Message{ID: s.NewID(),
			Role: surface.RoleAssistant, Source: surface.Source{Kind: "model", Provider: "test", Model: "m1"},
			Content: []surface.Block{surface.Text(body)}}}, surface.Append)
		add(surface.TypeStepEnd, ref{1, int64(i + 1)}, surface.Op{})
	}
	add(surface.TypeTurnEnd, surface.TurnEnd{Turn: 1, Reason: surface.EndReason{Kind: surface.EndCompleted}}, surface.Op{})
	require.Nil(t, s.Log().Header())
	return s
}

// TestPressureOnTheFirstStepWithoutAHeader: a session resumed far above
// its window with no request/header logged is compacted (compaction-basic,
// WASM) before its first request, against the route the step will use.
func TestPressureOnTheFirstStepWithoutAHeader(t *testing.T) {
	s := importedSession(t, 4, 150) // about 1,600 tokens against a 1,000-token window
	lp := loadFirstParty(t, plugins.CompactionBasic, provider.RoleCompaction,
		`{"headroomTokens": 0, "thresholdRatio": 0.5, "retainTokens": 50, "maxTokens": 200}`)
	comp, err := lp.Compaction()
	require.NoError(t, err)
	m := &model{}
	a, err := host.NewAgent(s, host.Config{Route: host.Route{Provider: "test", Model: "m1", ContextWindow: 1000},
		Model: m, Prompt: &host.SectionPrompt{}, Sections: []host.Section{{Key: "p", Text: "You are helpful."}},
		Compactors: []host.CompactionProvider{comp}, Summarizer: &summarizer{}})
	require.NoError(t, err)
	before := s.Log().NodeCount()
	res, err := a.Run(context.Background(), a.UserMessage("next"))
	require.NoError(t, err)
	require.Equal(t, surface.EndCompleted, res.Reason.Kind)
	var kinds []string
	for _, e := range s.Log().Events() {
		switch e.Type {
		case surface.TypeCompactionEnd, surface.TypeRequestHeader:
			kinds = append(kinds, e.Type)
		case surface.TypePluginFailure:
			t.Fatalf("plugin failure: %s", e.Data)
		}
	}
	require.Equal(t, []string{surface.TypeCompactionEnd, surface.TypeRequestHeader}, kinds, "compacted before the first request")
	require.Less(t, s.Log().NodeCount(), before+2, "the surface shrank")
	require.Len(t, m.bodies, 1)
	require.Less(t, len(m.bodies[0]), 2000, "the first request carries the checkpoint, not the history")
}

func loadFirstParty(t *testing.T, name string, role provider.Role, config string) *provider.Plugin {
	wasm := plugins.FirstParty[name]
	require.NotNil(t, wasm)
	modules[name] = wasm
	return load(t, name, name, role, config, provider.Limits{})
}

// TestSummarizeRequestsRebuildByteForByte records a session whose
// compactions (compaction-basic, WASM) summarize through the host's model
// client against a loopback server, then rebuilds every request the server
// received, conversation and summarization alike, from the log alone.
func TestSummarizeRequestsRebuildByteForByte(t *testing.T) {
	srv := llmtest.NewServer(t)
	client, err := llm.NewClient(llm.ClientConfig{BaseURL: srv.URL(), APIKey: "sk-test"})
	require.NoError(t, err)
	lp := loadFirstParty(t, plugins.CompactionBasic, provider.RoleCompaction,
		`{"headroomTokens": 0, "thresholdRatio": 0.5, "retainTokens": 50, "maxTokens": 200}`)
	comp, err := lp.Compaction()
	require.NoError(t, err)
	l := newLoop(t, func(_ *host.Session, cfg *host.Config) {
		cfg.Model, cfg.Summarizer = client, nil
		cfg.Route.ContextWindow = 1000
		cfg.Tools = []host.Tool{echoTool}
		cfg.Sections = []host.Section{{Key: "p", Text: "You are helpful."}}
		cfg.Compactors = []host.CompactionProvider{comp}
	})
	srv.SetFallback(func(n int, r llmtest.Request) llmtest.Reply {
		return llmtest.TextReply(40, 3, "## Primary Request and Intent\n- reply ", fmt.Sprint(n))
	})
	body := strings.Repeat("word ", 150)
	for range 4 {
		l.turn(body) // pressure compacts along the way
	}
	_, err = l.a.CompactNow(context.Background())
	require.NoError(t, err)
	l.turn("after")

	evs := l.s.Log().Events()
	var rebuilt [][]byte
	summaries := 0
	for _, e := range evs {
		switch e.Type {
		case surface.TypeAssistantMessage, surface.TypeAssistantAttempt, host.TypePluginCall:
		default:
			continue
		}
		if e.Type == host.TypePluginCall {
			summaries++
		}
		req, err := host.RequestAt(evs, e.Seq, l.s.ID())
		require.NoError(t, err)
		b, err := llm.EncodeRequest(req)
		require.NoError(t, err)
		rebuilt = append(rebuilt, b)
	}
	require.GreaterOrEqual(t, summaries, 2, "pressure and manual compaction summarized")
	got := srv.Requests()
	require.Len(t, got, len(rebuilt))
	for i := range got {
		require.Equal(t, string(got[i].Body), string(rebuilt[i]), "request %d", i)
	}
	// The records refer to the log instead of copying it.
	for _, c := range pluginCalls(t, l) {
		require.NotNil(t, c.Request.ToolsFrom, "the header's tools by reference")
		inline := 0
		for _, m := range c.Request.Messages {
			if m.Message != nil {
				inline++
			}
		}
		require.Equal(t, 1, inline, "only the instruction is inline")
		require.NotEmpty(t, c.CompactionID)
	}
}
