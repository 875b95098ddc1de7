package eval_test

import (
	"context"
	"testing"

	"github.com/weirhost/weir/host/eval"
)

// BenchmarkReplay1000Turns replays a 1,000-turn session the offline model
// recorded (1,333 requests, tools, a prompt change, a tool change, manual
// and pressure compactions) through its own configuration and through a
// set with a lower threshold; each op is one replay of both sets.
//
//	go test ./host/eval -run '^$' -bench Replay1000 -benchtime 3x
func BenchmarkReplay1000Turns(b *testing.B) {
	rt := runtime(b)
	id, events := generate(b, rt, 1000)
	rec, err := eval.Record(id, events)
	if err != nil {
		b.Fatal(err)
	}
	base := firstPartyTB(b, rt, "baseline", rec.Route, `{"headroomTokens": 1024}`)
	base.Baseline = true
	low := firstPartyTB(b, rt, "low", rec.Route, `{"headroomTokens": 1024, "thresholdRatio": 0.4}`)
	b.ResetTimer()
	for range b.N {
		for _, set := range []eval.Set{base, low} {
			res, err := eval.Replay(context.Background(), rec, set, eval.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if set.Baseline && res.Totals.Reproduced != len(rec.Requests) {
				b.Fatalf("baseline reproduced %d of %d requests: %v", res.Totals.Reproduced, len(rec.Requests), res.Notes)
			}
		}
	}
	b.ReportMetric(float64(len(rec.Requests)), "requests/replay")
}
