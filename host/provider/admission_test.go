package provider_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/surface"
)

// toolLoop is a loop whose model calls the echo tool once (with long
// arguments) and then answers, every turn.
func toolLoop(t *testing.T, comp host.CompactionProvider) *loop {
	t.Helper()
	l := newLoop(t, func(_ *host.Session, cfg *host.Config) {
		cfg.Compactors = []host.CompactionProvider{comp}
		cfg.Tools = []host.Tool{&host.FuncTool{ToolName: "echo", Description: "echoes its input",
			Fn: func(_ context.Context, args string) (string, error) { return "echoed " + args[:20], nil }}}
	})
	call := 0
	script := func() {
		call++
		id := "call-" + string(rune('a'+call))
		args := `{"text":"` + strings.Repeat("long argument ", 80) + `"}`
		l.model.replies = append(l.model.replies,
			func(*llm.Request) (*llm.Result, error) {
				return &llm.Result{Content: []surface.Block{surface.ToolCall(id, "echo", args)}, FinishReason: llm.FinishToolCalls,
					Usage: &surface.Usage{Input: 100, Output: 5}}, nil
			},
			func(*llm.Request) (*llm.Result, error) { return text("done"), nil })
	}
	l.script = script
	return l
}

// TestHostileProposalsBreakingTheTrustBoundary runs a hostile compaction
// plugin per class of lie. Each proposal is refused whole with its rule and
// the plugin's name, recorded as plugin/failure; nothing of it reaches the
// log, node 0 is intact, the log replays, the derived messages keep the
// pairing rule and the session goes on.
func TestHostileProposalsBreakingTheTrustBoundary(t *testing.T) {
	cases := []struct {
		attack string
		rule   surface.Rule
		reason string
	}{
		{"orphan", surface.RuleToolResultOrphaned, "answers call"},
		{"impersonate", host.RuleProvenance, `claims source {kind: "user", plugin: ""}`},
		{"flood", host.RuleDeclaredBudget, "9 declared events of 540099 bytes in one call, more than 8 events or 262144 bytes"},
		{"dupid", host.RuleUniqueID, `message id "m-2" is already held by the surface node at seq 2`},
		{"tokens-negative", host.RuleCompactionSchema, "shadowedTokenCount is -5, not an integer from 0 to 1099511627776"},
		{"tokens-huge", host.RuleCompactionSchema, "shadowedTokenCount is 1125899906842624, not an integer from 0 to 1099511627776"},
		{"stray", host.RuleUndeclaredEvent, "liar/stray"},
		{"surfaceop", host.RuleDeclaredSurfaceOp, `the declared event type "liar/declared" is ignorable and log-only`},
	}
	for _, c := range cases {
		t.Run(c.attack, func(t *testing.T) {
			const name = "liar"
			lp := load(t, "liar", name, provider.RoleCompaction, `{"attack":"`+c.attack+`"}`, provider.Limits{})
			comp, err := lp.Compaction()
			require.NoError(t, err)
			l := toolLoop(t, comp)
			l.script()
			res := l.turn("please echo something for me")
			require.Equal(t, surface.EndCompleted, res.Reason.Kind, "the session goes on")

			fails := l.failures()
			require.NotEmpty(t, fails, "the proposal was refused")
			f := fails[0]
			require.Equal(t, name, f.Plugin)
			require.Equal(t, string(host.ByCompaction), f.Kind)
			require.Contains(t, f.Error, `compaction provider "`+name+`": proposal rejected`)
			require.Contains(t, f.Error, string(c.rule)+": ")
			require.Contains(t, f.Error, c.reason)

			// Nothing of a refused batch is in the log.
			require.Empty(t, l.events(surface.TypeCompactionStart))
			require.Empty(t, l.events(surface.TypeCompactionSummary))
			require.Empty(t, l.events(surface.TypeCompactionEnd))
			require.Empty(t, l.events("liar/stray"))
			require.Empty(t, l.events("liar/declared"))
			require.NotContains(t, l.logText(), "forged")
			// Node 0 is the system prompt the host committed.
			n0 := l.s.Log().Surface()[0]
			require.Equal(t, surface.TypeSystemMessage, n0.Type)
			require.Equal(t, l.events(surface.TypeSystemMessage)[0].Seq, n0.Seq)
			// The log replays to the same surface and the wire is valid.
			replayed, err := surface.Restore(l.s.Log().Events())
			require.NoError(t, err)
			require.Equal(t, l.s.Log().Nodes(), replayed.Nodes())
			require.Nil(t, l.s.Log().CheckWire())

			// The session goes on: another turn completes and the requests
			// rebuild byte for byte from the log.
			l.script()
			require.Equal(t, surface.EndCompleted, l.turn("and again").Reason.Kind)
			require.Nil(t, l.s.Log().CheckWire())
			l.checkReconstruction()
		})
	}
}

