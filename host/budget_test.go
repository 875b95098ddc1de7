package host

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// greedyCompactor summarizes n times, whatever the host answers, and then
// proposes nothing.
type greedyCompactor struct{ n int }

func (g *greedyCompactor) ID() string { return "greedy" }
func (g *greedyCompactor) Compact(ctx context.Context, v *View, req CompactionRequest) ([]surface.Proposal, error) {
	var msgs []*surface.Message
	for _, n := range v.Nodes() {
		m, _ := v.Message(n.Seq)
		msgs = append(msgs, m)
	}
	for i := range g.n {
		ask := append(msgs[:len(msgs):len(msgs)], &surface.Message{ID: "ask", Role: surface.RoleUser,
			Source: surface.Source{Kind: "plugin", Plugin: "greedy"}, Content: []surface.Block{surface.Text(fmt.Sprint("round ", i))}})
		_, _ = v.Summarize(ctx, SummaryRequest{Provider: "test", Model: "m1", Messages: ask, MaxTokens: 10})
	}
	return nil, nil
}

// usageSummarizer counts calls; usage nil when tokens is 0.
type usageSummarizer struct {
	calls  int
	tokens int64
}

func (s *usageSummarizer) Summarize(_ context.Context, req SummaryRequest) (*SummaryResult, error) {
	s.calls++
	r := &SummaryResult{Content: []surface.Block{surface.Text("ok")}, FinishReason: "stop"}
	if s.tokens > 0 {
		r.Usage = &surface.Usage{Input: s.tokens - 1, Output: 1}
	}
	return r, nil
}

// TestCompactionBudgetBindsEveryProvider: a provider that ignores the
// refusals still fails, in manual compaction too, and the host records the
// calls it made.
func TestCompactionBudgetBindsEveryProvider(t *testing.T) {
	cases := []struct {
		name    string
		budget  CompactionBudget
		tokens  int64
		calls   int
		refused int
		key     string
	}{
		{"default call cap", CompactionBudget{}, 0, DefaultMaxSummarizeCalls, 20 - DefaultMaxSummarizeCalls, KeyMaxSummarizeCalls},
		{"configured call cap", CompactionBudget{MaxCalls: 2}, 0, 2, 18, KeyMaxSummarizeCalls},
		{"token cap", CompactionBudget{MaxTokens: 1000}, 400, 3, 17, KeyMaxSummarizeTokens},
		{"no bounds", CompactionBudget{MaxCalls: -1, MaxTokens: -1}, 400, 20, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sum := &usageSummarizer{tokens: c.tokens}
			h := newHarness(t, "p", func(cfg *Config) {
				cfg.Compactors = []CompactionProvider{&greedyCompactor{n: 20}}
				cfg.Summarizer = sum
				cfg.CompactionBudget = c.budget
			})
			h.model.then(reply("one"))
			h.turn("one")
			before := sum.calls // the pre-step of turn one summarized too
			_, err := h.a.CompactNow(context.Background())
			require.Equal(t, c.calls, sum.calls-before)
			var recs []PluginCall
			for _, e := range h.events(TypePluginCall) {
				var pc PluginCall
				require.NoError(t, json.Unmarshal(e.Data, &pc))
				if pc.Reason == string(CompactManual) {
					recs = append(recs, pc)
				}
			}
			if c.key == "" {
				require.NoError(t, err)
				require.Len(t, recs, c.calls)
				return
			}
			require.ErrorIs(t, err, ErrBudget)
			var be *BudgetError
			require.True(t, errors.As(err, &be))
			require.Equal(t, c.key, be.Key)
			require.ErrorContains(t, err, `compaction provider "greedy": compaction budget exceeded: provider "greedy"`)
			require.ErrorContains(t, err, fmt.Sprintf("%d summarize calls were refused", c.refused))
			fails := h.events(surface.TypePluginFailure)
			require.NotEmpty(t, fails)
			require.Contains(t, string(fails[len(fails)-1].Data), c.key)
			require.Len(t, recs, c.calls+1)
			require.Equal(t, "refused", recs[c.calls].Outcome)
			require.Equal(t, c.refused, recs[c.calls].Refused)
			for i, r := range recs[:c.calls] {
				require.Equal(t, i+1, r.N)
				require.Equal(t, "ok", r.Outcome)
				require.Len(t, r.Request.Messages, 4, "the surface (system, user, assistant) and the ask")
				for _, m := range r.Request.Messages[:3] {
					require.NotNil(t, m.Seq, "logged messages by seq")
				}
				require.NotNil(t, r.Request.Messages[3].Message, "the ask inline")
			}
		})
	}
}

// TestCallRequestRefusesWhatItCannotRebuild names the event it was given.
func TestCallRequestRefusesWhatItCannotRebuild(t *testing.T) {
	h := newHarness(t, "p", nil)
	h.model.then(reply("one"))
	h.turn("one")
	evs := h.s.Log().Events()
	_, err := CallRequest(evs, 0, h.s.ID())
	require.ErrorContains(t, err, "seq 0 is not a plugin/call event")
	_, err = RequestAt(evs, 0, h.s.ID())
	require.ErrorContains(t, err, "or plugin/call")
	require.Empty(t, PluginCalls(evs))
}
