package native

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/plugins/compaction-basic/compact"
	"github.com/weirhost/weir/surface"
)

// pressureCfg: window 1000, no headroom, threshold 500, tail 50.
const pressureCfg = `{"headroomTokens": 0, "thresholdRatio": 0.5, "retainTokens": 50, "maxTokens": 200}`

// pressureScenario runs three turns that stay below the threshold and a
// fourth whose pre-step finds the surface above it. It returns the surface
// before the fourth turn.
func pressureScenario(t *testing.T) (*harness, []int64) {
	h := newHarness(t, "You are helpful.", pressureCfg, nil)
	h.turn("hi")
	h.turn("hello")
	h.model.then(say(words(100)))
	h.turn(words(300))
	require.Empty(t, h.compactionEvents(), "below the threshold: nothing")
	require.Empty(t, h.sum.reqs)
	before := h.log().Nodes()
	h.turn("next")
	return h, before
}

func TestI87_NoHeaderNoPressureCompaction(t *testing.T) {
	h := newHarness(t, "You are helpful.", pressureCfg, nil)
	res := h.turn(words(600)) // far above the threshold, but no header yet
	require.Equal(t, surface.EndCompleted, res.Reason.Kind)
	require.Empty(t, h.compactionEvents())
	require.Empty(t, h.sum.reqs, "no summarization without a logged header")
	require.Len(t, h.model.reqs, 1)
}

func TestI88_PressureCompactsHeadRange(t *testing.T) {
	h, before := pressureScenario(t)
	evs := h.compactionEvents()
	require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeUserMessage, surface.TypeCompactionEnd}, typesOf(evs))
	cp := evs[2]
	require.Equal(t, surface.Replace(before[1], before[len(before)-2]), cp.Op, "everything but the head and the retained tail")
	nodes := h.log().Nodes()
	require.Equal(t, []int64{before[0], cp.Seq, before[len(before)-1]}, nodes[:3])
	require.Len(t, nodes, 5, "head, checkpoint, kept reply, new user message, new reply")
	require.Less(t, len(nodes), len(before)+2, "the surface shrank")
	// The compaction sits between turn 4's turn/start and step/start.
	all := h.log().Events()
	require.Equal(t, surface.TypeTurnStart, all[evs[0].Seq-1].Type)
	require.Equal(t, host.TypePluginCall, all[evs[3].Seq+1].Type, "the summarize call is recorded after the bracket")
	require.Equal(t, surface.TypeStepStart, all[evs[3].Seq+2].Type)
	start, end := data(t, evs[0]), data(t, evs[3])
	require.Equal(t, float64(4), start["turn"])
	require.Equal(t, float64(4), end["turn"])
	require.Less(t, end["tokensAfter"], float64(500))
	require.Greater(t, end["tokensBefore"], float64(500))
	// The request after compaction carries the checkpoint in place of history.
	last := h.model.reqs[len(h.model.reqs)-1]
	require.Equal(t, []string{"system", "user", "assistant", "user"}, roles(last.Messages))
	require.True(t, compact.IsCheckpoint(last.Messages[1]))
	// Next turn: below the threshold again, nothing more.
	h.turn("again")
	require.Len(t, h.compactionEvents(), 4)
}

func roles(ms []*surface.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Role)
	}
	return out
}

func TestI89_SystemHeadStaysAndLeadsTheInput(t *testing.T) {
	h, before := pressureScenario(t)
	cp := h.compactionEvents()[2]
	require.Equal(t, before[1], cp.Op.Start, "the range starts at the first node after the head")
	require.Equal(t, before[0], h.log().Nodes()[0], "the head stays node 0")
	require.Len(t, h.sum.reqs, 1)
	req := h.sum.reqs[0]
	require.Equal(t, "system", req.Messages[0].Role)
	require.Equal(t, "You are helpful.", surface.TextOf(req.Messages[0].Content))
	sys := 0
	for _, m := range req.Messages {
		if m.Role == "system" {
			sys++
		}
	}
	require.Equal(t, 1, sys, "exactly one system message")
	require.Equal(t, compact.Instruction, surface.TextOf(req.Messages[len(req.Messages)-1].Content))
	require.Equal(t, int64(200), req.MaxTokens)
	require.Equal(t, "test", req.Provider, "the conversation's route summarizes by default")
}

