package compact

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
)

// Each hand encoder writes what surface.Data (reflection) writes.
func TestDataEncodersAreData(t *testing.T) {
	turn := int64(7)
	usage := &surface.Usage{Input: 10, Output: 3, CacheRead: 2}
	tests := []struct {
		name string
		v    any
		got  func() ([]byte, error)
	}{
		{"start", startData{"cmp-1", &turn}, startData{"cmp-1", &turn}.encode},
		{"start, no turn", startData{"cmp-\"x\"<", nil}, startData{"cmp-\"x\"<", nil}.encode},
		{"end", endData{CompactionID: "c", Turn: &turn, TokensBefore: 900, TokensAfter: 300, Warning: "w"},
			endData{CompactionID: "c", Turn: &turn, TokensBefore: 900, TokensAfter: 300, Warning: "w"}.encode},
		{"end, failed", endData{CompactionID: "c", Error: "boom \u2028"}, endData{CompactionID: "c", Error: "boom \u2028"}.encode},
		{"summary, least", summaryData{}, summaryData{}.encode},
		{"summary, all", summaryData{CompactionID: "c", Summary: "s\n\"q\"", RawOutput: []surface.Block{surface.Text("a"), {Type: "x", Unknown: []byte(`{"type":"x","k":1}`)}},
			LLMStreamCall: true, ShadowedRange: rangeData{3, 9}, ShadowedSeqs: []int64{3, 5, 9}, ShadowedTokenCount: 44,
			Provider: "p", Model: "m", MaxTokens: 512, Usage: usage},
			summaryData{CompactionID: "c", Summary: "s\n\"q\"", RawOutput: []surface.Block{surface.Text("a"), {Type: "x", Unknown: []byte(`{"type":"x","k":1}`)}},
				LLMStreamCall: true, ShadowedRange: rangeData{3, 9}, ShadowedSeqs: []int64{3, 5, 9}, ShadowedTokenCount: 44,
				Provider: "p", Model: "m", MaxTokens: 512, Usage: usage}.encode},
		{"summary, empty raw output", summaryData{RawOutput: []surface.Block{}, Usage: &surface.Usage{}},
			summaryData{RawOutput: []surface.Block{}, Usage: &surface.Usage{}}.encode},
		{"checkpoint source", struct {
			CompactionID string `json:"compactionId"`
		}{"cmp-9"}, func() ([]byte, error) { return checkpointSource("cmp-9") }},
		{"block", surface.Block{Type: surface.BlockToolCall, ID: "1", Name: "f", Arguments: `{"a":1}`},
			func() ([]byte, error) {
				return encodeBlock(&surface.Block{Type: surface.BlockToolCall, ID: "1", Name: "f", Arguments: `{"a":1}`})
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := surface.Data(tt.v)
			require.NoError(t, err)
			got, err := tt.got()
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		})
	}
}
