package host

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
)

// failingMeter fails to fold user messages and to measure.
type failingMeter struct{}

func (failingMeter) ID() string { return "broken-meter" }
func (failingMeter) Observe(evs []surface.Event) error {
	for _, e := range evs {
		if e.Type == surface.TypeUserMessage {
			return errors.New("cannot fold a user message")
		}
	}
	return nil
}
func (failingMeter) Measure(context.Context, *surface.Header) (*Measurement, error) {
	return nil, errors.New("meter/measurement: total is 7, the breakdown sums to 1870")
}

// TestMeterFailuresAreLogged: a meter's failures, to fold an event and to
// measure for a compaction, are plugin/failure events of kind meter, as
// every other provider's: inside the step, after the compaction's own
// events, and the turn completes.
func TestMeterFailuresAreLogged(t *testing.T) {
	h := newHarness(t, "be brief", func(c *Config) {
		c.Meter = failingMeter{}
		c.Compactors = []CompactionProvider{&probeCompactor{}}
		c.Summarizer = stubSummarizer{}
	})
	h.model.then(reply("done"))
	res := h.turn("hi")
	require.Equal(t, surface.EndCompleted, res.Reason.Kind)

	var failures []PluginFailure
	var stepEnd, lastFailure int64 = -1, -1
	for _, e := range h.s.Log().Events() {
		switch e.Type {
		case surface.TypePluginFailure:
			var f PluginFailure
			require.NoError(t, json.Unmarshal(e.Data, &f))
			if f.Kind != string(ByMeter) {
				continue // the probe compactor fails with the measurement's error
			}
			failures = append(failures, f)
			lastFailure = e.Seq
		case surface.TypeStepEnd:
			stepEnd = e.Seq
		}
	}
	var errs []string
	for _, f := range failures {
		require.Equal(t, "broken-meter", f.Plugin)
		require.Equal(t, string(ByMeter), f.Kind)
		require.Equal(t, int64(1), f.Turn)
		errs = append(errs, f.Error)
	}
	require.Contains(t, errs, "meter/measurement: total is 7, the breakdown sums to 1870", "the compaction's measurement")
	require.Contains(t, errs, "cannot fold a user message", "folding the turn's user message")
	require.Less(t, lastFailure, stepEnd, "recorded inside the step")
}
