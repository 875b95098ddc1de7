package native

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/plugins/compaction-basic/compact"
	"github.com/weirhost/weir/surface"
)

// noPressure keeps pressure compaction quiet (threshold = the whole window).
const noPressure = `{"headroomTokens": 0, "thresholdRatio": 1}`

// overflowHarness runs two turns; the third turn's first attempt fails
// with a context overflow.
func overflowHarness(t *testing.T, config string, mod func(h *harness)) *harness {
	h := newHarness(t, "You are helpful.", config, mod)
	h.turn(words(100))
	h.turn(words(100))
	return h
}

func endCode(t *testing.T, res *host.TurnResult) string {
	t.Helper()
	require.Equal(t, surface.EndError, res.Reason.Kind)
	return res.Reason.Error.Code
}

func TestI102_OverflowRecoveryRetries(t *testing.T) {
	h := overflowHarness(t, noPressure, nil)
	before := h.log().Nodes()
	h.model.then(failWith(llm.CodeContextOverflow), say("recovered"))
	res := h.turn("three")
	require.Equal(t, surface.EndCompleted, res.Reason.Kind)
	evs := h.compactionEvents()
	require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeUserMessage, surface.TypeCompactionEnd}, typesOf(evs))
	// Inside turn 3's only step, after the failed attempt.
	require.Len(t, h.events(surface.TypeStepStart), 3)
	steps := h.events(surface.TypeStepStart)
	require.Less(t, steps[2].Seq, evs[0].Seq)
	attempt := h.events(surface.TypeAssistantAttempt)
	require.Len(t, attempt, 1)
	require.Less(t, attempt[0].Seq, evs[0].Seq)
	require.Equal(t, float64(3), data(t, evs[0])["turn"])
	// Retain 0: everything but the newest node (turn 3's user message).
	cp := evs[2]
	require.Equal(t, surface.Replace(before[1], before[len(before)-1]), cp.Op)
	retry := h.model.reqs[len(h.model.reqs)-1]
	require.Equal(t, []string{"system", "user", "user"}, roles(retry.Messages))
	require.True(t, compact.IsCheckpoint(retry.Messages[1]))
	require.Equal(t, "three", surface.TextOf(retry.Messages[2].Content))
	st := h.prov.State("sess")
	require.Equal(t, int64(1), st.OverflowCount)
}

func TestI102_OverflowDisabledOrNotOverflow(t *testing.T) {
	// maxOverflowRetries 0 disables recovery: the original error ends the turn.
	h := overflowHarness(t, `{"headroomTokens": 0, "thresholdRatio": 1, "maxOverflowRetries": 0}`, nil)
	h.model.then(failWith(llm.CodeContextOverflow))
	require.Equal(t, llm.CodeContextOverflow, endCode(t, h.turn("three")))
	require.Empty(t, h.compactionEvents())
	require.Empty(t, h.sum.reqs)

	// auto false: neither pressure nor overflow compaction.
	h = overflowHarness(t, `{"auto": false, "headroomTokens": 0, "thresholdRatio": 0.01, "retainTokens": 0}`, nil)
	h.model.then(failWith(llm.CodeContextOverflow))
	require.Equal(t, llm.CodeContextOverflow, endCode(t, h.turn("three")))
	require.Empty(t, h.compactionEvents())

	// Other failure codes are not compaction's business.
	h = overflowHarness(t, noPressure, nil)
	h.model.then(failWith(llm.CodeBadRequest))
	require.Equal(t, llm.CodeBadRequest, endCode(t, h.turn("three")))
	require.Empty(t, h.compactionEvents())
	require.Empty(t, h.sum.reqs)
}

func TestI102_OverflowCancelledDelegates(t *testing.T) {
	h := overflowHarness(t, noPressure, nil)
	ctx, cancel := context.WithCancelCause(context.Background())
	h.model.then(func(context.Context, *llm.Request) (*llm.Result, error) {
		cancel(errors.New("user pressed stop"))
		return &llm.Result{}, &llm.Error{Code: llm.CodeContextOverflow, What: "too long"}
	})
	res, err := h.a.Run(ctx, h.a.UserMessage("three"))
	require.NoError(t, err)
	require.Equal(t, surface.EndAborted, res.Reason.Kind)
	require.Empty(t, h.compactionEvents())
	require.Empty(t, h.sum.reqs)
}

// The plugin's maxOverflowRetries bounds recoveries per sequence even when
// the host would allow more.
func TestI102_OverflowCountPerSequence(t *testing.T) {
	h := overflowHarness(t, noPressure, func(h *harness) { h.cfg.MaxOverflowRetries = 5 })
	h.model.then(failWith(llm.CodeContextOverflow), failWith(llm.CodeContextOverflow))
	require.Equal(t, llm.CodeContextOverflow, endCode(t, h.turn("three")))
	require.Len(t, h.compactionEvents(), 4, "one recovery, then the limit")
	require.Len(t, h.sum.reqs, 1)
	require.Contains(t, h.logs.String(), "recovery attempt(s) already made")
	// A new turn starts a new sequence.
	h.model.then(failWith(llm.CodeContextOverflow), say("fine"))
	h.turn(words(50))
	require.Len(t, h.compactionEvents(), 8)
}

// A failed summarization records a closed failed bracket and does not
// advance the surface, so the host does not retry and the original error
// ends the turn. (The reference retries when a tool-result prune advanced
// the surface before the summary failed; compaction-basic does not prune.)
func TestI102_OverflowSummaryFailureNoRetry(t *testing.T) {
	h := overflowHarness(t, noPressure, nil)
	h.sum.reply = func(host.SummaryRequest) (*host.SummaryResult, error) { return nil, errors.New("summarizer offline") }
	h.model.then(failWith(llm.CodeContextOverflow))
	calls := len(h.model.reqs)
	require.Equal(t, llm.CodeContextOverflow, endCode(t, h.turn("three")))
	evs := h.compactionEvents()
	require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionEnd}, typesOf(evs))
	require.Contains(t, data(t, evs[1])["error"], "summarizer offline")
	require.Equal(t, calls+1, len(h.model.reqs), "no retry")
}

