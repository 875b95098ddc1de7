package surface_test

import (
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
)

// The reflection-free decoders that guests use (DecodeHeader, DecodeUsage,
// DecodeBlocks, DecodeMessage) accept what json.Unmarshal into the same
// type accepts, with the same value, and refuse what it refuses.

var headerSeeds = []string{
	`{"config":{"provider":"deepseek","model":"deepseek-chat"}}`,
	`{"config":{"provider":"p","model":"m","reasoningEffort":"high","temperature":0.5,"maxTokens":100,"stop":["a","b"]},"adapterDefaults":{"maxTokens":true},"tools":[{"name":"t"} , {"name":"u","x":[1,2]}]}`,
	`{"config":null,"tools":null,"adapterDefaults":null}`,
	`{"tools":[]}`,
	`{"unknown":{"deep":[1,{"x":null}]},"config":{"provider":"p"}}`,
	` {"config":{"provider":"p","model":"m"}} `,
	`{"config":{"temperature":"hot"}}`,
	`{"config":{"maxTokens":1.5}}`,
	`{"config":{"maxTokens":1e3}}`,
	`{"adapterDefaults":{"maxTokens":1}}`,
	`{"adapterDefaults":{"maxTokens":false,"other":3}}`,
	`{"adapterDefaults":[]}`,
	`{"tools":{}}`,
	`{"config":{"provider":"a","provider":"b"}}`,
	`{"config":{"Provider":"a"}}`,
	`[]`,
	`null`,
	`{"config":{}} {}`,
	`{"config":{"provider":"\ud800"}}`,
	``,
}

func TestDecodeHeaderIsUnmarshal(t *testing.T) {
	for _, s := range headerSeeds {
		checkDecodeHeader(t, []byte(s))
	}
}

func FuzzDecodeHeader(f *testing.F) {
	for _, s := range headerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkDecodeHeader)
}

func checkDecodeHeader(t *testing.T, b []byte) {
	sameAsUnmarshal(t, b, surface.DecodeHeader, "DecodeHeader")
}

var usageSeeds = []string{
	`{"inputTokens":10,"outputTokens":5}`,
	`{"inputTokens":10,"outputTokens":5,"cacheReadTokens":3,"cacheWriteTokens":2,"reasoningTokens":1,"extra":{"a":[]}}`,
	`{"inputTokens":null}`,
	`{"inputTokens":-4}`,
	`{"inputTokens":1.0}`,
	`{"inputTokens":1e2}`,
	`{"inputTokens":9223372036854775808}`,
	`{"inputTokens":"3"}`,
	`{"inputTokens":1,"inputTokens":2}`,
	`{"InputTokens":1}`,
	`[1]`,
	`null`,
	`{} x`,
}

func TestDecodeUsageIsUnmarshal(t *testing.T) {
	for _, s := range usageSeeds {
		checkDecodeUsage(t, []byte(s))
	}
}

func FuzzDecodeUsage(f *testing.F) {
	for _, s := range usageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkDecodeUsage)
}

func checkDecodeUsage(t *testing.T, b []byte) {
	sameAsUnmarshal(t, b, surface.DecodeUsage, "DecodeUsage")
}

var blockSeeds = []string{
	`[{"type":"text","text":"hi"}]`,
	`[{"type":"text","text":"a"},{"type":"reasoning","text":"b","signature":"s"},{"type":"toolCall","id":"c1","name":"f","arguments":"{}"}]`,
	`[]`,
	`null`,
	`[{"type":"image","data":"x"}]`,
	`[{"type":"text","text":1}]`,
	`{"type":"text"}`,
	`[{"type":"text","text":"a","text":"b"}]`,
	`[] []`,
}

func TestDecodeBlocksIsUnmarshal(t *testing.T) {
	for _, s := range blockSeeds {
		checkDecodeBlocks(t, []byte(s))
	}
}

func FuzzDecodeBlocks(f *testing.F) {
	for _, s := range blockSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkDecodeBlocks)
}

func checkDecodeBlocks(t *testing.T, b []byte) {
	sameAsUnmarshal(t, b, surface.DecodeBlocks, "DecodeBlocks")
}

// sameAsUnmarshal checks decode against json.Unmarshal into the same type:
// both refuse b, or both accept it with equal values.
func sameAsUnmarshal[T any](t *testing.T, b []byte, decode func([]byte) (T, error), name string) {
	t.Helper()
	var want T
	werr := json.Unmarshal(b, &want)
	got, gerr := decode(b)
	if werr != nil {
		require.Error(t, gerr, "%s accepted %q, which json.Unmarshal refuses: %v", name, b, werr)
		return
	}
	require.NoError(t, gerr, "%s refused %q, which json.Unmarshal accepts", name, b)
	require.Equal(t, want, got, "%q", b)
}