// regionHarness runs two turns and arms a region compaction for the third.
func regionHarness(t *testing.T, sys string, mod func(h *harness)) (*harness, *regionCompactor) {
	rc := &regionCompactor{route: host.Route{Provider: "test", Model: "m1", ContextWindow: 1000}}
	h := newHarness(t, sys, `{"maxTokens": 300}`, func(h *harness) {
		rc.p = h.prov
		h.cfg.Compactors = []host.CompactionProvider{rc}
		if mod != nil {
			mod(h)
		}
	})
	h.model.then(say(words(100)))
	h.turn(words(100))
	h.turn("second")
	return h, rc
}

func TestI93_RegionCompactionLands(t *testing.T) {
	h, rc := regionHarness(t, "You are helpful.", nil)
	before := h.log().Nodes()
	rc.span = func(*host.View) compact.Span { return compact.Span{Start: before[1], End: before[2]} }
	h.turn("third")
	require.NoError(t, rc.err)
	evs := h.compactionEvents()
	require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeUserMessage, surface.TypeCompactionEnd}, typesOf(evs))
	for i := 1; i < 4; i++ {
		require.Equal(t, evs[0].Seq+int64(i), evs[i].Seq, "one contiguous batch")
	}
	cp := evs[2]
	require.Equal(t, surface.Replace(before[1], before[2]), cp.Op)
	require.Equal(t, []int64{evs[0].Seq, evs[1].Seq, before[1], before[2]}, cp.Sources)
	msg, ok := h.log().Message(cp.Seq)
	require.True(t, ok)
	require.True(t, compact.IsCheckpoint(msg))
	require.True(t, strings.HasPrefix(msg.Content[0].Text, compact.Preamble+"\n\n"))
	require.True(t, strings.HasSuffix(msg.Content[0].Text, compact.OpenTag))
	require.Equal(t, shortSummary, msg.Content[1].Text)
	require.Equal(t, compact.CloseTag, msg.Content[2].Text)
	id := data(t, evs[0])["compactionId"]
	require.Equal(t, compact.CompactionID("sess", evs[0].Seq), id)
	sum := data(t, evs[1])
	require.Equal(t, id, sum["compactionId"])
	require.Equal(t, shortSummary, sum["summary"])
	require.Equal(t, float64(300), sum["maxTokens"])
	require.Equal(t, id, data(t, evs[3])["compactionId"])
	require.Equal(t, []int64{before[0], cp.Seq, before[3], before[4]}, h.log().Nodes()[:4])
	// A replay derives the same messages, and the complete fold reports the
	// replacement.
	replay, err := surface.Restore(h.log().Events())
	require.NoError(t, err)
	require.Equal(t, messagesJSON(t, h.log().Messages()), messagesJSON(t, replay.Messages()))
	fold, err := surface.Fold(h.log().Events())
	require.NoError(t, err)
	require.Len(t, fold.Replacements, 1)
	require.Equal(t, []int64{before[1], before[2]}, fold.Replacements[0].Shadowed)
	// The store holds everything: provider proposals are flushed at once.
	require.Equal(t, len(h.log().Events()), len(h.store.events))
}

func TestI94_SummarizerInput(t *testing.T) {
	h, rc := regionHarness(t, "You are helpful.", func(h *harness) { h.cfg.Tools = []host.Tool{echo} })
	nodes := h.log().Nodes()
	rc.span = func(*host.View) compact.Span { return compact.Span{Start: nodes[1], End: nodes[2]} }
	h.turn("third")
	require.NoError(t, rc.err)
	require.Len(t, h.sum.reqs, 1)
	req := h.sum.reqs[0]
	var want []*surface.Message
	for _, seq := range nodes[:3] {
		m, _ := h.log().Message(seq)
		want = append(want, m)
	}
	require.Equal(t, messagesJSON(t, want), messagesJSON(t, req.Messages[:3]), "the system message, then the span")
	require.Len(t, req.Messages, 4, "plus the instruction")
	require.Equal(t, compact.Instruction, surface.TextOf(req.Messages[3].Content))
	require.NotNil(t, h.log().Header())
	require.Equal(t, h.log().Header().Tools, req.Tools)
	require.NotEmpty(t, req.Tools)

	// An empty head contributes no message (and stays protected).
	h, rc = regionHarness(t, "", nil)
	nodes = h.log().Nodes()
	rc.span = func(*host.View) compact.Span { return compact.Span{Start: nodes[1], End: nodes[2]} }
	h.turn("third")
	require.NoError(t, rc.err)
	req = h.sum.reqs[0]
	require.Equal(t, []string{"user", "assistant", "user"}, roles(req.Messages))
	require.Nil(t, req.Tools)
	require.Equal(t, nodes[0], h.log().Nodes()[0])
}

