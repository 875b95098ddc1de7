package surface_test

import (
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

func TestK120_CrashRepairClosers(t *testing.T) {
	p := newPromptLog(t) // turn 1, step 1 open
	p.project("be brief", false, false)
	p.user("do two things")
	data, err := surface.Data(surface.StepMessage{Turn: 1, Step: 1, Message: surface.Message{ID: "a1", Role: "assistant",
		Source:  surface.Source{Kind: "model", Provider: "p", Model: "m"},
		Content: []surface.Block{surface.ToolCall("c1", "read", `{}`), surface.ToolCall("c2", "write", `{}`)}}})
	require.NoError(t, err)
	_, err = p.l.Append(surface.Proposal{Type: surface.TypeAssistantMessage, Data: data, Op: surface.Append})
	require.NoError(t, err)
	call, err := p.l.Append(surface.Proposal{Type: surface.TypeToolCall, Data: []byte(`{"turn":1,"step":1,"callId":"c1","name":"read","arguments":"{}"}`)})
	require.NoError(t, err)
	last := p.l.Events()[p.l.Len()-1].Time

	reopened, err := surface.Restore(p.l.Events())
	require.NoError(t, err)
	evs, err := reopened.Repair(p.newID)
	require.NoError(t, err)
	require.Len(t, evs, 4)

	type result struct {
		Error   surface.ToolError `json:"error"`
		Message surface.Message   `json:"message"`
	}
	var r1, r2 result
	require.NoError(t, unmarshalJSON(evs[0].Data, &r1))
	require.NoError(t, unmarshalJSON(evs[1].Data, &r2))
	require.Equal(t, surface.TypeToolResult, evs[0].Type)
	require.Equal(t, surface.CodeToolOutcomeUnknown, r1.Error.Code)
	require.Equal(t, []int64{call.Seq}, evs[0].Sources)
	require.Equal(t, "c1", r1.Message.Source.CallID)
	require.True(t, r1.Message.Content[0].IsError)
	require.Equal(t, surface.TypeToolResult, evs[1].Type)
	require.Equal(t, surface.CodeToolNotStarted, r2.Error.Code)
	require.Nil(t, evs[1].Sources)
	require.Equal(t, surface.TypeStepEnd, evs[2].Type)
	require.Equal(t, surface.TypeTurnEnd, evs[3].Type)
	require.JSONEq(t, `{"turn":1,"reason":{"kind":"interrupted"}}`, string(evs[3].Data))
	// The closers are written byte for byte as Data writes their values.
	for i, v := range []any{
		surface.StepMessage{Turn: 1, Step: 1, Message: r1.Message, Error: &r1.Error},
		surface.StepMessage{Turn: 1, Step: 1, Message: r2.Message, Error: &r2.Error},
		map[string]int64{"turn": 1, "step": 1},
		surface.TurnEnd{Turn: 1, Reason: surface.EndReason{Kind: surface.EndInterrupted}},
	} {
		want, err := surface.Data(v)
		require.NoError(t, err)
		require.Equal(t, string(want), string(evs[i].Data))
	}
	for _, e := range evs {
		require.Equal(t, last, e.Time, "closers carry the last event's time")
	}

	// A balanced log gets no closers, and repair is idempotent.
	again, err := reopened.Repair(p.newID)
	require.NoError(t, err)
	require.Empty(t, again)
}

func TestK120_RepairClosesAnOpenTurnWithoutStep(t *testing.T) {
	l := surface.New()
	_, err := l.Append(surface.Proposal{Type: surface.TypeTurnStart, Data: []byte(`{"turn":1}`)})
	require.NoError(t, err)
	evs, err := l.Repair(func() string { return "x" })
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, surface.TypeTurnEnd, evs[0].Type)
}

func unmarshalJSON(b []byte, v any) error { return json.Unmarshal(b, v) }
