package eval_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/eval"
	"github.com/weirhost/weir/host/eval/evaltest"
	"github.com/weirhost/weir/surface"
)

// With the session's own configuration, the replay sends the recorded
// requests byte for byte: through tools, a tool change, prompt changes,
// manual and pressure compactions (their summaries reused from the log).
// The recorded file is only read.
func TestBaselineReproducesTheRecording(t *testing.T) {
	rt := runtime(t)
	genID, genEvents := evaltest.Session(t, rt, 40)
	demoID, demoEvents := loadEvents(t, demo)
	demoBytes, err := os.ReadFile(demo)
	require.NoError(t, err)
	tests := []struct {
		name        string
		id          string
		events      []surface.Event
		compactions int
	}{
		{"demo", demoID, demoEvents, 1},
		{"generated", genID, genEvents, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := eval.Record(tt.id, tt.events)
			require.NoError(t, err)
			set := evaltest.FirstParty(t, rt, "baseline", rec.Route, `{"headroomTokens": 1024}`)
			set.Baseline = true
			res, err := eval.Replay(context.Background(), rec, set, eval.Options{})
			require.NoError(t, err)
			require.Empty(t, res.Notes)
			require.Equal(t, len(rec.Requests), res.Totals.Requests)
			require.Equal(t, len(rec.Requests), res.Totals.Reproduced, "requests not reproduced byte for byte")
			require.Equal(t, tt.compactions, res.Totals.Compactions)
			require.Equal(t, eval.SummaryCounts{Reused: tt.compactions}, res.Totals.Summaries)
			require.Equal(t, 1, res.Totals.Breaks.Prompt)
			require.Zero(t, res.Totals.Breaks.Other)
			require.Zero(t, res.Totals.PluginFailures)
		})
	}
	after, err := os.ReadFile(demo)
	require.NoError(t, err)
	require.True(t, bytes.Equal(demoBytes, after), "the replay changed the recorded session")
}

// A set with a lower pressure threshold compacts earlier and more often,
// sends fewer input tokens, and writes its new summaries offline.
func TestLowerThresholdCompactsEarlier(t *testing.T) {
	rt := runtime(t)
	id, events := evaltest.Session(t, rt, 40)
	rec, err := eval.Record(id, events)
	require.NoError(t, err)
	base := evaltest.FirstParty(t, rt, "baseline", rec.Route, `{"headroomTokens": 1024}`)
	low := evaltest.FirstParty(t, rt, "low", rec.Route, `{"headroomTokens": 1024, "thresholdRatio": 0.4}`)
	rb, err := eval.Replay(context.Background(), rec, base, eval.Options{})
	require.NoError(t, err)
	rl, err := eval.Replay(context.Background(), rec, low, eval.Options{})
	require.NoError(t, err)
	require.Empty(t, rl.Notes)
	require.Equal(t, rb.Totals.Requests, rl.Totals.Requests)
	require.Less(t, firstCompaction(rl), firstCompaction(rb))
	require.Greater(t, rl.Totals.Compactions, rb.Totals.Compactions)
	require.Less(t, rl.Totals.InputTokens, rb.Totals.InputTokens)
	require.Less(t, rl.Totals.PeakTokens, rb.Totals.PeakTokens)
	require.Positive(t, rl.Totals.Summaries.Offline)
	require.Equal(t, rl.Totals.Compactions, rl.Totals.Breaks.Compaction+rl.Totals.Breaks.Prompt+rl.Totals.Breaks.Tools-2,
		"every new compaction breaks the cached prefix")
}