// With the host's own summarizer the model receives the input messages,
// the instruction last, the header's tools and the policy cap.
func TestI94_DefaultSummarizerRequest(t *testing.T) {
	h, rc := regionHarness(t, "You are helpful.", func(h *harness) {
		h.cfg.Summarizer = nil
		h.cfg.Tools = []host.Tool{echo}
	})
	nodes := h.log().Nodes()
	rc.span = func(*host.View) compact.Span { return compact.Span{Start: nodes[1], End: nodes[2]} }
	calls := len(h.model.reqs)
	h.model.then(say(shortSummary))
	h.turn("third")
	require.NoError(t, rc.err)
	sreq := h.model.reqs[calls]
	require.Equal(t, []string{"system", "user", "assistant", "user"}, roles(sreq.Messages))
	require.Equal(t, compact.Instruction, surface.TextOf(sreq.Messages[3].Content))
	require.Equal(t, int64(300), *sreq.Config.MaxTokens)
	require.Equal(t, "m1", sreq.Config.Model)
	require.Equal(t, h.log().Header().Tools, sreq.Tools)
	require.Len(t, h.compactionEvents(), 4)
}

// Spec item 95 describes the reference, where the session rejects the
// checkpoint after the summary was written and compaction/end records the
// rejection. Here the provider checks system-head protection itself, before
// any model call: the log records start + end{error} and the surface is
// unchanged. A batch that still tried to shadow node 0 would be rejected
// by the host whole (second half): nothing of it reaches the log.
func TestI95_RegionOverSystemHead(t *testing.T) {
	h, rc := regionHarness(t, "You are helpful.", nil)
	before := h.log().Nodes()
	rc.span = func(*host.View) compact.Span { return compact.Span{Start: before[0], End: before[1]} }
	h.turn("third")
	require.NoError(t, rc.err)
	evs := h.compactionEvents()
	require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionEnd}, typesOf(evs))
	require.Contains(t, data(t, evs[1])["error"], "protected system prompt")
	require.Empty(t, h.sum.reqs, "no model call for a span the session would reject")
	require.Equal(t, before, h.log().Nodes()[:len(before)])

	h, rc = regionHarness(t, "You are helpful.", nil)
	before = h.log().Nodes()
	rc.span = func(*host.View) compact.Span { return compact.Span{Start: before[1], End: before[2]} }
	rc.edit = func(ps []surface.Proposal) []surface.Proposal {
		ps[2].Op = surface.Replace(before[0], before[2])
		ps[2].Sources = append(ps[2].Sources, before[0])
		return ps
	}
	logLen := len(h.log().Events())
	h.turn("third")
	require.Empty(t, h.compactionEvents(), "the host admits a batch all or nothing")
	require.Equal(t, before, h.log().Nodes()[:len(before)])
	require.Equal(t, surface.TypeTurnStart, h.log().Events()[logLen].Type)
	require.Contains(t, h.logs.String(), "protected system prompt")
}

