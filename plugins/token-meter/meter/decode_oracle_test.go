package meter

import (
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
)

// The reflective decoders that decodeSurface, decodeStep and
// decodeContent replaced, kept as their oracle.

type messageWire struct {
	Content jsontext.Value `json:"content"`
}

type stepMessageWire struct {
	Turn    *int64         `json:"turn"`
	Step    *int64         `json:"step"`
	Message *messageWire   `json:"message"`
	Stream  jsontext.Value `json:"stream"`
	Usage   *surface.Usage `json:"usage"`
}

type stepWire struct {
	Turn *int64 `json:"turn"`
	Step *int64 `json:"step"`
}

func reflectSurface(data []byte, k nodeKind) (surfaceData, error) {
	d := surfaceData{kind: k}
	var content jsontext.Value
	if k == kindUser {
		var m messageWire
		if err := json.Unmarshal(data, &m); err != nil {
			return d, err
		}
		content = m.Content
	} else {
		var w stepMessageWire
		if err := json.Unmarshal(data, &w); err != nil {
			return d, err
		}
		if w.Message == nil {
			return d, errNoMessage
		}
		content, d.stream, d.usage = w.Message.Content, w.Stream, w.Usage
		if w.Turn != nil && w.Step != nil {
			d.at, d.hasStep = stepRef{*w.Turn, *w.Step}, true
		}
	}
	if content.Kind() != '[' {
		return d, errNotArray
	}
	d.content = content
	return d, nil
}

var (
	errNoMessage = &Error{Msg: "no message"}
	errNotArray  = &Error{Msg: "not an array"}
)

func reflectStep(data []byte) (stepRef, bool) {
	var w stepWire
	if err := json.Unmarshal(data, &w); err != nil || w.Turn == nil || w.Step == nil {
		return stepRef{}, false
	}
	return stepRef{*w.Turn, *w.Step}, true
}

func reflectContent(raw []byte) ([]surface.Block, error) {
	var blocks []surface.Block
	err := json.Unmarshal(raw, &blocks)
	return blocks, err
}

// oracleInputs are the scanner's cases and more that only a full decoder
// reads or refuses.
func oracleInputs() []struct {
	kind nodeKind
	data string
} {
	var in []struct {
		kind nodeKind
		data string
	}
	for _, c := range scanCases {
		in = append(in, struct {
			kind nodeKind
			data string
		}{c.kind, c.data})
	}
	for _, data := range []string{
		`null`, ` null `, `{}`, `{"message":{}}`, `{"message":5}`, `{"message":[]}`, `{"message":{"content":null}}`,
		`{"message":{"content":[]},"message":{"content":[]}}`, `{"turn":1,"message":{"content":[]}}`,
		`{"turn":null,"step":1,"message":{"content":[]}}`, `{"turn":"1","step":1,"message":{"content":[]}}`,
		`{"message":{"content":[]},"stream":[1,{"a":null}]}`, `{"message":{"content":[]},"stream":"x"}`,
		`{"message":{"content":[]},"usage":{}}`, `{"message":{"content":[]},"usage":{"inputTokens":null}}`,
		`{"message":{"content":[]},"usage":{"inputTokens":1.5}}`, `{"message":{"content":[]},"usage":{"inputTokens":"1"}}`,
		`{"message":{"content":[]},"usage":{"inputTokens":1,"inputTokens":2}}`, `{"message":{"content":[]},"usage":[]}`,
		`{"message":{"content":[]},"usage":{"InputTokens":3,"x":[]}}`, `{"message":{"content":[{"type":"text","text":"a"}]},"usage":{"outputTokens":-3}}`,
		`{"Message":{"content":[]}}`, `{"message":{"Content":[]}}`, `{"message":{"content":[]}} {}`,
		`{"content":null}`, `{"content":"x"}`, `{"content":[null]}`, `{"content":[{}]}`, `{"content":[{"type":"text","text":"a"}],"content":1}`,
		`{"content":[{"type":"tool-result","content":"x"}]}`, `{"content":[{"type":"tool-result","content":[{"type":"text","text":"x","text":"y"}]}]}`,
		`{"content":[{"type":"tool-call","id":"c","name":"n","arguments":"{}","isError":true}]}`,
		`{"content":[{"type":"tool-result","toolCallId":"c","isError":"yes"}]}`, `{"content":[{"type":1}]}`,
		`{"content":[{"type":"image","data":"a","data":"b"}]}`, "{\"content\":[{\"type\":\"image\",\"x\":\"\xff\"}]}",
		`[]`, `[{"type":"text","text":"a"}]`, `1`, ``, `{`,
	} {
		for _, k := range []nodeKind{kindUser, kindAssistant, kindSystem, kindTool} {
			in = append(in, struct {
				kind nodeKind
				data string
			}{k, data})
		}
	}
	return in
}

func TestDecodeMatchesReflective(t *testing.T) {
	for _, c := range oracleInputs() {
		data := []byte(c.data)
		e := &surface.Event{Seq: 3, Type: c.kind.eventType(), Data: data}
		got, err := decodeSurface(e, c.kind)
		want, werr := reflectSurface(data, c.kind)
		require.Equal(t, werr == nil, err == nil, "%s as %s: reflective error %v, jsontext error %v", data, e.Type, werr, err)
		if err == nil {
			require.Equal(t, want.at, got.at, "%s", data)
			require.Equal(t, want.hasStep, got.hasStep, "%s", data)
			require.Equal(t, string(want.content), string(got.content), "%s", data)
			require.Equal(t, string(want.stream), string(got.stream), "%s", data)
			require.Equal(t, want.usage, got.usage, "%s", data)
		} else {
			require.Equal(t, int64(3), err.Seq)
			require.NotEmpty(t, err.Msg)
		}

		r, serr := decodeStep(e)
		wr, wok := reflectStep(data)
		require.Equal(t, wok, serr == nil, "%s as step data: %v", data, serr)
		require.Equal(t, wr, r, "%s as step data", data)

		for _, raw := range [][]byte{data, got.content} {
			blocks, err := decodeContent(raw)
			wb, werr := reflectContent(raw)
			require.Equal(t, werr == nil, err == nil, "%s as content: reflective error %v, jsontext error %v", raw, werr, err)
			if err == nil {
				require.Equal(t, wb, blocks, "%s as content", raw)
			}
		}
	}
}

func TestDecodeErrorsSayWhy(t *testing.T) {
	e := &surface.Event{Seq: 9, Type: surface.TypeAssistantMessage, Data: []byte(`{"message":{"content":[]},"usage":{"inputTokens":"7"}}`)}
	_, err := decodeSurface(e, kindAssistant)
	require.EqualError(t, err, `token meter: seq 9 (assistant/message): data does not hold a message: member "usage": member "inputTokens": JSON string is not an integer`)
	_, cerr := decodeContent([]byte(`{"type":"text"}`))
	require.EqualError(t, cerr, `message content is unreadable: not a JSON array`)
	e = &surface.Event{Seq: 2, Type: surface.TypeStepStart, Data: []byte(`{"turn":1}`)}
	_, err = decodeStep(e)
	require.EqualError(t, err, `token meter: seq 2 (step/start): step/start needs data.turn and data.step`)
}