func TestDeclaredIgnorableEventIsAdmitted(t *testing.T) {
	lp := load(t, "liar", "liar-declared", provider.RoleCompaction, `{"attack":"declared"}`, provider.Limits{})
	require.Equal(t, []string{"liar/declared"}, lp.Description().Events)
	comp, err := lp.Compaction()
	require.NoError(t, err)
	l := toolLoop(t, comp)
	l.script()
	require.Equal(t, surface.EndCompleted, l.turn("please echo something for me").Reason.Kind)
	require.Empty(t, l.failures())
	evs := l.events("liar/declared")
	require.NotEmpty(t, evs)
	require.True(t, evs[0].Ignorable)
	require.Equal(t, surface.OpNone, evs[0].Op.Kind)
	l.checkReconstruction()
}

// TestDeclaredEventsAreBudgetedPerTurn: a plugin whose every call adds
// 240 KB of declared events has its first call of a turn admitted and
// the second, past the turn's 384 KiB, refused with events/budget.
func TestDeclaredEventsAreBudgetedPerTurn(t *testing.T) {
	lp := load(t, "liar", "liar-trickle", provider.RoleCompaction, `{"attack":"trickle"}`, provider.Limits{})
	comp, err := lp.Compaction()
	require.NoError(t, err)
	l := toolLoop(t, comp)
	l.script()
	require.Equal(t, surface.EndCompleted, l.turn("please echo something for me").Reason.Kind)
	require.Empty(t, l.failures(), "one call in the first turn, within its budget")
	require.Len(t, l.events("liar/declared"), 4)
	node0 := l.s.Log().Nodes()[0]

	l.script()
	require.Equal(t, surface.EndCompleted, l.turn("and again").Reason.Kind, "the session goes on")
	require.Len(t, l.events("liar/declared"), 8, "the second turn's first call is admitted, its second is not")
	fails := l.failures()
	require.Len(t, fails, 1)
	require.Contains(t, fails[0].Error, `compaction provider "liar-trickle": proposal rejected`)
	require.Contains(t, fails[0].Error, string(host.RuleDeclaredBudget)+": 8 declared events of 480088 bytes in this turn with this call's, more than 32 events or 393216 bytes")
	var bytes int
	for _, e := range l.events("liar/declared") {
		bytes += len(e.Data)
	}
	require.LessOrEqual(t, bytes, 2*host.MaxDeclaredBytesPerTurn, "the log holds at most a turn's budget per turn")
	require.Equal(t, node0, l.s.Log().Nodes()[0], "node 0 is intact")
	require.Nil(t, l.s.Log().CheckWire())
	l.checkReconstruction()
}

// TestBadMeasurementsAreRefused: a measurement with negative or
// overflowing counts or an unprintable tokenizer name is a failure of the
// meter plugin, named with the rule; it reads as no measurement (the
// consumer uses its own estimate), and the meter stays usable until its
// breaker opens.
func TestBadMeasurementsAreRefused(t *testing.T) {
	cases := []struct {
		attack, reason string
	}{
		{"negative", "node 0 (seq 0) is priced -5 tokens"},
		{"huge", "node 0 (seq 0) is priced 4611686018427387904 tokens"},
		{"tokenizer", `the tokenizer name "evil\x00name" has the unprintable character U+0000`},
		{"total", "totalTokens is 7, less than the 1870 tokens its parts are priced (breakdown.tools 0 plus the surface's 1870)"},
		{"ghost", "node 0 has seq 1073741824, which is no node of the surface"},
		{"rewind", "logRevision is "},
	}
	for _, c := range cases {
		t.Run(c.attack, func(t *testing.T) {
			const name = "badmeter"
			lp := load(t, "badmeter", name, provider.RoleTokenMeter, `{"attack":"`+c.attack+`"}`, provider.Limits{})
			var m *provider.Meter
			l := newLoop(t, func(s *host.Session, cfg *host.Config) {
				var err error
				m, err = lp.Meter(s)
				require.NoError(t, err)
				cfg.Meter = m
			})
			l.turn("one")
			before := l.s.Log().Events()
			_, err := m.Measure(context.Background(), nil)
			if c.attack == "rewind" && err == nil {
				// The step measured nothing yet: this was the honest
				// first answer; the next goes back.
				_, err = m.Measure(context.Background(), l.s.Log().Header())
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), `plugin "`+name+`": call meter.measure: `+string(host.RuleMeasurement)+": ")
			require.Contains(t, err.Error(), c.reason)
			var me *host.MeasurementError
			require.ErrorAs(t, err, &me)
			require.True(t, errors.Is(err, host.ErrBadMeasurement))
			require.True(t, errors.Is(err, host.ErrNotGranted), "a bad measurement reads as none")
			require.Equal(t, before, l.s.Log().Events(), "the log is unchanged")
			require.Equal(t, surface.EndCompleted, l.turn("two").Reason.Kind, "the session goes on")
			l.checkReconstruction()
		})
	}
	// An honest measurement passes.
	lp := load(t, "badmeter", "badmeter-honest", provider.RoleTokenMeter, `{"attack":"none"}`, provider.Limits{})
	m, err := lp.Meter(nil)
	require.NoError(t, err)
	_, err = m.Measure(context.Background(), nil)
	require.NoError(t, err)
}
