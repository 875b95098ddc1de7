package host

import (
	"bytes"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/surface"
)

// TestEventDataMatchesData pins eventData to surface.Data: the same bytes
// for every value, or an error from both.
func TestEventDataMatchesData(t *testing.T) {
	msg := surface.Message{ID: "m1", Role: surface.RoleAssistant,
		Source: surface.Source{Kind: "model", Provider: "p", Model: "m <&> é"},
		Content: []surface.Block{
			surface.Text("hi \"there\" <b>&\u2028 \U0001F600"),
			{Type: surface.BlockReasoning, Text: "think", Unknown: jsontext.Value(`{"signature":"s","z":[1, 2]}`)},
			surface.ToolCall("c1", "read", `{"path": "a.go"}`),
		}}
	result := surface.Message{ID: "t1", Role: surface.RoleUser, Source: surface.Source{Kind: "tool", CallID: "c1"},
		Content: []surface.Block{{Type: surface.BlockToolResult, ToolCallID: "c1", IsError: true,
			Content: []surface.Block{surface.Text("no such file")}}}}
	empty := surface.Message{ID: "e", Role: surface.RoleUser, Source: surface.Source{Kind: "user"}, Content: []surface.Block{}}
	stream := jsontext.Value(`{"v":1,"chunks":[[0,{"choices":[{"index":0,"delta":{"content":"hi"}}]}],[3,"x","error"]],"done":1}`)
	tests := []struct {
		name string
		v    any
	}{
		{"message", msg},
		{"message pointer", &msg},
		{"nil message pointer", (*surface.Message)(nil)},
		{"empty message", empty},
		{"zero message", surface.Message{}},
		{"system step message", surface.StepMessage{Turn: 3, Step: 1, Message: surface.SystemMessage("s1", "system-prompt", "be brief")}},
		{"settlement", surface.StepMessage{Turn: 1, Step: 2, Message: msg, Stream: stream, Usage: &surface.Usage{Input: 10, Output: 5}}},
		{"full usage", surface.StepMessage{Turn: 1, Step: 2, Message: msg, Stream: stream,
			Usage: &surface.Usage{Input: 1, Output: 2, CacheRead: 3, CacheWrite: 4, Reasoning: 5}, Interrupted: true}},
		{"zero usage", surface.StepMessage{Message: msg, Usage: &surface.Usage{}}},
		{"spaced stream", surface.StepMessage{Turn: 1, Message: msg, Stream: jsontext.Value(" {\"v\" : 1,\n \"chunks\": [ ] } ")}},
		{"meta", surface.StepMessage{Turn: 1, Step: 1, Message: result, Meta: jsontext.Value(`{"ms":12}`)}},
		{"tool error", surface.StepMessage{Turn: 1, Step: 1, Message: result, Error: &surface.ToolError{Name: "read", Code: "failed"}}},
		{"empty stream", surface.StepMessage{Message: msg, Stream: jsontext.Value{}}},
		{"invalid stream", surface.StepMessage{Message: msg, Stream: jsontext.Value(`{"v":`)}},
		{"duplicate stream member", surface.StepMessage{Message: msg, Stream: jsontext.Value(`{"v":1,"v":2}`)}},
		{"invalid utf-8", surface.StepMessage{Message: surface.Message{ID: "x\xff", Role: "user"}}},
		{"step ref", StepRef{Turn: 4, Step: 2}},
		{"turn ref", StepRef{Turn: 4}},
		{"attempt", Attempt{Turn: 2, Step: 3, Stream: stream}},
		{"attempt without stream", Attempt{Turn: 2, Step: 3}},
		{"other", map[string]any{"b": 1, "a": []int{2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, werr := surface.Data(tt.v)
			got, gerr := eventData(tt.v)
			if (werr != nil) != (gerr != nil) {
				t.Fatalf("eventData error %v, surface.Data error %v", gerr, werr)
			}
			if werr == nil && !bytes.Equal(got, want) {
				t.Errorf("eventData wrote\n%s\nsurface.Data writes\n%s", got, want)
			}
		})
	}
}

// BenchmarkEventData encodes an assistant settlement, as the loop does
// for every reply.
func BenchmarkEventData(b *testing.B) {
	msg := surface.Message{ID: "m1", Role: surface.RoleAssistant, Source: surface.Source{Kind: "model", Provider: "p", Model: "m"},
		Content: []surface.Block{surface.Text("a reply of some length"), surface.ToolCall("c1", "read", `{"path":"a.go"}`)}}
	sm := surface.StepMessage{Turn: 1, Step: 2, Message: msg, Usage: &surface.Usage{Input: 10, Output: 5},
		Stream: jsontext.Value(`{"v":1,"chunks":[[0,{"choices":[{"index":0,"delta":{"content":"a reply of some length"}}]}]],"done":1}`)}
	for _, bb := range []struct {
		name string
		fn   func(any) ([]byte, error)
	}{{"reflect", surface.Data}, {"direct", eventData}} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := bb.fn(sm); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