func TestI96_InvalidRegionFailsBeforeAnyEvent(t *testing.T) {
	rc := &regionCompactor{}
	h := newHarness(t, "You are helpful.", `{}`, func(h *harness) {
		rc.p = h.prov
		h.cfg.Compactors = []host.CompactionProvider{rc}
		h.cfg.Tools = []host.Tool{echo}
	})
	h.model.then(callTool("c1"), say("done"))
	h.turn("use the tool")
	nodes := h.log().Nodes() // [S, U, A(call), T, A]
	require.Len(t, nodes, 5)
	for _, tc := range []struct {
		span compact.Span
		want string
	}{
		{compact.Span{Start: 9999, End: nodes[1]}, "start seq 9999 not found in surface"},
		{compact.Span{Start: nodes[1], End: 9999}, "end seq 9999 not found in surface"},
		{compact.Span{Start: nodes[2], End: nodes[1]}, "is after end"},
		{compact.Span{Start: nodes[1], End: nodes[2]}, "after end seq " + itoa(nodes[2]) + " is not a balanced boundary"},
		{compact.Span{Start: nodes[3], End: nodes[4]}, "before start seq " + itoa(nodes[3]) + " is not a balanced boundary"},
	} {
		rc.span = func(*host.View) compact.Span { return tc.span }
		h.turn("again")
		require.ErrorContains(t, rc.err, tc.want)
	}
	require.Empty(t, h.compactionEvents())
	require.Empty(t, h.sum.reqs)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestI97_OwnerTurnAndLock(t *testing.T) {
	h, rc := regionHarness(t, "You are helpful.", nil)
	before := h.log().Nodes()
	span := func(*host.View) compact.Span { return compact.Span{Start: before[1], End: before[2]} }
	// An unmatched compaction/start holds the lock.
	_, err := h.s.Propose(host.Proposer{Kind: host.ByLoop},
		surface.Proposal{Type: surface.TypeCompactionStart, Data: []byte(`{"compactionId":"cmp-orphan","turn":null}`)})
	require.NoError(t, err)
	rc.span = span
	h.turn("third")
	require.ErrorIs(t, rc.err, compact.ErrBusy)
	require.ErrorContains(t, rc.err, "cmp-orphan (started at seq")
	require.Len(t, h.compactionEvents(), 1)
	require.Empty(t, h.sum.reqs)

	// Reopened from storage, the start lies before the new end-seed: it
	// belongs to a dead lifecycle and compaction proceeds.
	seeded, err := surface.Seed(h.log().Events())
	require.NoError(t, err)
	s2 := host.NewSession("sess", seeded, nil, host.WithIDs(host.CounterIDs("r")))
	cfg := h.cfg
	rc2 := &regionCompactor{p: h.prov, route: rc.route, span: span}
	cfg.Compactors = []host.CompactionProvider{rc2}
	a2, err := host.NewAgent(s2, cfg)
	require.NoError(t, err)
	_, err = a2.Run(context.Background(), a2.UserMessage("fourth"))
	require.NoError(t, err)
	require.NoError(t, rc2.err)
	var types []string
	for _, e := range seeded.Events() {
		if strings.HasPrefix(e.Type, "compaction/") {
			types = append(types, e.Type)
		}
	}
	require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeCompactionEnd}, types)
	require.NotEqual(t, before[1], seeded.Nodes()[1], "the span was replaced")
}

func TestI98_SummarizerFailureLeavesSurface(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(host.SummaryRequest) (*host.SummaryResult, error)
		want  string
	}{
		{"error", func(host.SummaryRequest) (*host.SummaryResult, error) {
			return nil, &llm.Error{Code: llm.CodeServer, What: "provider down"}
		}, "summarization failed: llm: provider down"},
		{"non-error value", func(host.SummaryRequest) (*host.SummaryResult, error) {
			panic("quota gone")
		}, "the summarizer panicked: quota gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "You are helpful.", `{}`, nil)
			h.turn(words(100))
			h.turn(words(100))
			before := h.log().Nodes()
			h.sum.reply = tc.reply
			changed, err := h.a.CompactNow(context.Background())
			require.NoError(t, err)
			require.False(t, changed)
			require.Equal(t, before, h.log().Nodes())
			evs := h.compactionEvents()
			require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionEnd}, typesOf(evs))
			require.Contains(t, data(t, evs[1])["error"], tc.want)
		})
	}
}

