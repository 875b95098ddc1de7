package provider

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/surface"
)

// TestBreakerWindow checks the rule: limit failures within window steps,
// whatever happened in between.
func TestBreakerWindow(t *testing.T) {
	cases := []struct {
		name  string
		steps []int64 // the step clock of each failure
		open  []bool  // the breaker after each
	}{
		{"three in one step", []int64{4, 4, 4}, []bool{false, false, true}},
		{"every third step", []int64{2, 5, 8}, []bool{false, false, true}},
		{"spread wider than the window", []int64{0, 5, 10, 30}, []bool{false, false, false, false}},
		{"the latest three count", []int64{0, 12, 15, 19}, []bool{false, false, false, true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := newOptions(nil)
			b := newBreaker(&o, "p", host.ByCompaction)
			for i, step := range c.steps {
				err := b.failAt(step, errors.New("boom"), &o, "s")
				require.Equal(t, c.open[i], b.open, "failure %d", i)
				require.Equal(t, c.open[i], errors.Is(err, ErrDisabled), "failure %d", i)
			}
		})
	}
	o := newOptions(nil)
	b := newBreaker(&o, "p", host.ByCompaction)
	for range 5 {
		err := b.failAt(0, classify(fmt.Errorf("call: %w", plugin.ErrCancelled)), &o, "s")
		require.ErrorIs(t, err, host.ErrExcused, "the host records it as excused")
	}
	require.False(t, b.open, "excused failures do not count")
}

func failureEvent(t *testing.T, seq int64, f host.PluginFailure) surface.Event {
	data, err := surface.Data(f)
	require.NoError(t, err)
	return surface.Event{Type: surface.TypePluginFailure, Seq: seq, Data: data, Ignorable: true}
}

// TestBreakerReplaysTheLog checks what a breaker takes from a session's
// plugin/failure events on its first sync.
func TestBreakerReplaysTheLog(t *testing.T) {
	step := surface.Event{Type: surface.TypeStepStart}
	mine := host.PluginFailure{Plugin: "p", Kind: "compaction", Error: "boom"}
	cases := []struct {
		name   string
		log    []any // surface.Event templates or host.PluginFailure
		open   bool
		notice bool
	}{
		{"recorded disabling", []any{step, host.PluginFailure{Plugin: "p", Kind: "compaction", Disabled: true}}, true, false},
		{"two failures: not yet", []any{step, mine, step, mine, step}, false, false},
		{"three within the window: opened, and said once", []any{step, mine, step, mine, step, mine}, true, true},
		{"another plugin's failures", []any{mine, host.PluginFailure{Plugin: "q", Kind: "compaction", Disabled: true},
			host.PluginFailure{Plugin: "p", Kind: "prompt", Disabled: true}}, false, false},
		{"excused failures", []any{host.PluginFailure{Plugin: "p", Kind: "compaction", Excused: true}, mine, mine}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var evs []surface.Event
			for i, x := range c.log {
				switch v := x.(type) {
				case surface.Event:
					v.Seq = int64(i)
					evs = append(evs, v)
				case host.PluginFailure:
					evs = append(evs, failureEvent(t, int64(i), v))
				}
			}
			o := newOptions(nil)
			b := newBreaker(&o, "p", host.ByCompaction)
			b.sync(evs, &o, "s")
			require.Equal(t, c.open, b.open)
			notice := b.takeNotice()
			require.Equal(t, c.notice, notice != nil)
			if notice != nil {
				require.ErrorIs(t, notice, ErrDisabled)
				require.ErrorIs(t, notice, host.ErrPluginDisabled)
				require.ErrorContains(t, notice, "failures recorded in the session log")
			}
			require.NoError(t, b.takeNotice(), "said once")
		})
	}
}
