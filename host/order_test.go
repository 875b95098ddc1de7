package host

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

func stepOf(t *testing.T, e surface.Event) (int64, int64) {
	var d struct{ Turn, Step int64 }
	require.NoError(t, json.Unmarshal(e.Data, &d))
	return d.Turn, d.Step
}

func TestG72_SystemMessageOrderInsideItsStep(t *testing.T) {
	h := newHarness(t, "v1", func(c *Config) { c.Tools = []Tool{echoTool} })
	h.model.then(callTool("c1", "echo", `{}`), reply("done"))
	h.turn("one")
	h.prompt.text = "v2"
	h.turn("two")
	evs := h.s.Log().Events()
	checked := 0
	for i, e := range evs {
		if e.Type != surface.TypeSystemMessage {
			continue
		}
		checked++
		turn, step := stepOf(t, e)
		// Walk back to this step's step/start with only system/messages between.
		j := i - 1
		for evs[j].Type == surface.TypeSystemMessage {
			j--
		}
		require.Equal(t, surface.TypeStepStart, evs[j].Type)
		tt, ss := stepOf(t, evs[j])
		require.Equal(t, [2]int64{turn, step}, [2]int64{tt, ss})
		// Forward: every user message and request/header of the step comes
		// after it, and the step has both.
		users, headers := 0, 0
		for k := j + 1; evs[k].Type != surface.TypeStepEnd; k++ {
			switch evs[k].Type {
			case surface.TypeUserMessage:
				users++
			case surface.TypeRequestHeader:
				headers++
			default:
				continue
			}
			require.Greater(t, k, i, "%s at seq %d precedes the step's system/message at seq %d", evs[k].Type, evs[k].Seq, e.Seq)
		}
		require.Positive(t, users, "step %d.%d has a user message", turn, step)
		require.Positive(t, headers, "step %d.%d has a request/header", turn, step)
	}
	require.Equal(t, 2, checked)
}

func TestG73_EmptyFirstPromptReservesHead(t *testing.T) {
	h := newHarness(t, "", nil)
	h.turn("hello")
	evs := h.s.Log().Events()
	sysIdx, userIdx := -1, -1
	for i, e := range evs {
		if e.Type == surface.TypeSystemMessage && sysIdx < 0 {
			sysIdx = i
		}
		if e.Type == surface.TypeUserMessage && userIdx < 0 {
			userIdx = i
		}
	}
	require.Less(t, sysIdx, userIdx)
	m, _ := h.s.Log().Message(evs[sysIdx].Seq)
	require.Empty(t, m.Content)
	require.Equal(t, []string{"user"}, msgRoles(h.model.reqs[0].Messages))
	require.Equal(t, evs[sysIdx].Seq, h.s.Log().Nodes()[0])
}

func TestG74_PreStepRejectBlocksTheTurn(t *testing.T) {
	h := newHarness(t, "sys", nil)
	_, err := h.a.PreStepChain.Add("reject", func(_ context.Context, in PreStep) (PreStep, error) {
		in.Decision.Reject = true
		return in, nil
	})
	require.NoError(t, err)
	res := h.turn("hi")
	require.Equal(t, surface.EndBlocked, res.Reason.Kind)
	require.Empty(t, h.events(surface.TypeStepStart))
	require.Len(t, h.events(surface.TypeTurnEnd), 1)
}

func TestG75_EmptyFirstStepCompletesWithoutModelCall(t *testing.T) {
	h := newHarness(t, "sys", nil)
	_, err := h.a.PreStepChain.Add("drop", func(_ context.Context, in PreStep) (PreStep, error) {
		in.Decision.Messages = nil
		return in, nil
	})
	require.NoError(t, err)
	res := h.turn("hi")
	require.Equal(t, surface.EndCompleted, res.Reason.Kind)
	require.Empty(t, h.events(surface.TypeStepStart))
	require.Empty(t, h.model.reqs)
}

func TestG76_MaxTokensIsSticky(t *testing.T) {
	h := newHarness(t, "sys", nil)
	h.model.then(func(*llm.Request) (*llm.Result, error) {
		h.a.Inject(h.a.UserMessage("continue"))
		r := text("cut")
		r.FinishReason = llm.FinishMaxTokens
		return r, nil
	}, reply("complete"))
	res := h.turn("hi")
	require.Equal(t, surface.EndMaxTokens, res.Reason.Kind)
	require.Equal(t, 2, res.Steps)
}

func TestG77_InjectDuringRequestWaterfallJoinsNextStep(t *testing.T) {
	h := newHarness(t, "sys", nil)
	injected := false
	_, err := h.a.RequestChain.Add("inject", func(_ context.Context, c surface.CallConfig) (surface.CallConfig, error) {
		if !injected {
			injected = true
			h.a.Inject(h.a.UserMessage("injected"))
		}
		return c, nil
	})
	require.NoError(t, err)
	h.turn("hi")
	require.Len(t, h.model.reqs, 2)
	has := func(r *llm.Request) bool {
		for _, m := range r.Messages {
			if surface.TextOf(m.Content) == "injected" {
				return true
			}
		}
		return false
	}
	require.False(t, has(h.model.reqs[0]))
	require.True(t, has(h.model.reqs[1]))
}

