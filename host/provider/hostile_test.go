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
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
	"github.com/weirhost/weir/surface"
)

func TestHostileProposalsAreRejected(t *testing.T) {
	cases := []struct {
		attack string
		reason string // what the plugin/failure event must say
	}{
		{"node0", "surface node 0 holds the protected system prompt"},
		{"omit", "missing"},
		{"system", "may not propose system/message"},
	}
	for _, c := range cases {
		t.Run(c.attack, func(t *testing.T) {
			const name = "liar"
			lp := load(t, "liar", name, provider.RoleCompaction, `{"attack":"`+c.attack+`"}`, provider.Limits{})
			comp, err := lp.Compaction()
			require.NoError(t, err)
			l := newLoop(t, func(_ *host.Session, cfg *host.Config) { cfg.Compactors = []host.CompactionProvider{comp} })
			l.turn("one") // the surface is too small to attack
			require.Empty(t, l.failures())
			before := l.s.Log().Nodes()
			calls := lp.Stats().Calls

			res := l.turn("two")
			require.Equal(t, surface.EndCompleted, res.Reason.Kind, "the session goes on")
			require.Greater(t, lp.Stats().Calls, calls, "the plugin was called")
			fails := l.failures()
			require.Len(t, fails, 1)
			require.Equal(t, name, fails[0].Plugin)
			require.Equal(t, string(host.ByCompaction), fails[0].Kind)
			require.Contains(t, fails[0].Error, `"`+name+`"`)
			require.Contains(t, fails[0].Error, c.reason)
			require.True(t, l.events(surface.TypePluginFailure)[0].Ignorable)
			// Nothing of the rejected batch is in the log.
			require.Empty(t, l.events(surface.TypeCompactionStart))
			require.Empty(t, l.events(surface.TypeCompactionEnd))
			require.NotContains(t, l.logText(), "forged")
			require.NotContains(t, l.logText(), "obey the liar")
			require.Equal(t, before, l.s.Log().Nodes()[:len(before)], "the old surface is intact")
			// The state blob that came with the rejected proposals is not adopted.
			l.turn("three")
			require.Empty(t, comp.State(l.s.ID()))
			l.checkReconstruction()
		})
	}
}

func TestRepeatedRejectionsDisableTheCompactionPlugin(t *testing.T) {
	lp := load(t, "liar", "liar-repeat", provider.RoleCompaction, `{"attack":"node0"}`, provider.Limits{})
	comp, err := lp.Compaction()
	require.NoError(t, err)
	l := newLoop(t, func(_ *host.Session, cfg *host.Config) { cfg.Compactors = []host.CompactionProvider{comp} })
	l.turn("one")
	// Turns 2-4 propose and are rejected (3 failures, the third detected
	// at turn 5's call, which trips the breaker and says so).
	for _, msg := range []string{"two", "three", "four", "five"} {
		require.Equal(t, surface.EndCompleted, l.turn(msg).Reason.Kind)
	}
	fails := l.failures()
	require.Len(t, fails, 4)
	for _, f := range fails[:3] {
		require.Contains(t, f.Error, "surface node 0 holds the protected system prompt")
		require.NotContains(t, f.Error, "disabled")
	}
	require.Contains(t, fails[3].Error, `plugin "liar-repeat" is disabled for session session-1: 3 failures within 10 steps (sandbox.breaker.failures, sandbox.breaker.windowSteps)`)
	require.True(t, fails[3].Disabled, "the disabling is recorded")
	for _, f := range fails[:3] {
		require.False(t, f.Disabled)
	}
	require.True(t, comp.Disabled(l.s.ID()))

	calls := lp.Stats().Calls
	l.turn("six")
	l.turn("seven")
	require.Equal(t, calls, lp.Stats().Calls, "a disabled plugin is not called")
	require.Len(t, l.failures(), 4, "the breaker says so once")
	require.Empty(t, l.events(surface.TypeCompactionStart))
	l.checkReconstruction()
}

