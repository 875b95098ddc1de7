package cli

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/weirhost/weir/host/eval/evaltest"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/plugintest"
	"github.com/weirhost/weir/surface/jsonl"
)

// BenchmarkEvalVsReplayCommand measures the two commands as a user runs
// them, on the 620-turn session of host/eval's BenchmarkEvalVsReplay5k
// (5,112 events the offline model recorded with the first-party plugins):
// per op, "weir replay FILE" and "weir eval FILE --json" (the baseline),
// each a process of the built binary from its start to its exit, with the
// plugins in a warm compilation cache, in alternating order. The eval's
// report gives its plugins' own time: pluginMs, their calls, and loadMs,
// loading them (the modules from the cache, their instances). It reports
// the medians (replay-ms, eval-ms, plugin-ms, load-ms) and two ratios of
// the medians: x-replay-net, (eval − calls − loading) / replay, the
// plugins' own time counted whole, and x-replay-calls, (eval − calls) /
// replay, loading counted as eval's.
//
//	go test ./cmd/host -run '^$' -bench EvalVsReplayCommand -benchtime 8x
func BenchmarkEvalVsReplayCommand(b *testing.B) {
	s := newStarter(b, benchBuilds(b)[0].path, false, "")
	ctx := context.Background()
	rt, err := plugin.NewRuntime(ctx, plugin.WithCacheDir(plugintest.CacheDir()))
	if err != nil {
		b.Fatal(err)
	}
	id, events := evaltest.Session(b, rt, 620)
	rt.Close(ctx)
	file := filepath.Join(s.dir, "s.jsonl")
	f, err := jsonl.Create(file, jsonl.Header{ID: id, CreatedAt: 1767268800000}, jsonl.NoSync())
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Append(events); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	run := func(args ...string) (time.Duration, []byte) {
		cmd := exec.Command(s.bin, args...)
		cmd.Dir = s.dir
		cmd.Env = s.env(s.warmCache)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("weir %v: %v\n%s", args, err, errb.Bytes())
		}
		return time.Since(start), out.Bytes()
	}
	evalOnce := func() (wall, calls, load time.Duration) {
		wall, out := run("eval", file, "--json")
		var rep struct {
			Recorded int `json:"recordedRequests"`
			Sets     []struct {
				Totals struct {
					PluginMs   int64 `json:"pluginMs"`
					LoadMs     int64 `json:"loadMs"`
					Reproduced int   `json:"reproduced"`
				} `json:"totals"`
			} `json:"sets"`
		}
		if err := json.Unmarshal(out, &rep, json.RejectUnknownMembers(false)); err != nil || len(rep.Sets) != 1 {
			b.Fatalf("weir eval --json: %v\n%s", err, out)
		}
		t := rep.Sets[0].Totals
		if t.Reproduced != rep.Recorded {
			b.Fatalf("the baseline reproduced %d of %d requests", t.Reproduced, rep.Recorded)
		}
		return wall, time.Duration(t.PluginMs) * time.Millisecond, time.Duration(t.LoadMs) * time.Millisecond
	}
	evalOnce() // fills the compilation cache
	var replay, evals, calls, loads []time.Duration
	for i := 0; b.Loop(); i++ {
		r := func() {
			d, _ := run("replay", file)
			replay = append(replay, d)
		}
		e := func() {
			w, c, l := evalOnce()
			evals, calls, loads = append(evals, w), append(calls, c), append(loads, l)
		}
		if i%2 == 0 {
			r()
			e()
		} else {
			e()
			r()
		}
	}
	rm, em, cm, lm := median(replay), median(evals), median(calls), median(loads)
	b.ReportMetric(float64(len(events)), "events")
	b.ReportMetric(rm, "replay-ms")
	b.ReportMetric(em, "eval-ms")
	b.ReportMetric(cm, "plugin-ms")
	b.ReportMetric(lm, "load-ms")
	b.ReportMetric((em-cm-lm)/rm, "x-replay-net")
	b.ReportMetric((em-cm)/rm, "x-replay-calls")
}
