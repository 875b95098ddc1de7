package meter

import (
	"strconv"
	"testing"

	"github.com/go-json-experiment/json"
)

// The reflective decoders the projections used, kept as the oracle of
// decodeShadowPrice and decodeContextWindow.
type shadowWire struct {
	Range *struct {
		Start *int64 `json:"start"`
		End   *int64 `json:"end"`
	} `json:"shadowedRange"`
	Count *int64 `json:"shadowedTokenCount"`
}

type contextWire struct {
	ContextWindow *int64 `json:"contextWindow"`
}

var wireInputs = []string{
	`{}`, `null`, ` {} `, `{"x":1}`,
	`{"shadowedRange":{"start":3,"end":5},"shadowedTokenCount":40}`,
	`{"shadowedRange":{"start":3},"shadowedTokenCount":40}`,
	`{"shadowedRange":{},"shadowedTokenCount":null}`,
	`{"shadowedRange":null,"shadowedTokenCount":7}`,
	`{"shadowedRange":{"start":-1,"end":9223372036854775807},"shadowedTokenCount":0}`,
	`{"shadowedRange":{"start":9223372036854775808}}`,
	`{"shadowedRange":{"start":1.5}}`, `{"shadowedRange":{"start":1e2}}`, `{"shadowedRange":{"start":-0}}`,
	`{"shadowedRange":{"start":"3"}}`, `{"shadowedRange":[]}`, `{"shadowedRange":1}`,
	`{"shadowedTokenCount":true}`, `{"ShadowedTokenCount":3}`, `{"shadowedtokencount":3}`,
	`{"shadowedTokenCount":1,"shadowedTokenCount":2}`,
	`{"shadowedRange":{"start":1,"start":2}}`,
	`{"contextWindow":128000}`, `{"contextWindow":null}`, `{"contextWindow":"big"}`, `{"contextWindow":-5}`,
	`{"contextWindow":1,"contextWindow":1}`, `{"contextWindow":12.0}`, `{"ContextWindow":1}`,
	`{"contextWindow":1}{}`, `{"contextWindow":1} x`, `{"contextWindow":1`, `{"contextWindow":1,}`,
	`[]`, `1`, `"x"`, `true`, ``, `{"\u0063ontextWindow":4}`, "{\"x\":\"\xff\"}",
	`{"nested":{"contextWindow":4},"contextWindow":5}`,
}

func TestDecodeShadowPriceMatchesReflective(t *testing.T) {
	for _, in := range wireInputs {
		var w shadowWire
		werr := json.Unmarshal([]byte(in), &w)
		got, err := decodeShadowPrice([]byte(in))
		if (werr == nil) != (err == nil) {
			t.Errorf("%s: reflective error %v, jsontext error %v", in, werr, err)
			continue
		}
		if err != nil {
			continue
		}
		want := shadowPrice{count: w.Count}
		if w.Range != nil {
			want.hasRange, want.start, want.end = true, w.Range.Start, w.Range.End
		}
		if !sameShadow(got, want) {
			t.Errorf("%s: got %s, want %s", in, showShadow(got), showShadow(want))
		}
	}
}

func TestDecodeContextWindowMatchesReflective(t *testing.T) {
	for _, in := range wireInputs {
		var w contextWire
		werr := json.Unmarshal([]byte(in), &w)
		got, err := decodeContextWindow([]byte(in))
		if (werr == nil) != (err == nil) {
			t.Errorf("%s: reflective error %v, jsontext error %v", in, werr, err)
			continue
		}
		if err == nil && !sameInt(got, w.ContextWindow) {
			t.Errorf("%s: got %s, want %s", in, showInt(got), showInt(w.ContextWindow))
		}
	}
}

func TestWireErrorsSayWhy(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"shadowedTokenCount":"3"}`, `member "shadowedTokenCount": JSON string is not an integer`},
		{`{"shadowedRange":{"start":1.5}}`, `member "shadowedRange": member "start": JSON number 1.5 is not a 64-bit integer`},
		{`[]`, `JSON array is not an object`},
	} {
		_, err := decodeShadowPrice([]byte(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

func sameInt(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func sameShadow(a, b shadowPrice) bool {
	return a.hasRange == b.hasRange && sameInt(a.start, b.start) && sameInt(a.end, b.end) && sameInt(a.count, b.count)
}

func showInt(p *int64) string {
	if p == nil {
		return "nil"
	}
	return strconv.FormatInt(*p, 10)
}

func showShadow(s shadowPrice) string {
	return "{range " + strconv.FormatBool(s.hasRange) + " " + showInt(s.start) + ".." + showInt(s.end) + " count " + showInt(s.count) + "}"
}
