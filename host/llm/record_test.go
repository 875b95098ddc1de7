package llm

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/surface"
)

func TestRecorderPayloadForms(t *testing.T) {
	a := &assembler{}
	rec := newRecorder(APIOpenAI, EncoderVersion)
	payloads := []struct {
		data   string
		name   string
		isJSON bool
	}{
		{llmtest.Text("ok "), "", true},
		{"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"bad \xff byte\"}}]}", "", false},
		{`{"choices":[{"index":0,"delta":{"content":"dup"}}],"choices":[{"index":0,"delta":{"content":"dup2"}}]}`, "", false},
		{"not json at all", "", false},
		{`{"type":"ping"}`, "ping", true},
		{llmtest.Finish("stop"), "", true},
	}
	for i, p := range payloads {
		kept, isJSON := a.feed([]byte(p.data), p.name)
		require.Equal(t, p.isJSON, isJSON, "payload %d", i)
		rec.chunk(int64(i), kept, isJSON, p.name)
	}
	live := a.result(false)
	live.Stream = rec.finish(-1, nil, 0)
	require.True(t, jsontext.Value(live.Stream).IsValid(), "%s", live.Stream)
	require.Equal(t, []surface.Block{surface.Text("ok bad \uFFFD bytedupdup2")}, live.Content)
	require.Equal(t, FinishStop, live.FinishReason)
	requireReassembles(t, live)
	require.Contains(t, string(live.Stream), `"not json at all"`)
	require.Contains(t, string(live.Stream), `[4,{"type":"ping"},"ping"]`)
}

func TestReassembleRejects(t *testing.T) {
	tests := []struct {
		name, rec, want string
	}{
		{"not JSON", `{"v":1,`, "not readable"},
		{"no version", `{"chunks":[]}`, `no "v"`},
		{"other version", `{"v":2}`, "version 2 is not supported"},
		{"bad entry", `{"v":1,"chunks":[[1]]}`, "chunk 0 is not [ms, payload]"},
		{"bad time", `{"v":1,"chunks":[["x",{}]]}`, "chunk 0 is not [ms, payload]"},
		{"bad event name", `{"v":1,"chunks":[[1,{},7]]}`, "chunk 0 has a non-string event name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Reassemble(jsontext.Value(tt.rec))
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestReassembleEmptyRecords(t *testing.T) {
	res, info, err := ReassembleInfo(jsontext.Value(`{"v":1,"status":429,"headers":{"Retry-After":"2"},"body":{"error":{"message":"slow"}},"error":{"t":3,"code":"RATE_LIMIT","message":"m"}}`))
	require.NoError(t, err)
	require.Empty(t, res.Content)
	require.Nil(t, res.Usage)
	require.Equal(t, StreamInfo{Encoder: 1, Status: 429, Code: CodeRateLimit, Message: "m"}, info, "a record without enc was written by encoder version 1")
}

func TestRecorderResponseBody(t *testing.T) {
	for _, body := range []string{`{"a" : 1}`, "plain \xff text", ""} {
		rec := newRecorder(APIOpenAI, EncoderVersion)
		rec.response(500, nil, []byte(body))
		v := rec.finish(-1, &Error{Code: CodeServer, What: "x"}, 1)
		require.True(t, v.IsValid(), "%q → %s", body, v)
		require.False(t, strings.Contains(string(v), "\xff"))
	}
}

// TestFinishOfRecord checks that FinishOf reads a record as ReassembleInfo
// does, for the payloads it skips and those it decodes.
func TestFinishOfRecord(t *testing.T) {
	chunk := func(payload string) string { return `[0,` + payload + `]` }
	record := func(head string, chunks ...string) string {
		return `{"v":1` + head + `,"chunks":[` + strings.Join(chunks, ",") + `]}`
	}
	text := chunk(`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`)
	call := chunk(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]}}]}`)
	tests := []struct{ name, rec string }{
		{"finish", record("", text, chunk(`{"choices":[{"index":0,"finish_reason":"length"}]}`))},
		{"last finish wins", record("", chunk(`{"choices":[{"index":0,"finish_reason":"stop"}]}`), text, chunk(`{"choices":[{"index":0,"finish_reason":"length"}]}`))},
		{"null finish", record(`,"done":1`, call, chunk(`{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`))},
		{"spaced null finish", record("", chunk(`{"choices":[{"index":0,"finish_reason" :  null}]}`))},
		{"null then finish", record("", chunk(`{"choices":[{"index":0,"finish_reason":null},{"index":0,"finish_reason":"length"}]}`))},
		{"spaced finish", record("", chunk(`{"choices":[{"index":0,"finish_reason" :`+"\n"+` "length"}]}`))},
		{"finish in text", record(`,"done":1`, chunk(`{"choices":[{"index":0,"delta":{"content":"finish_reason\": \"length"}}]}`))},
		{"empty finish", record("", text, chunk(`{"choices":[{"index":0,"finish_reason":""}]}`))},
		{"other choice", record("", text, chunk(`{"choices":[{"index":1,"finish_reason":"length"}]}`))},
		{"done", record(`,"done":1`, text)},
		{"done with a call", record(`,"done":1`, text, call)},
		{"call without done", record("", call)},
		{"escaped finish member", record("", text, chunk(`{"choices":[{"index":0,"finish\u005freason":"length"}]}`))},
		{"escaped call member", record(`,"done":1`, chunk(`{"choices":[{"index":0,"delta":{"tool\u005fcalls":[{"index":0,"id":"c","function":{"name":"f"}}]}}]}`))},
		{"string payload", record(`,"done":1`, chunk(`"{\"choices\":[{\"index\":0,\"finish_reason\":\"stop\"}]}"`))},
		{"named event", record(`,"done":1`, `[0,{"choices":[{"index":0,"finish_reason":"length"}]},"message"]`, `[1,{"choices":[{"index":0,"finish_reason":"stop"}]},"other"]`)},
		{"error event", record("", text, `[0,{"error":{"message":"x"}},"error"]`)},
		{"malformed payload", record(`,"done":1`, chunk(`{"choices":[{"index":0,"finish_reason":"length"}],}`))},
		{"no chunks", `{"v":1,"done":1}`},
		{"anthropic", record(`,"api":"anthropic"`, `[0,{"type":"message_delta","delta":{"stop_reason":"tool_use"}},"message_delta"]`)},
		{"gemini", record(`,"api":"gemini"`, chunk(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}}]},"finishReason":"STOP"}]}`))},
		{"not readable", `{"v":1,`},
		{"no version", `{"chunks":[]}`},
		{"bad entry", `{"v":1,"chunks":[[1]]}`},
		{"api after chunks", `{"v":1,"chunks":[],"api":"gemini"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireFinishOf(t, jsontext.Value(tt.rec))
		})
	}
}
