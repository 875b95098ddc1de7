package surface_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
)

// MessageData is the message as the event's data holds it: the whole data
// of a user message, the "message" member of the other surface events,
// nothing for a log-only event; it decodes to what Message returns, in a
// log that admitted the events and in one restored from them.
func TestMessageDataIsTheStoredMessage(t *testing.T) {
	l := newTLog(t)
	l.system("be brief")
	l.user("hello")
	turn, step := l.OpenTurn()
	l.add(pAssistant(turn, step, "a1", "", "c1"))
	l.add(pLogOnly(surface.TypeToolCall, fmt.Sprintf(`{"turn":%d,"step":%d,"callId":"c1","name":"read","arguments":"{}"}`, turn, step)))
	l.add(surface.Proposal{Type: surface.TypeToolResult, Op: surface.Append,
		Data: toolResult{turn: turn, step: step, id: "r1", callID: "c1", text: "out", metaJSON: `{"ms":3}`}.data()})
	l.add(surface.Proposal{Type: "x/note", Data: []byte(`{"a":1}`), Ignorable: true})
	restored, err := surface.Restore(l.Events())
	require.NoError(t, err)
	for _, log := range []*surface.Log{l.Log, restored} {
		for _, e := range log.Events() {
			got, ok := log.MessageData(e.Seq)
			if !surface.KindOf(e.Type).IsSurface() {
				require.False(t, ok, "%s has no message", e.Type)
				continue
			}
			require.True(t, ok, e.Type)
			want := e.Data
			if e.Type != surface.TypeUserMessage {
				var d struct {
					Message jsontext.Value `json:"message"`
				}
				require.NoError(t, json.Unmarshal(e.Data, &d, json.RejectUnknownMembers(false)))
				want = d.Message
			}
			require.True(t, bytes.Equal(want, got), "%s: %s, want %s", e.Type, got, want)
			var m surface.Message
			require.NoError(t, json.Unmarshal(got, &m))
			lm, _ := log.Message(e.Seq)
			require.Equal(t, lm.ID, m.ID)
			require.Equal(t, surface.TextOf(lm.Content), surface.TextOf(m.Content))
		}
	}
	_, ok := l.MessageData(99)
	require.False(t, ok)
}
