package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/plugins/token-meter/meter"
	"github.com/weirhost/weir/plugins/token-meter/native"
	"github.com/weirhost/weir/surface"
)

// meterRoutes says which tokenizer prices which provider.
var meterRoutes = map[string]string{"deepseek": meter.DeepSeekV3}

// newMeter returns the token meter the command line uses; routes adds
// "provider/model" → tokenizer choices from the configuration.
func newMeter(routes map[string]string) (*native.Meter, error) {
	all := map[string]string{}
	for k, v := range meterRoutes {
		all[k] = v
	}
	for k, v := range routes {
		all[k] = v
	}
	return native.New(meter.Config{Routes: all, Fallback: meter.Heuristic, Counters: native.Counters(), Reassemble: native.Reassemble})
}

// measure prices a log's surface with the token meter; nil when it cannot.
func measure(l *surface.Log) *host.Measurement {
	m, err := newMeter(nil)
	if err != nil {
		return nil
	}
	if err := m.Observe(l.Events()); err != nil {
		return nil
	}
	out, err := m.Measure(context.Background(), nil)
	if err != nil {
		return nil
	}
	return out
}

// tokenLine prints the one-line token table shown after each step.
func tokenLine(w io.Writer, m host.Meter, window int64) {
	t, err := m.Measure(context.Background(), nil)
	if err != nil {
		fmt.Fprintf(w, "  [tokens: %s]\n", termLine(err.Error()))
		return
	}
	b := t.Breakdown
	how := t.Baseline
	if t.Tokenizer != "" {
		how = t.Tokenizer + ", " + how
	}
	how = termLine(how)
	fmt.Fprintf(w, "  [tokens · system %d · user %d · assistant %d · tools %d · tool results %d · total %d / %d (%s)]\n",
		b.System, b.User, b.Assistant, b.Tools, b.ToolResults, t.TotalTokens, window, how)
}
