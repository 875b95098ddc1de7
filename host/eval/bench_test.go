package eval_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/eval"
	"github.com/weirhost/weir/host/eval/evaltest"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

// BenchmarkReplay1000Turns replays a 1,000-turn session the offline model
// recorded (1,333 requests, tools, a prompt change, a tool change, manual
// and pressure compactions) through its own configuration and through a
// set with a lower threshold; each op is one replay of both sets.
//
//	go test ./host/eval -run '^$' -bench Replay1000 -benchtime 3x
func BenchmarkReplay1000Turns(b *testing.B) {
	rt := runtime(b)
	id, events := evaltest.Session(b, rt, 1000)
	rec, err := eval.Record(id, events)
	if err != nil {
		b.Fatal(err)
	}
	base := evaltest.FirstParty(b, rt, "baseline", rec.Route, `{"headroomTokens": 1024}`)
	base.Baseline = true
	low := evaltest.FirstParty(b, rt, "low", rec.Route, `{"headroomTokens": 1024, "thresholdRatio": 0.4}`)
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

// BenchmarkEvalVsReplay5k measures eval against host replay on a session
// of about 5,000 events the offline model recorded. Each op runs, in
// turn: what "weir replay FILE" does (load the file, fold it, and list
// every surface node with a preview of its message, which decodes every
// surface message; printed to io.Discard), the load and fold alone (what
// the command does before printing), and what "weir eval FILE" does for
// the baseline (load, record, replay through the session's own
// configuration). The metrics are the three times, the plugins' own time
// in the replay, and the ratio the issue bounds, (eval − plugin time) /
// replay, against the command (x-replay-net) and against the load and
// fold alone (x-fold-net). The plugins are loaded before the timing, so
// their loading counts nowhere; cmd/host's BenchmarkEvalVsReplayCommand
// measures the two commands whole, loading included.
//
//	go test ./host/eval -run '^$' -bench EvalVsReplay5k -benchtime 3x
func BenchmarkEvalVsReplay5k(b *testing.B) {
	rt := runtime(b)
	id, events := evaltest.Session(b, rt, 620)
	path := filepath.Join(b.TempDir(), "s.jsonl")
	f, err := jsonl.Create(path, jsonl.Header{ID: id, CreatedAt: 1767268800000}, jsonl.NoSync())
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Append(events); err != nil {
		b.Fatal(err)
	}
	set := evaltest.FirstParty(b, rt, "baseline", evaltest.Route, `{"headroomTokens": 1024}`)
	set.Baseline = true
	var replay, fold, evalT, plugins time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		ld, err := jsonl.Load(path)
		if err != nil {
			b.Fatal(err)
		}
		listSurface(io.Discard, ld.Log)
		replay += time.Since(start)

		start = time.Now()
		ld, err = jsonl.Load(path)
		if err != nil {
			b.Fatal(err)
		}
		_ = ld.Log.Messages()
		fold += time.Since(start)

		start = time.Now()
		ld, err = jsonl.Load(path)
		if err != nil {
			b.Fatal(err)
		}
		rec, err := eval.Record(ld.Header.ID, ld.Log.Events())
		if err != nil {
			b.Fatal(err)
		}
		res, err := eval.Replay(context.Background(), rec, set, eval.Options{})
		if err != nil {
			b.Fatal(err)
		}
		evalT += time.Since(start)
		plugins += time.Duration(res.Totals.PluginMs) * time.Millisecond
		if res.Totals.Reproduced != len(rec.Requests) {
			b.Fatalf("baseline reproduced %d of %d requests: %v", res.Totals.Reproduced, len(rec.Requests), res.Notes)
		}
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	b.ReportMetric(float64(len(events)), "events")
	b.ReportMetric(ms(replay), "replay-ms/op")
	b.ReportMetric(ms(fold), "fold-ms/op")
	b.ReportMetric(ms(evalT), "eval-ms/op")
	b.ReportMetric(ms(plugins), "plugin-ms/op")
	b.ReportMetric(float64(evalT-plugins)/float64(replay), "x-replay-net")
	b.ReportMetric(float64(evalT-plugins)/float64(fold), "x-fold-net")
}

// BenchmarkRecord5k reads the session of BenchmarkEvalVsReplay5k (about
// 5,000 events) into a Recording: the part of eval that runs no plugin.
//
//	go test ./host/eval -run '^$' -bench Record5k
func BenchmarkRecord5k(b *testing.B) {
	rt := runtime(b)
	id, events := evaltest.Session(b, rt, 620)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := eval.Record(id, events); err != nil {
			b.Fatal(err)
		}
	}
}

// listSurface writes what "weir replay FILE" prints of a log's surface
// (cmd/host/replay.go): a line per node with a one-line preview of its
// message, cut to 60 characters, then the count of wire messages. It reads
// what the command reads, every node's message decoded.
func listSurface(w io.Writer, l *surface.Log) {
	fmt.Fprintf(w, "session: %d events, %d surface nodes, replaceGeneration %d, contentGeneration %d\n",
		l.Len(), l.NodeCount(), l.ReplaceGeneration(), l.ContentGeneration())
	for i, n := range l.Surface() {
		m, _ := l.Message(n.Seq)
		preview := "(projects to nothing)"
		if !n.Empty && m != nil {
			var parts []string
			for _, bl := range m.Content {
				switch bl.Type {
				case surface.BlockText:
					parts = append(parts, bl.Text)
				case surface.BlockReasoning:
					parts = append(parts, "(thinking) "+bl.Text)
				case surface.BlockToolCall:
					parts = append(parts, fmt.Sprintf("→ %s(%s)", bl.Name, bl.Arguments))
				case surface.BlockToolResult:
					parts = append(parts, "← "+surface.TextOf(bl.Content))
				default:
					parts = append(parts, "["+bl.Type+"]")
				}
			}
			preview = strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
			if r := []rune(preview); len(r) > 60 {
				preview = string(r[:59]) + "…"
			}
		}
		fmt.Fprintf(w, "%5d %7d  %-18s %-9s %s\n", i, n.Seq, n.Type, n.Role, preview)
	}
	fmt.Fprintf(w, "\n%d wire messages\n", len(l.Messages()))
}

// BenchmarkPromptTokens tokenizes the prompts of the requests of a
// 200-turn session the offline model recorded, in order, with the
// DeepSeek V3 tokenizer: each prompt whole, and as the replay does, from
// the last template marker of the prefix it shares with the previous one.
//
//	go test ./host/eval -run '^$' -bench PromptTokens
func BenchmarkPromptTokens(b *testing.B) {
	rt := runtime(b)
	id, events := evaltest.Session(b, rt, 200)
	reqs, order, err := host.Requests(events, id)
	if err != nil {
		b.Fatal(err)
	}
	var r eval.Renderer
	var texts []string
	size := 0
	for _, seq := range order {
		got, _, err := r.Render(reqs[seq])
		if err != nil {
			b.Fatal(err)
		}
		texts = append(texts, got[2])
		size += len(got[2])
	}
	bpe := tokenizer.DeepSeekV3()
	b.Run("whole", func(b *testing.B) {
		b.SetBytes(int64(size))
		for range b.N {
			for _, t := range texts {
				bpe.Encode(t)
			}
		}
	})
	b.Run("prefix", func(b *testing.B) {
		b.SetBytes(int64(size))
		for range b.N {
			enc, _ := eval.PrefixEncoder(bpe)
			for _, t := range texts {
				enc(t)
			}
		}
	})
}
