package provider_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/plugins"
	"github.com/weirhost/weir/plugins/token-meter/meter"
	tmnative "github.com/weirhost/weir/plugins/token-meter/native"
	"github.com/weirhost/weir/surface"
)

// TestWarmMeterMatchesColdAndNative folds the same session into three
// meters: the token-meter plugin keeping its state warm between calls
// (state keys), the same plugin on instances retired after every call (so
// every keyed request misses and the adapter replays from the durable
// blob), and the native meter. Step after step the three measurements, the
// totals and finally the durable blobs agree.
func TestWarmMeterMatchesColdAndNative(t *testing.T) {
	wasm := plugins.FirstParty[plugins.TokenMeter]
	require.NotNil(t, wasm)
	modules["token-meter-fp"] = wasm
	// The first-party module serves the plugin its name selects.
	warmPlugin := load(t, "token-meter-fp", plugins.TokenMeter, provider.RoleTokenMeter, "", provider.Limits{})
	coldPlugin := load(t, "token-meter-fp", plugins.TokenMeter, provider.RoleTokenMeter, "", provider.Limits{CallsPerInstance: 1, Call: time.Minute})
	require.True(t, warmPlugin.Description().WarmState)

	g := restoreGen(t, history(t, 100, 1_000))
	warm, err := warmPlugin.Meter(g.s)
	require.NoError(t, err)
	cold, err := coldPlugin.Meter(g.s)
	require.NoError(t, err)
	nat, err := tmnative.New(meter.Config{})
	require.NoError(t, err)
	ctx := context.Background()
	for step := range 6 {
		evs := g.s.Log().Events()
		for _, m := range []host.Meter{warm, cold, nat} {
			require.NoError(t, m.Observe(evs))
		}
		want, err := nat.Measure(ctx, nil)
		require.NoError(t, err)
		total, err := warm.MeasureTotal(ctx)
		require.NoError(t, err)
		require.Equal(t, want.TotalTokens, total, "step %d: warm total", step)
		total, err = cold.MeasureTotal(ctx)
		require.NoError(t, err)
		require.Equal(t, want.TotalTokens, total, "step %d: cold total", step)
		for name, m := range map[string]*provider.Meter{"warm": warm, "cold": cold} {
			got, err := m.Measure(ctx, nil)
			require.NoError(t, err)
			require.Equal(t, want, got, "step %d: %s measurement", step, name)
		}
		g.turn(2)
		nodes := g.s.Log().Nodes()
		g.compact(nodes[1:3])
	}
	require.Greater(t, coldPlugin.Stats().Started, uint64(10), "the cold meter ran on new instances")
	require.Less(t, warmPlugin.Stats().Started, uint64(3), "the warm meter kept its instance")
	_, err = warm.MeasureTotal(ctx)
	require.NoError(t, err)
	_, err = cold.MeasureTotal(ctx)
	require.NoError(t, err)
	require.Equal(t, g.s.Log().NextSeq(), warm.Folded())
	require.Equal(t, cold.State(), warm.State(), "the durable blobs agree")
}

// TestPromptRendersOnChange: the system-prompt plugin declares
// render_on_change, so the adapter calls it only when the request changed
// and answers the same prompt otherwise.
func TestPromptRendersOnChange(t *testing.T) {
	lp := loadFirstParty(t, plugins.SystemPrompt, provider.RoleSystemPrompt, "")
	require.True(t, lp.Description().RenderOnChange)
	sp, err := lp.SystemPrompt(nil)
	require.NoError(t, err)
	ctx := context.Background()
	asm := &host.Assembly{Sections: []host.Section{{Key: "a", Text: "one"}}, Data: map[string]string{"date": "d"}}
	calls := func() uint64 { return lp.Stats().Calls }
	first, err := sp.Render(ctx, asm)
	require.NoError(t, err)
	require.Equal(t, "one", first)
	n := calls()
	again, err := sp.Render(ctx, &host.Assembly{Sections: []host.Section{{Key: "a", Text: "one"}}, Data: map[string]string{"date": "d"}})
	require.NoError(t, err)
	require.Equal(t, first, again)
	require.Equal(t, n, calls(), "the same request is not sent again")
	asm.Data["date"] = "e"
	_, err = sp.Render(ctx, asm)
	require.NoError(t, err)
	require.Equal(t, n+1, calls(), "a changed request is rendered")
	asm.Sections[0].Text = "two"
	changed, err := sp.Render(ctx, asm)
	require.NoError(t, err)
	require.Equal(t, "two", changed)
	require.Equal(t, n+2, calls())
}

// TestCompactionIdleSkipsPrestep: compaction-basic answers an idle
// pre-step with idle_below_tokens, and the adapter skips the next
// pre-steps while the measured total stays below it and the route,
// limits, header and state are unchanged; a changed route calls it again.
func TestCompactionIdleSkipsPrestep(t *testing.T) {
	sb := newStepBench(t, history(t, 100, 1_000), firstPartyProviders)
	calls := func() uint64 { return firstPartySet.comp.Stats().Calls }
	sb.g.open()
	n := calls()
	sb.prestep(t)
	require.Equal(t, n+1, calls(), "the first pre-step asks the plugin")
	sb.rest()
	for range 3 {
		sb.g.open()
		sb.prestep(t)
		sb.rest()
	}
	require.Equal(t, n+1, calls(), "idle pre-steps below the threshold are skipped")

	sb.g.open()
	ps, err := sb.p.comp.Compact(context.Background(), sb.view, host.CompactionRequest{Reason: host.CompactPressure,
		Turn: sb.g.turnNo, Route: host.Route{Provider: "test", Model: "m1", ContextWindow: 50_000_000}})
	require.NoError(t, err)
	require.Empty(t, ps)
	require.Equal(t, n+2, calls(), "other limits: the plugin decides again")

	_, err = sb.p.comp.Compact(context.Background(), sb.view, host.CompactionRequest{Reason: host.CompactPressure,
		Turn: sb.g.turnNo, Route: host.Route{Provider: "test", Model: "m1", ContextWindow: 50_000_000}})
	require.NoError(t, err)
	require.Equal(t, n+2, calls(), "the same limits again: skipped")
	require.Equal(t, surface.TypeTurnStart, sb.g.s.Log().Events()[sb.g.s.Log().NextSeq()-1].Type, "nothing was proposed")
}