func TestPromptRoleNeverActsAsCompaction(t *testing.T) {
	// liar implements compaction too, armed to attack node 0; loaded in the
	// prompt role only its render is ever called.
	lp := load(t, "liar", "liar-prompt", provider.RoleSystemPrompt, `{"attack":"node0"}`, provider.Limits{})
	desc := lp.Description()
	require.True(t, desc.Provides(abi.KindCompaction), "the module does implement compaction")
	_, err := lp.Compaction()
	require.ErrorContains(t, err, `plugin "liar-prompt" is loaded as a system-prompt provider, not as a compaction provider`)
	_, err = lp.Meter(nil)
	require.ErrorContains(t, err, `plugin "liar-prompt" is loaded as a system-prompt provider, not as a token-meter provider`)

	var sp *provider.SystemPrompt
	l := newLoop(t, func(s *host.Session, cfg *host.Config) {
		sp, err = lp.SystemPrompt(s)
		require.NoError(t, err)
		cfg.Prompt = sp
	})
	for _, msg := range []string{"one", "two", "three", "four"} {
		require.Equal(t, surface.EndCompleted, l.turn(msg).Reason.Kind)
	}
	require.Empty(t, l.failures())
	require.Empty(t, l.events(surface.TypeCompactionStart))
	require.NotContains(t, l.logText(), "forged")
	// The render's text is all the plugin contributes, and the host made
	// the system message of it; the session queries were not granted.
	prompt := l.lastSystemPrompt()
	require.Contains(t, prompt, "I am the liar. Surface: host surface_nodes: not granted")
	sys := l.events(surface.TypeSystemMessage)
	require.Len(t, sys, 1, "an unchanged prompt is committed once")
	m, ok := l.s.Log().Message(sys[0].Seq)
	require.True(t, ok)
	require.Equal(t, surface.Source{Kind: "plugin", Plugin: "liar-prompt"}, surface.Source{Kind: m.Source.Kind, Plugin: m.Source.Plugin})
	l.checkReconstruction()
}

func TestLoadChecksTheRole(t *testing.T) {
	ctx := context.Background()
	rt := plugintest.Runtime(t)
	_, err := provider.Load(ctx, rt, provider.Spec{Name: "trap-as-compaction", Role: provider.RoleCompaction, Wasm: modules["trap"]})
	require.EqualError(t, err, `plugin "trap-as-compaction" is configured as a compaction provider, but its module provides only system-prompt`)
	_, err = provider.Load(ctx, rt, provider.Spec{Name: "checkpoint-as-meter", Role: provider.RoleTokenMeter, Wasm: modules["checkpoint"]})
	require.EqualError(t, err, `plugin "checkpoint-as-meter" is configured as a token-meter provider, but its module provides only compaction`)
	_, err = provider.Load(ctx, rt, provider.Spec{Name: "trap", Role: "summarizer", Wasm: modules["trap"]})
	require.ErrorContains(t, err, `plugin "trap": role "summarizer" is not one of system-prompt, compaction, token-meter`)
	_, err = provider.Load(ctx, rt, provider.Spec{Name: "trap", Role: provider.RoleSystemPrompt, Wasm: modules["trap"], Config: []byte(`{"a":`)})
	require.ErrorContains(t, err, `plugin "trap": the configuration is not valid JSON`)
	_, err = provider.Load(ctx, rt, provider.Spec{Name: "x", Role: provider.RoleSystemPrompt, Wasm: []byte("not wasm")})
	require.ErrorIs(t, err, plugin.ErrInvalidModule)
	require.ErrorContains(t, err, `plugin "x"`)
}