func TestI104_ManualCompaction(t *testing.T) {
	// Nothing to compact: no events at all.
	h := newHarness(t, "You are helpful.", `{}`, nil)
	changed, err := h.a.CompactNow(context.Background())
	require.NoError(t, err)
	require.False(t, changed)
	require.Empty(t, h.log().Events())

	h.turn(words(100))
	h.turn(words(100))
	before := h.log().Nodes()
	flushed := len(h.store.events)
	changed, err = h.a.CompactNow(context.Background())
	require.NoError(t, err)
	require.True(t, changed)
	evs := h.compactionEvents()
	require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeUserMessage, surface.TypeCompactionEnd}, typesOf(evs))
	start := data(t, evs[0])
	require.Contains(t, start, "turn")
	require.Nil(t, start["turn"], "manual brackets have no owner")
	require.Nil(t, data(t, evs[3])["turn"])
	require.Equal(t, surface.TypeTurnEnd, h.log().Events()[evs[0].Seq-1].Type, "between turns")
	require.Equal(t, surface.Replace(before[1], before[len(before)-2]), evs[2].Op)
	require.Len(t, h.store.events, flushed+5, "flushed to the store, with the record of the summarize call")
	require.Equal(t, evs[3].Seq+1, h.store.events[len(h.store.events)-1].Seq)
	require.Equal(t, host.TypePluginCall, h.store.events[len(h.store.events)-1].Type)
	// Manual compaction is not bounded by the automatic limit.
	for range 4 {
		h.turn(words(100))
		_, err = h.a.CompactNow(context.Background())
		require.NoError(t, err)
	}
	require.Len(t, h.events(surface.TypeCompactionEnd), 5)
}

// Manual compaction is refused while a turn is open (the host refuses too;
// this drives the provider directly from inside a turn).
func TestI104_ManualBusyInsideTurn(t *testing.T) {
	var got error
	h := newHarness(t, "You are helpful.", `{}`, func(h *harness) {
		h.cfg.Compactors = []host.CompactionProvider{compactorFunc(func(ctx context.Context, v *host.View, req host.CompactionRequest) ([]surface.Proposal, error) {
			req.Reason = host.CompactManual
			_, got = h.prov.Compact(ctx, v, req)
			return nil, nil
		})}
	})
	h.turn("one")
	require.ErrorIs(t, got, compact.ErrBusy)
	require.ErrorContains(t, got, "turn 1 is open")
}

// A span replaced while the summarizer runs fails the manual bracket as
// changed, with an error close.
func TestI104_ManualSpanChanged(t *testing.T) {
	h := newHarness(t, "You are helpful.", `{}`, nil)
	h.turn(words(100))
	h.turn(words(100))
	first := h.log().Nodes()[1]
	h.sum.reply = func(host.SummaryRequest) (*host.SummaryResult, error) {
		_, err := h.s.Propose(host.Proposer{Kind: host.ByLoop}, surface.Proposal{Type: surface.TypeUserMessage,
			Data: []byte(`{"id":"x","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"rewritten"}]}`),
			Op:   surface.Replace(first, first), Sources: []int64{first}})
		require.NoError(t, err)
		return &host.SummaryResult{Content: []surface.Block{surface.Text(shortSummary)}, FinishReason: "stop"}, nil
	}
	_, err := h.a.CompactNow(context.Background())
	require.NoError(t, err)
	evs := h.compactionEvents()
	require.Equal(t, []string{surface.TypeUserMessage, surface.TypeCompactionStart, surface.TypeCompactionEnd}, typesOf(evs))
	require.Contains(t, data(t, evs[2])["error"], "changed during summarization")
	// Only the concurrent rewrite landed.
	m, _ := h.log().Message(h.log().Nodes()[1])
	require.Equal(t, "rewritten", surface.TextOf(m.Content))
}

// A change outside a manual span is tolerated: only the span must stay.
func TestI104_ManualToleratesChangesOutsideSpan(t *testing.T) {
	h := newHarness(t, "You are helpful.", `{}`, nil)
	h.turn(words(100))
	h.turn(words(100))
	h.sum.reply = func(host.SummaryRequest) (*host.SummaryResult, error) {
		_, err := h.s.Propose(host.Proposer{Kind: host.ByLoop}, surface.Proposal{Type: surface.TypeUserMessage,
			Data: []byte(`{"id":"late","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"late"}]}`), Op: surface.Append})
		require.NoError(t, err)
		return &host.SummaryResult{Content: []surface.Block{surface.Text(shortSummary)}, FinishReason: "stop"}, nil
	}
	changed, err := h.a.CompactNow(context.Background())
	require.NoError(t, err)
	require.True(t, changed)
	require.Len(t, h.compactionEvents(), 4)
}

// compactorFunc is a compaction provider made of a function that passes on
// (or edits) compaction-basic's proposals, so it proposes under its name:
// the host requires a checkpoint's source to name its proposer.
type compactorFunc func(ctx context.Context, v *host.View, req host.CompactionRequest) ([]surface.Proposal, error)

func (f compactorFunc) ID() string { return "compaction-basic" }
func (f compactorFunc) Compact(ctx context.Context, v *host.View, req host.CompactionRequest) ([]surface.Proposal, error) {
	return f(ctx, v, req)
}