// Replays of one Recording may run at once, each with its own set: each
// reports what it reports alone. (CI runs host/... under the race
// detector, which checks that they share nothing they write.)
func TestReplaysOfOneRecordingRunAtOnce(t *testing.T) {
	rt := runtime(t)
	id, events := evaltest.Session(t, rt, 40)
	rec, err := eval.Record(id, events)
	require.NoError(t, err)
	confs := []string{`{"headroomTokens": 1024}`, `{"headroomTokens": 1024, "thresholdRatio": 0.4}`, `{"headroomTokens": 1024, "thresholdRatio": 0.6}`}
	sets := make([]eval.Set, 2*len(confs))
	for i := range sets {
		sets[i] = evaltest.FirstParty(t, rt, "set", rec.Route, confs[i%len(confs)])
		sets[i].Baseline = i%len(confs) == 0
	}
	results := make([]*eval.Result, len(sets))
	errs := make([]error, len(sets))
	run := func(i int) {
		results[i], errs[i] = eval.Replay(context.Background(), rec, sets[i], eval.Options{Probes: []string{"Answer 2"}})
	}
	for i := range confs {
		run(i) // alone
	}
	var wg sync.WaitGroup
	for i := len(confs); i < len(sets); i++ {
		wg.Go(func() { run(i) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err)
		results[i].Totals.PluginMs = 0 // a time, not a result
	}
	for i := range confs {
		require.Equal(t, results[i], results[len(confs)+i], "set %d", i)
	}
	alone := results[:len(confs)]
	require.NotEqual(t, alone[1].Totals, alone[2].Totals, "the sets differ")
}

// firstCompaction is the number of the first request after a compaction.
func firstCompaction(r *eval.Result) int {
	for _, q := range r.Requests {
		if q.Compactions > 0 {
			return q.N
		}
	}
	return 0
}

// A probe is visible up to the request before the compaction that
// shadowed it, and not after.
func TestProbeDisappearsAfterTheCompaction(t *testing.T) {
	rt := runtime(t)
	id, events := evaltest.Session(t, rt, 40)
	rec, err := eval.Record(id, events)
	require.NoError(t, err)
	probes := []string{"Answer 2: the reply to question 2", "Question 40: tell me", "never said"}
	for _, conf := range []string{`{"headroomTokens": 1024}`, `{"headroomTokens": 1024, "thresholdRatio": 0.4}`} {
		t.Run(conf, func(t *testing.T) {
			set := evaltest.FirstParty(t, rt, "set", rec.Route, conf)
			res, err := eval.Replay(context.Background(), rec, set, eval.Options{Probes: probes})
			require.NoError(t, err)
			first := firstCompaction(res)
			require.Positive(t, first)
			require.Equal(t, []eval.Probe{
				{Text: probes[0], LastVisible: first - 1},
				{Text: probes[1], LastVisible: res.Totals.Requests},
				{Text: probes[2], LastVisible: 0},
			}, res.Probes)
		})
	}
}

// failing is a compaction provider that always fails.
type failing struct{}

func (failing) ID() string { return "failing" }
func (failing) Compact(context.Context, *host.View, host.CompactionRequest) ([]surface.Proposal, error) {
	return nil, context.DeadlineExceeded
}

// A set the replay cannot follow is reported, not a crash: a compactor
// that fails leaves plugin failures and notes; a recording cut short of
// replies makes the set's extra requests notes on those requests.
func TestUnfollowableIsReported(t *testing.T) {
	id, events := loadEvents(t, demo)
	rec, err := eval.Record(id, events)
	require.NoError(t, err)
	set := eval.Set{Name: "failing", Providers: func(*host.Session) ([]host.CompactionProvider, host.Meter, error) {
		return []host.CompactionProvider{failing{}}, nil, nil
	}}
	res, err := eval.Replay(context.Background(), rec, set, eval.Options{})
	require.NoError(t, err)
	require.Equal(t, len(rec.Requests), res.Totals.Requests)
	require.Positive(t, res.Totals.PluginFailures)
	require.NotEmpty(t, res.Notes)
	require.Contains(t, strings.Join(res.Notes, "\n"), `plugin "failing" failed`)
	require.Zero(t, res.Totals.Compactions)

	// Drop the last turn's reply: the set's loop asks for one more than
	// the recording has.
	short := *rec
	short.Turns = append([]eval.Turn(nil), rec.Turns...)
	last := &short.Turns[len(short.Turns)-1]
	last.EndReply--
	res, err = eval.Replay(context.Background(), &short, set, eval.Options{})
	require.NoError(t, err)
	q := res.Requests[len(res.Requests)-1]
	require.Contains(t, q.Note, "the recording has no reply for this request")
	require.Contains(t, strings.Join(res.Notes, "\n"), "turn 5 ended error")
}

func TestExtractive(t *testing.T) {
	user := func(text string) *surface.Message {
		return &surface.Message{Role: surface.RoleUser, Source: surface.Source{Kind: "user"}, Content: []surface.Block{surface.Text(text)}}
	}
	calls := &surface.Message{Role: surface.RoleAssistant, Content: []surface.Block{
		surface.ToolCall("c1", "read_file", "{}"), surface.ToolCall("c2", "read_file", "{}"), surface.ToolCall("c3", "list_files", "{}")}}
	sys := &surface.Message{Role: surface.RoleSystem, Content: []surface.Block{surface.Text("system text")}}
	instr := user("Summarize the conversation above.")
	tests := []struct {
		name     string
		msgs     []*surface.Message
		max      int
		contains []string
		absent   []string
	}{
		{"requests and tools", []*surface.Message{sys, user("first ask"), calls, user("second\nask")}, 2000,
			[]string{eval.ExtractiveLabel, "- first ask\n", "- second ask\n", "- list_files ×1", "- read_file ×2"},
			[]string{"system text", "Summarize the conversation"}},
		{"nothing", []*surface.Message{sys}, 2000, []string{"## User requests\n- (none)", "## Tools called\n- (none)"}, nil},
		{"capped", []*surface.Message{user(strings.Repeat("a", 150)), user(strings.Repeat("b", 150)), user(strings.Repeat("c", 150))}, 400,
			[]string{"- … 2 more"}, []string{"bbb"}},
		{"long request clipped", []*surface.Message{user(strings.Repeat("x", 500))}, 2000, []string{strings.Repeat("x", 159) + "…"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := eval.Extractive(append(tt.msgs, instr), tt.max)
			for _, c := range tt.contains {
				require.Contains(t, got, c)
			}
			for _, a := range tt.absent {
				require.NotContains(t, got, a)
			}
			require.LessOrEqual(t, len(got), tt.max)
		})
	}
}