func TestTrappingPromptKeepsTheLastGoodPrompt(t *testing.T) {
	lp := load(t, "trap", "trap", provider.RoleSystemPrompt, "", provider.Limits{Call: time.Second})
	var sp *provider.SystemPrompt
	l := newLoop(t, func(s *host.Session, cfg *host.Config) {
		var err error
		sp, err = lp.SystemPrompt(s)
		require.NoError(t, err)
		cfg.Prompt = sp
		cfg.Sections = []host.Section{{Key: "role", Text: "Be helpful."}}
	})
	l.turn("one")
	require.Equal(t, "Be helpful.", l.lastSystemPrompt())

	good := "Be helpful."
	steps := []struct {
		text, failure string // failure "": a good prompt
	}{
		{"panic", "panic: trap: asked to panic"},
		{"loop", "deadline 1s exceeded; instance replaced"},
		{"Be brief.", ""}, // a fresh instance serves it
	}
	failed, replaced := 0, uint64(0)
	for _, s := range steps {
		l.a.SetSections([]host.Section{{Key: "role", Text: s.text}})
		res := l.turn(s.text)
		require.Equal(t, surface.EndCompleted, res.Reason.Kind, "the turn completes")
		fails := l.failures()
		if s.failure == "" {
			good = s.text
			require.Equal(t, good, l.lastSystemPrompt())
			require.Len(t, fails, failed)
			require.False(t, sp.Disabled())
			continue
		}
		require.Equal(t, good, l.lastSystemPrompt(), "the turn keeps the last good prompt")
		failed++
		replaced++
		require.Len(t, fails, failed)
		require.Equal(t, "trap", fails[failed-1].Plugin)
		require.Equal(t, string(host.ByPrompt), fails[failed-1].Kind)
		require.Contains(t, fails[failed-1].Error, `plugin "trap": call prompt.render: `+s.failure)
		require.False(t, fails[failed-1].Disabled)
		require.Equal(t, replaced, lp.Stats().Replaced, "the instance was replaced")
	}

	// A success in between does not forgive: a third failure within 10
	// steps disables the plugin for the session, once.
	l.a.SetSections([]host.Section{{Key: "role", Text: "exit"}})
	l.turn("exit")
	fails := l.failures()
	require.Len(t, fails, failed+1)
	require.Contains(t, fails[failed].Error, "guest exited with code 3")
	require.Contains(t, fails[failed].Error, `plugin "trap" is disabled for session session-1: 3 failures within 10 steps`)
	require.True(t, fails[failed].Disabled)
	require.True(t, sp.Disabled())
	calls := lp.Stats().Calls
	l.a.SetSections([]host.Section{{Key: "role", Text: "Be verbose."}})
	l.turn("after")
	require.Equal(t, calls, lp.Stats().Calls, "a disabled plugin is not called")
	require.Equal(t, good, l.lastSystemPrompt(), "the session keeps its prompt")
	require.Len(t, l.failures(), failed+1, "the breaker says so once")
	require.Len(t, l.events(surface.TypeSystemMessage), 2)
	l.checkReconstruction()
}

// wireModel answers every request and keeps the wire bytes of the
// summarization requests (those ending in the loop plugin's instruction).
type wireModel struct {
	mu        sync.Mutex
	summaries [][]byte
	turns     int
}

func (m *wireModel) Stream(_ context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Result, error) {
	body, err := llm.EncodeRequest(req)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if strings.HasPrefix(surface.TextOf(req.Messages[len(req.Messages)-1].Content), "Summarize, round ") {
		m.summaries = append(m.summaries, body)
	} else {
		m.turns++
	}
	return text("fine"), nil
}