// The host admits proposals after the provider returns, but nothing stops
// a summarizer from appending while it runs: the seqs are taken after
// summarization, log-only appends are tolerated, surface changes fail the
// (automatic) bracket as changed.
func TestI99_AppendsDuringSummarization(t *testing.T) {
	h, _ := pressureScenarioWith(t, func(h *harness) {
		h.sum.reply = func(host.SummaryRequest) (*host.SummaryResult, error) {
			_, err := h.s.Propose(host.Proposer{Kind: host.ByLoop}, surface.Proposal{Type: "test/note", Data: []byte(`{"n":1}`), Ignorable: true})
			require.NoError(h.t, err)
			return &host.SummaryResult{Content: []surface.Block{surface.Text(shortSummary)}, FinishReason: "stop"}, nil
		}
	})
	evs := h.compactionEvents()
	require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeUserMessage, surface.TypeCompactionEnd}, typesOf(evs))
	note, _ := h.log().Event(evs[0].Seq - 1)
	require.Equal(t, "test/note", note.Type)

	h, before := pressureScenarioWith(t, func(h *harness) {
		h.sum.reply = func(host.SummaryRequest) (*host.SummaryResult, error) {
			_, err := h.s.Propose(host.Proposer{Kind: host.ByLoop}, surface.Proposal{Type: surface.TypeUserMessage,
				Data: []byte(`{"id":"late","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"late"}]}`), Op: surface.Append})
			require.NoError(h.t, err)
			return &host.SummaryResult{Content: []surface.Block{surface.Text(shortSummary)}, FinishReason: "stop"}, nil
		}
	})
	evs = h.compactionEvents()
	require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionEnd}, typesOf(evs))
	require.Contains(t, data(t, evs[1])["error"], "the surface changed during summarization")
	require.Equal(t, before, h.log().Nodes()[:len(before)], "nothing was replaced")
}

// pressureScenarioWith is pressureScenario with a hook run once the loop is
// built.
func pressureScenarioWith(t *testing.T, hook func(h *harness)) (*harness, []int64) {
	h := newHarness(t, "You are helpful.", pressureCfg, nil)
	h.turn("hi")
	h.turn("hello")
	h.model.then(say(words(100)))
	h.turn(words(300))
	hook(h)
	before := h.log().Nodes()
	h.turn("next")
	return h, before
}

func TestI100_SummaryNotSmallerThroughHost(t *testing.T) {
	h := newHarness(t, "You are helpful.", `{}`, nil)
	h.turn(words(100))
	h.turn(words(100))
	before := h.log().Nodes()
	h.sum.reply = func(host.SummaryRequest) (*host.SummaryResult, error) {
		return &host.SummaryResult{Content: []surface.Block{surface.Text(words(300))}, FinishReason: "stop"}, nil
	}
	changed, err := h.a.CompactNow(context.Background())
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, before, h.log().Nodes())
	evs := h.compactionEvents()
	require.Contains(t, data(t, evs[1])["error"], "summary is not smaller than the span it replaces")
}

func TestI101_StillAboveThresholdThroughHost(t *testing.T) {
	h := newHarness(t, "You are helpful.", `{"headroomTokens": 0, "thresholdRatio": 0.5, "retainTokens": 50, "compactionRetries": 0}`, nil)
	h.model.then(say(words(150)), say(words(350)))
	h.turn("hi")
	h.turn("hey")
	require.Empty(t, h.compactionEvents())
	h.sum.reply = func(host.SummaryRequest) (*host.SummaryResult, error) {
		return &host.SummaryResult{Content: []surface.Block{surface.Text(words(60))}, FinishReason: "stop"}, nil
	}
	h.turn("third")
	evs := h.compactionEvents()
	require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeUserMessage, surface.TypeCompactionEnd}, typesOf(evs))
	require.Contains(t, data(t, evs[3])["warning"], "still above threshold after 1 attempt")
	require.Contains(t, h.logs.String(), "still above threshold after 1 attempt")
	require.Len(t, h.sum.reqs, 1, "compactionRetries 0: one pass")
}

func TestI86_ConfigErrorWarnedOncePerModel(t *testing.T) {
	h := newHarness(t, "You are helpful.", `{}`, func(h *harness) { h.cfg.Route.ContextWindow = 0 })
	h.turn("one")
	h.turn("two")
	h.turn("three")
	require.Equal(t, 1, strings.Count(h.logs.String(), "no context window"), h.logs.String())
	require.Empty(t, h.compactionEvents())
	// Another model is another target: warned once more.
	h.a.SetRoute(host.Route{Provider: "test", Model: "m2"})
	h.turn("four")
	h.turn("five")
	require.Equal(t, 2, strings.Count(h.logs.String(), "no context window"), h.logs.String())
}
