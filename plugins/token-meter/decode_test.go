package tokenmeter

import (
	"bytes"
	"maps"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/plugins/token-meter/meter"
)

// reflectConfig is how the configuration was read before decodeConfig:
// the oracle of TestDecodeConfigMatchesReflective.
type reflectConfig struct {
	Routes   map[string]string `json:"routes"`
	Fallback string            `json:"fallback"`
	Counting string            `json:"counting"`
}

func TestDecodeConfigMatchesReflective(t *testing.T) {
	for _, in := range []string{
		`{}`, `null`, ` {} `, `{"routes":{"openai":"o200k","acme/big":"deepseek-v3"},"fallback":"heuristic","counting":"guest"}`,
		`{"routes":null}`, `{"routes":{}}`, `{"fallback":null}`, `{"counting":null}`,
		`{"routes":{"a":"x","a":"y"}}`, `{"routes":{"a":null}}`, `{"routes":{"a":1}}`, `{"routes":[]}`,
		`{"routes":"x"}`, `{"fallback":1}`, `{"fallback":true}`, `{"counting":"g\u0075est"}`,
		`{"route":{}}`, `{"Routes":{}}`, `{"fallback":"a","fallback":"b"}`, `{"x":null}`,
		`[]`, `1`, `""`, `{"fallback":"a"} {}`, `{"fallback":"a"`, "{\"fallback\":\"\xff\"}",
		`{"routes":{"":"heuristic"}}`, `{"routes":{"a":"b"},"routes":{"c":"d"}}`,
	} {
		want := reflectConfig{Counting: countOnHost}
		werr := json.Unmarshal([]byte(in), &want, json.RejectUnknownMembers(true))
		got := config{Counting: countOnHost}
		err := decodeConfig([]byte(in), &got)
		if (werr == nil) != (err == nil) {
			t.Errorf("%s: reflective error %v, jsontext error %v", in, werr, err)
			continue
		}
		if err == nil && (got.Fallback != want.Fallback || got.Counting != want.Counting ||
			(got.Routes == nil) != (want.Routes == nil) || !maps.Equal(got.Routes, want.Routes)) {
			t.Errorf("%s: got %+v, want %+v", in, got, want)
		}
	}
}

func TestDecodeConfigErrors(t *testing.T) {
	for in, want := range map[string]string{
		`{"route":{}}`:          `unknown object member name "route": the configuration has routes, fallback and counting`,
		`{"routes":{"a":1}}`:    `member "routes": member "a": JSON number is not a string`,
		`{"fallback":["x"]}`:    `member "fallback": JSON array is not a string`,
		`[]`:                    `JSON array is not an object`,
		`{"counting":"h"} true`: `trailing data after the JSON value`,
	} {
		err := decodeConfig([]byte(in), &config{})
		require.EqualError(t, err, want, in)
	}
	_, err := parseConfig([]byte(`{"routes":{"a":"b","a":"c"}}`))
	require.ErrorContains(t, err, "token meter config: ")
	require.ErrorContains(t, err, `duplicate object member name "a"`)
}

func TestMessageContentMatchesReflective(t *testing.T) {
	for _, in := range []string{
		`{"id":"m","role":"user","content":[{"type":"text","text":"hi"}]}`, `{"content":[]}`, `{}`, `null`,
		`{"content":null}`, `{"content":"x"}`, `{"content":[],"content":[]}`, `{"Content":[1]}`,
		`{"content":[1,2]} x`, `{"content":[`, `[]`, `{"source":{"kind":"user","x":[{}]},"content":[{"a":1}]}`,
	} {
		var want struct {
			Content jsontext.Value `json:"content"`
		}
		werr := json.Unmarshal([]byte(in), &want)
		got, err := meter.MessageContent([]byte(in))
		if (werr == nil) != (err == nil) {
			t.Errorf("%s: reflective error %v, jsontext error %v", in, werr, err)
			continue
		}
		if err == nil && !bytes.Equal(got, want.Content) {
			t.Errorf("%s: got %q, want %q", in, got, want.Content)
		}
	}
}