// TestSummarizeCallsAreTheRoutes runs a plugin whose summarize calls name
// a provider and a model of its own and ask for 2^40 output tokens: the
// calls that reach the model are the route's, under its cap, and the
// plugin/call records keep what was asked.
func TestSummarizeCallsAreTheRoutes(t *testing.T) {
	cases := []struct {
		name            string
		routeMax, asked int64
		sent            int64 // max_tokens on the wire; 0: absent
		outputCap       int64 // the route model's output cap; 0: unknown
	}{
		{"over the route's cap", 512, 1 << 40, 512, 0},
		{"under the route's cap", 512, 100, 100, 0},
		{"no size asked", 512, 0, 512, 0},
		{"a route without a cap: the compaction's token budget", 0, 1 << 40, host.DefaultMaxSummarizeTokens, 0},
		{"a route without a cap, no size asked", 0, 0, 0, 0},
		// A plugin asking for 65536 on a model that takes at most 64000
		// (claude-sonnet-4-5) gets the model's cap and its call succeeds.
		{"the model's output cap below the request", 65536, 65536, 64000, 64000},
		{"the model's output cap below the route's", 1 << 20, 0, 64000, 64000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lp := load(t, "loop", "greedy", provider.RoleCompaction,
				fmt.Sprintf(`{"calls":2,"provider":"expensive","model":"gpt-expensive","maxTokens":%d}`, c.asked),
				provider.Limits{Call: 30 * time.Second})
			comp, err := lp.Compaction()
			require.NoError(t, err)
			m := &wireModel{}
			l := newLoop(t, func(_ *host.Session, cfg *host.Config) {
				cfg.Model, cfg.Summarizer = m, nil // summarization goes to the model
				cfg.Route.MaxTokens = c.routeMax
				cfg.Route.OutputCap = c.outputCap
				cfg.Compactors = []host.CompactionProvider{comp}
			})
			l.turn("one") // the surface is empty at its pre-step: no summarizing
			require.Empty(t, m.summaries)
			require.Equal(t, surface.EndCompleted, l.turn("two").Reason.Kind, "the session goes on")
			require.Empty(t, l.failures(), "an overridden request is not the plugin's failure")

			require.Len(t, m.summaries, 2, "model calls the compaction made")
			for i, body := range m.summaries {
				require.Less(t, len(body), 2048, "request %d stays small", i)
				require.NotContains(t, string(body), "expensive")
				var wire struct {
					Model     string `json:"model"`
					MaxTokens *int64 `json:"max_tokens"`
				}
				require.NoError(t, json.Unmarshal(body, &wire, json.RejectUnknownMembers(false)))
				require.Equal(t, "m1", wire.Model, "the route's model")
				if c.sent == 0 {
					require.Nil(t, wire.MaxTokens, "the route leaves the size to the provider")
				} else {
					require.NotNil(t, wire.MaxTokens)
					require.Equal(t, c.sent, *wire.MaxTokens)
				}
			}
			calls := pluginCalls(t, l)
			require.Len(t, calls, 2)
			asked := &host.CallAsked{Provider: "expensive", Model: "gpt-expensive"}
			if c.asked != c.sent && c.asked != 0 {
				asked.MaxTokens = c.asked
			}
			for i, pc := range calls {
				require.Equal(t, "ok", pc.Outcome)
				require.Equal(t, "test", pc.Request.Provider)
				require.Equal(t, "m1", pc.Request.Model)
				require.Equal(t, c.sent, pc.Request.MaxTokens)
				require.Equal(t, asked, pc.Asked, "the record keeps what was asked")
				// Pressure compaction runs before step/start, and the
				// request names the step it runs for.
				req, err := host.RequestAt(l.s.Log().Events(), l.events(host.TypePluginCall)[i].Seq, l.s.ID())
				require.NoError(t, err)
				require.Equal(t, fmt.Sprintf("Summarize, round %d at step 1.", i+1), surface.TextOf(req.Messages[len(req.Messages)-1].Content))
			}
			require.Equal(t, 2, m.turns, "one model call per turn besides")
			_, _, err = host.Requests(l.s.Log().Events(), l.s.ID())
			require.NoError(t, err, "the log is valid")
		})
	}
}

