// Package evaltest records sessions for eval's tests and benchmarks, and
// in other packages' (cmd/host's command benchmark): the offline scripted
// model through the real loop (host.Agent) and the first-party
// compaction-basic and token-meter, so a recorded session has what a live
// one has (stream records, tool calls, compactions, a prompt and a tool
// change).
package evaltest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/eval"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/plugins"
	"github.com/weirhost/weir/surface"
)

// FirstParty is a set of the first-party compaction-basic (with the
// configuration conf) and token-meter (pricing route's provider/model
// with the heuristic), loaded in rt and closed when tb ends.
func FirstParty(t testing.TB, rt *plugin.Runtime, name string, route host.Route, conf string) eval.Set {
	t.Helper()
	ctx := context.Background()
	load := func(pn string, role provider.Role, c string) *provider.Plugin {
		p, err := provider.Load(ctx, rt, provider.Spec{Name: pn, Role: role, Wasm: plugins.FirstParty[pn], Config: []byte(c)})
		require.NoError(t, err)
		t.Cleanup(func() { p.Close(ctx) })
		return p
	}
	cb := load("compaction-basic", provider.RoleCompaction, conf)
	tm := load("token-meter", provider.RoleTokenMeter, fmt.Sprintf(`{"routes":{%q:"heuristic"}}`, route.Provider+"/"+route.Model))
	return eval.Set{Name: name, Providers: func(s *host.Session) ([]host.CompactionProvider, host.Meter, error) {
		c, err := cb.Compaction()
		if err != nil {
			return nil, nil, err
		}
		m, err := tm.Meter(s)
		if err != nil {
			return nil, nil, err
		}
		return []host.CompactionProvider{c}, m, nil
	}}
}

// summarizer answers every summarize call with one short text.
type summarizer struct{ calls int }

func (f *summarizer) Summarize(_ context.Context, req host.SummaryRequest) (*host.SummaryResult, error) {
	f.calls++
	return &host.SummaryResult{Content: []surface.Block{surface.Text(fmt.Sprintf("Summary %d: the user asked for lookups; they were answered.", f.calls))},
		Usage: &surface.Usage{Input: 100, Output: 12}, FinishReason: "stop", Provider: req.Provider, Model: req.Model}, nil
}

// Route is the route of the recorded sessions.
var Route = host.Route{Provider: "offline", Model: "gen", ContextWindow: 8192, MaxTokens: 1024}

// Session records a session of turns turns of the offline scripted
// model through the real loop and the first-party compaction-basic and
// token-meter, on Route: every third turn calls a tool whose result is
// long, the prompt changes at the middle turn, the tools change at two
// thirds, a manual compaction follows the turn after the prompt change,
// and pressure compactions fire as the surface nears the window. A
// session of a turn count is recorded once per process and shared: read
// its events, never change them.
func Session(tb testing.TB, rt *plugin.Runtime, turns int) (string, []surface.Event) {
	tb.Helper()
	genMu.Lock()
	defer genMu.Unlock()
	if g, ok := generated[turns]; ok {
		return g.id, g.events
	}
	id, events := SessionWith(tb, rt, turns, func(*host.Session) host.SystemPromptProvider { return &host.SectionPrompt{} }, nil)
	generated[turns] = genSession{id, events}
	return id, events
}

// generated memoizes Session by turn count: the sessions are data, the
// same whichever test asks first.
var (
	genMu     sync.Mutex
	generated = map[int]genSession{}
)

type genSession struct {
	id     string
	events []surface.Event
}

// PromptFunc makes a session's prompt provider.
type PromptFunc func(s *host.Session) host.SystemPromptProvider

// SessionWith is Session with a prompt provider and host data, not
// memoized.
func SessionWith(tb testing.TB, rt *plugin.Runtime, turns int, prompt PromptFunc, data map[string]string) (string, []surface.Event) {
	tb.Helper()
	ctx := context.Background()
	var replies []llm.ScriptReply
	for i := 1; i <= turns; i++ {
		if i%3 == 0 {
			args, _ := json.Marshal(map[string]any{"topic": fmt.Sprintf("topic-%d", i)})
			replies = append(replies, llm.ScriptReply{ToolCalls: []llm.ScriptCall{{Name: "lookup", Arguments: args}}})
		}
		replies = append(replies, llm.ScriptReply{Text: fmt.Sprintf("Answer %d: the reply to question %d, with a few words of detail about topic-%d so that the log grows.", i, i, i)})
	}
	set := FirstParty(tb, rt, "gen", Route, `{"headroomTokens": 1024}`)
	s := host.NewSession("session-gen", surface.New(surface.WithClock(func() int64 { return 1767268800000 })), nil, host.WithIDs(host.CounterIDs("gen")))
	compactors, meter, err := set.Providers(s)
	require.NoError(tb, err)
	lookup := func(ctx context.Context, args string) (string, error) {
		return "Result for " + args + ": " + strings.Repeat("lorem ipsum dolor sit amet ", 150), nil
	}
	tool := &host.FuncTool{ToolName: "lookup", Description: "Look a topic up.", Parameters: jsontext.Value(`{"type":"object","properties":{"topic":{"type":"string"}}}`), Fn: lookup}
	sections := []host.Section{{Key: "base", Text: "You are a test assistant."}}
	a, err := host.NewAgent(s, host.Config{Route: Route, Model: llm.NewScripted(&llm.Script{Replies: replies}),
		Prompt: prompt(s), Data: data, Sections: sections, Tools: []host.Tool{tool},
		Compactors: compactors, Meter: meter, Summarizer: &summarizer{}})
	require.NoError(tb, err)
	for i := 1; i <= turns; i++ {
		switch i {
		case turns / 2:
			a.SetSections(append(sections, host.Section{Key: "style", Text: "Answer briefly."}))
		case turns/2 + 2:
			_, err := a.CompactNow(ctx)
			require.NoError(tb, err)
		case turns * 2 / 3:
			tool2 := *tool
			tool2.Description = "Look a topic up in the index."
			require.NoError(tb, a.SetTools(&tool2))
		}
		res, err := a.Run(ctx, a.UserMessage(fmt.Sprintf("Question %d: tell me about topic-%d, please.", i, i)))
		require.NoError(tb, err)
		require.Equal(tb, surface.EndCompleted, res.Reason.Kind, "turn %d: %+v", i, res.Reason)
	}
	return s.ID(), s.Log().Events()
}
