package surface_test

import (
	"bytes"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
)

// Usage.MarshalJSONTo writes what reflection over Usage's struct tags
// writes; plainUsage has the tags and not the method.
type plainUsage surface.Usage

func TestUsageMarshalIsReflective(t *testing.T) {
	for _, u := range []surface.Usage{
		{},
		{Input: 1, Output: 2},
		{Input: -3, Output: 0, CacheRead: 4},
		{CacheWrite: 5},
		{Reasoning: -1 << 63},
		{Input: 1<<63 - 1, Output: 7, CacheRead: 8, CacheWrite: 9, Reasoning: 10},
	} {
		checkUsageMarshal(t, u)
	}
}

func FuzzUsageMarshal(f *testing.F) {
	f.Add(int64(1), int64(2), int64(0), int64(3), int64(0))
	f.Fuzz(func(t *testing.T, in, out, cr, cw, r int64) {
		checkUsageMarshal(t, surface.Usage{Input: in, Output: out, CacheRead: cr, CacheWrite: cw, Reasoning: r})
	})
}

func checkUsageMarshal(t *testing.T, u surface.Usage) {
	t.Helper()
	want, err := json.Marshal(plainUsage(u))
	require.NoError(t, err)
	var buf bytes.Buffer
	enc := jsontext.NewEncoder(&buf)
	require.NoError(t, u.MarshalJSONTo(enc))
	require.Equal(t, string(want), string(bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})), "%+v", u)
	viaMethod, err := json.Marshal(u)
	require.NoError(t, err)
	require.Equal(t, string(want), string(viaMethod), "json.Marshal uses the method")
}