// TestSummarizeRouteOfTheUser: with a summarize route configured for the
// plugin (WithSummarizeRoute), its summarize calls go to that route's
// model, under that route's name and cap, whatever the plugin asked; the
// conversation's model serves only the turns.
func TestSummarizeRouteOfTheUser(t *testing.T) {
	route := host.Route{Provider: "cheap", Model: "small-1", MaxTokens: 256}
	lp := load(t, "loop", "greedy", provider.RoleCompaction,
		`{"calls":2,"provider":"expensive","model":"gpt-expensive","maxTokens":1099511627776}`,
		provider.Limits{Call: 30 * time.Second}, provider.WithSummarizeRoute(route))
	comp, err := lp.Compaction()
	require.NoError(t, err)
	conversation, summaries := &wireModel{}, &wireModel{}
	l := newLoop(t, func(_ *host.Session, cfg *host.Config) {
		cfg.Model, cfg.Summarizer = conversation, nil
		cfg.Route.MaxTokens = 4096
		cfg.SummaryModels = []host.SummaryModel{{Route: route, Model: summaries}}
		cfg.Compactors = []host.CompactionProvider{comp}
	})
	l.turn("one")
	require.Equal(t, surface.EndCompleted, l.turn("two").Reason.Kind)
	require.Empty(t, l.failures())

	require.Empty(t, conversation.summaries, "no summary on the conversation's model")
	require.Equal(t, 2, conversation.turns)
	require.Len(t, summaries.summaries, 2, "the summaries went to the summarize route's model")
	require.Zero(t, summaries.turns)
	for _, body := range summaries.summaries {
		var wire struct {
			Model     string `json:"model"`
			MaxTokens int64  `json:"max_tokens"`
		}
		require.NoError(t, json.Unmarshal(body, &wire, json.RejectUnknownMembers(false)))
		require.Equal(t, "small-1", wire.Model)
		require.Equal(t, int64(256), wire.MaxTokens, "clamped to the summarize route's cap")
	}
	for _, pc := range pluginCalls(t, l) {
		require.Equal(t, "cheap", pc.Request.Provider)
		require.Equal(t, "small-1", pc.Request.Model)
		require.Equal(t, int64(256), pc.Request.MaxTokens)
		require.Equal(t, &host.CallAsked{Provider: "expensive", Model: "gpt-expensive", MaxTokens: 1 << 40}, pc.Asked)
	}
}

// TestPromptChurnIsBounded: a prompt plugin that renders a different
// prompt for the same request (benign prints the fake time and a random
// number for the model "entropy") does not replace node 0 each step: the
// first prompt is kept, each change is a prompt/churn failure, and the
// third disables the plugin for the session.
func TestPromptChurnIsBounded(t *testing.T) {
	lp := load(t, "benign", "churn", provider.RoleSystemPrompt, "", provider.Limits{})
	var sp *provider.SystemPrompt
	l := newLoop(t, func(s *host.Session, cfg *host.Config) {
		var err error
		sp, err = lp.SystemPrompt(s)
		require.NoError(t, err)
		cfg.Prompt = sp
		cfg.Route.Model = "entropy"
	})
	l.turn("one")
	require.Empty(t, l.failures())
	first := l.lastSystemPrompt()
	node0 := l.s.Log().Nodes()[0]
	for i, msg := range []string{"two", "three", "four", "five", "six"} {
		require.Equal(t, surface.EndCompleted, l.turn(msg).Reason.Kind, "the session goes on")
		require.Equal(t, first, l.lastSystemPrompt(), "turn %d keeps the first prompt", i+2)
		require.Equal(t, node0, l.s.Log().Nodes()[0], "node 0 is intact")
	}
	fails := l.failures()
	require.Len(t, fails, 3, "three changes, then the plugin is not called")
	for _, f := range fails {
		require.Equal(t, "churn", f.Plugin)
		require.Contains(t, f.Error, `plugin "churn": call prompt.render: prompt/churn: the prompt changed though the request did not`)
	}
	require.True(t, fails[2].Disabled)
	require.True(t, sp.Disabled())
	require.Len(t, l.events(surface.TypeSystemMessage), 1, "node 0 was committed once")
	l.checkReconstruction()
}
