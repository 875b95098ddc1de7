package llm

import (
	"bytes"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm/llmtest"
)

// FuzzStreamRecord feeds arbitrary payloads (one per line) to the live
// assembler and checks that the record is valid JSON and reassembles to
// the same reply.
func FuzzStreamRecord(f *testing.F) {
	f.Add(strings.Join([]string{llmtest.Reasoning("r"), llmtest.Text("t"), llmtest.ToolCall(0, "c", "f", "{"), llmtest.ToolCall(0, "", "", "}"), llmtest.Finish("tool_calls"), llmtest.Usage(1, 2, 0, 0)}, "\n"))
	f.Add("not json\n{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff\"}}]}\n[1,2]\n\"str\"")
	f.Add(`{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"x"}},{"function":{"arguments":"1"}}]}}]}` + "\n" + `{"error":"boom"}`)
	f.Add(`{"choices":{"index":0},"usage":{"prompt_tokens":"x"}}` + "\n" + `{"choices":[{"index":0,"delta":{"content":[{"text":"a"},{"type":"x"},7]}}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		a := &assembler{}
		rec := newRecorder(APIOpenAI, EncoderVersion)
		for i, line := range strings.Split(in, "\n") {
			name := ""
			if i%5 == 4 {
				name = "message"
			}
			kept, isJSON := a.feed([]byte(line), name)
			rec.chunk(int64(i), kept, isJSON, name)
		}
		res := a.result(false)
		res.Stream = rec.finish(-1, nil, 0)
		require.True(t, jsontext.Value(res.Stream).IsValid(), "%q", res.Stream)
		requireReassembles(t, res)
	})
}

// FuzzSSE checks that the event splitter gives the same events however the
// input is cut into reads.
func FuzzSSE(f *testing.F) {
	f.Add("data: a\r\n\r\ndata: b\rdata: c\r\r: x\nevent: e\ndata\n\n")
	f.Add("\xEF\xBB\xBFdata: a\n\ndata: [DONE]\n")
	f.Fuzz(func(t *testing.T, in string) {
		whole, err1 := readEvents(t, strings.NewReader(in))
		bytewise, err2 := readEvents(t, iotest.OneByteReader(bytes.NewReader([]byte(in))))
		require.Equal(t, err1, err2)
		require.Equal(t, whole, bytewise)
	})
}

// FuzzNativeStreamRecord is FuzzStreamRecord for the Anthropic and Gemini
// readers: each line is "event<TAB>payload" (Anthropic) or a payload
// (Gemini); the record must be valid JSON and reassemble to the reply.
func FuzzNativeStreamRecord(f *testing.F) {
	ev := func(s string) string {
		s = strings.TrimSuffix(strings.TrimPrefix(s, "event: "), "\n\n")
		name, data, _ := strings.Cut(s, "\ndata: ")
		return name + "\t" + data
	}
	f.Add(true, strings.Join([]string{ev(llmtest.MessageStart(1, 2, 3)), ev(llmtest.ThinkingStart(0)), ev(llmtest.ThinkingDelta(0, "t")),
		ev(llmtest.SignatureDelta(0, "s")), ev(llmtest.ToolUseStart(1, "id", "f")), ev(llmtest.InputJSONDelta(1, `{"a"`)),
		ev(llmtest.InputJSONDelta(7, `:1}`)), ev(llmtest.MessageDelta("tool_use", 4)), ev(llmtest.MessageStop())}, "\n"))
	f.Add(true, "error\tnot json\nping\t{}\ncontent_block_delta\t{\"index\":\"x\",\"delta\":{\"type\":\"text_delta\",\"text\":\"\xff\"}}")
	f.Add(false, strings.Join([]string{
		strings.TrimSpace(strings.TrimPrefix(llmtest.GeminiParts("", "", llmtest.GeminiThoughtPart("a"), llmtest.GeminiCallPart("f", `{"x":[1]}`, "c2ln")), "data: ")),
		strings.TrimSpace(strings.TrimPrefix(llmtest.GeminiParts("STOP", llmtest.GeminiUsage(9, 4, 2, 1), llmtest.GeminiTextPart("b")), "data: ")),
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"g","args":"notobj"}}]}}]}`, `{"error":{"code":500}}`}, "\n"))
	f.Fuzz(func(t *testing.T, anthropic bool, in string) {
		api := APIGemini
		if anthropic {
			api = APIAnthropic
		}
		a := &assembler{api: api}
		rec := newRecorder(api, EncoderVersion)
		for i, line := range strings.Split(in, "\n") {
			name := ""
			if anthropic {
				name, line, _ = strings.Cut(line, "\t")
			}
			kept, isJSON := a.feed([]byte(line), name)
			rec.chunk(int64(i), kept, isJSON, name)
		}
		res := a.result(a.stopped)
		done := int64(-1)
		if a.stopped {
			done = 1
		}
		res.Stream = rec.finish(done, nil, 0)
		require.True(t, jsontext.Value(res.Stream).IsValid(), "%q", res.Stream)
		requireReassembles(t, res)
	})
}