func TestG78_PressureCompactionSitsBetweenSteps(t *testing.T) {
	comp := &checkpointCompactor{when: func(v *View, req CompactionRequest) bool {
		return req.Reason == CompactPressure && len(v.Nodes()) > 4
	}}
	h := newHarness(t, "sys", func(c *Config) { c.Tools = []Tool{echoTool}; c.Compactors = []CompactionProvider{comp} })
	h.model.then(callTool("c1", "echo", `{}`), callTool("c2", "echo", `{}`), reply("done"))
	h.turn("go")
	evs := h.s.Log().Events()
	found := false
	for i, e := range evs {
		if e.Type != surface.TypeCompactionStart {
			continue
		}
		found = true
		require.Equal(t, surface.TypeStepEnd, evs[i-1].Type)
		require.Equal(t, surface.TypeToolResult, evs[i-2].Type)
		j := i
		for evs[j].Type != surface.TypeCompactionEnd {
			j++
		}
		require.Equal(t, surface.TypeStepStart, evs[j+1].Type)
	}
	require.True(t, found, "a pressure compaction ran")
	h.checkReconstruction()
}

func TestG79_OverflowRecoveryInsideTheStep(t *testing.T) {
	comp := &checkpointCompactor{when: func(v *View, req CompactionRequest) bool { return req.Reason == CompactOverflow }}
	h := newHarness(t, "sys", func(c *Config) { c.Compactors = []CompactionProvider{comp} })
	h.turn("one")
	h.turn("two")
	h.model.then(fail(llm.CodeContextOverflow), reply("recovered"))
	res := h.turn("three")
	require.Equal(t, surface.EndCompleted, res.Reason.Kind)
	evs := h.s.Log().Events()
	var turn3 []surface.Event
	for i := len(evs) - 1; i >= 0; i-- {
		turn3 = append([]surface.Event{evs[i]}, turn3...)
		if evs[i].Type == surface.TypeTurnStart {
			break
		}
	}
	steps, inStep := 0, false
	sawBracket := false
	for _, e := range turn3 {
		switch e.Type {
		case surface.TypeStepStart:
			steps++
			inStep = true
		case surface.TypeStepEnd:
			inStep = false
		case surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeCompactionEnd:
			require.True(t, inStep, "%s inside the step", e.Type)
			sawBracket = true
		}
	}
	require.Equal(t, 1, steps)
	require.True(t, sawBracket)
	retry := h.model.reqs[len(h.model.reqs)-1]
	require.Equal(t, []string{"system", "user"}, msgRoles(retry.Messages))
	require.Contains(t, surface.TextOf(retry.Messages[1].Content), "compacted-summary")
	h.checkReconstruction()
}

func runtimeHarness(t *testing.T, rc *[]Section) *harness {
	return newHarness(t, "sys", func(c *Config) { c.Runtime = func() []Section { return *rc } })
}

func ownedSnapshots(h *harness) []string {
	var out []string
	for _, e := range h.events(surface.TypeUserMessage) {
		m, _ := h.s.Log().Message(e.Seq)
		if m.Source.Kind == "plugin" && m.Source.Plugin == "system-prompt" {
			out = append(out, surface.TextOf(m.Content))
		}
	}
	return out
}

func TestH80_NoSnapshotEverAndEmptyContext(t *testing.T) {
	var rc []Section
	h := runtimeHarness(t, &rc)
	h.turn("hi")
	require.Empty(t, ownedSnapshots(h))
}

func TestH81_SnapshotOnlyWhenChanged(t *testing.T) {
	rc := []Section{{Key: "cwd", Text: "cwd: /a"}}
	h := runtimeHarness(t, &rc)
	h.turn("one")
	h.turn("two")
	require.Equal(t, []string{"cwd: /a"}, ownedSnapshots(h))
	rc = []Section{{Key: "cwd", Text: "cwd: /b"}}
	h.turn("three")
	require.Equal(t, []string{"cwd: /a", "cwd: /b"}, ownedSnapshots(h))
}

func TestH82_ClearedContextMarker(t *testing.T) {
	rc := []Section{{Key: "cwd", Text: "cwd: /a"}}
	h := runtimeHarness(t, &rc)
	h.turn("one")
	rc = nil
	h.turn("two")
	require.Equal(t, []string{"cwd: /a", clearedContext}, ownedSnapshots(h))
	h.turn("three")
	require.Len(t, ownedSnapshots(h), 2)
}

func TestH83_ReplacedSnapshotIsProjectedAgain(t *testing.T) {
	rc := []Section{{Key: "cwd", Text: "cwd: /a"}}
	armed := false
	comp := &checkpointCompactor{when: func(*View, CompactionRequest) bool { fire := armed; armed = false; return fire }, keepNone: true}
	h := newHarness(t, "sys", func(c *Config) {
		c.Runtime = func() []Section { return rc }
		c.Compactors = []CompactionProvider{comp}
	})
	h.turn("one")
	armed = true
	h.turn("two") // the compaction shadows the snapshot after this step's projection ran
	require.Equal(t, []string{"cwd: /a"}, ownedSnapshots(h))
	h.turn("three")
	require.Equal(t, []string{"cwd: /a", "cwd: /a"}, ownedSnapshots(h), "the snapshot was shadowed, so the same text is entered again")
}
