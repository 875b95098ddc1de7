package provider

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/surface"
)

func TestFromABIMeasurement(t *testing.T) {
	types := map[int64]string{1: surface.TypeUserMessage, 2: surface.TypeAssistantMessage, 3: surface.TypeToolResult}
	typeOf := func(seq int64) string { return types[seq] }
	nodes := []abi.NodeTokens{{Seq: 1, Tokens: 10}, {Seq: 2, Tokens: 20}, {Seq: 3, Tokens: 30}}
	zero := int64(0)
	minus := int64(-7)
	cases := []struct {
		name          string
		in            abi.Measurement
		want          host.Breakdown
		estimateError *int64
		tokenizer     string
	}{
		{"minor 0: the split is rebuilt from the node types",
			abi.Measurement{Nodes: nodes, Breakdown: abi.Breakdown{SystemTokens: 4, ToolsTokens: 5, MessageTokens: 60}},
			host.Breakdown{System: 4, User: 10, Assistant: 20, ToolResults: 30, Tools: 5}, nil, ""},
		{"minor 0, nodes exceed the total: one category",
			abi.Measurement{Nodes: nodes, Breakdown: abi.Breakdown{MessageTokens: 40}},
			host.Breakdown{User: 40}, nil, ""},
		{"minor 1: the guest's split wins over the node types",
			abi.Measurement{Nodes: nodes, Breakdown: abi.Breakdown{SystemTokens: 4, ToolsTokens: 5, MessageTokens: 60,
				UserTokens: 25, AssistantTokens: 15, ToolResultTokens: 20},
				EstimateError: -7, HasEstimateError: true, Tokenizer: "o200k_base"},
			host.Breakdown{System: 4, User: 25, Assistant: 15, ToolResults: 20, Tools: 5}, &minus, "o200k_base"},
		{"minor 1: an estimate error of 0 stays present",
			abi.Measurement{Breakdown: abi.Breakdown{MessageTokens: 3, UserTokens: 3}, HasEstimateError: true, Tokenizer: "heuristic"},
			host.Breakdown{User: 3}, &zero, "heuristic"},
		{"a split that does not add up is rebuilt",
			abi.Measurement{Nodes: nodes, Breakdown: abi.Breakdown{MessageTokens: 60, UserTokens: 1, AssistantTokens: 1}},
			host.Breakdown{User: 10, Assistant: 20, ToolResults: 30}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fromABIMeasurement(&tc.in, typeOf)
			require.NoError(t, err)
			require.Equal(t, tc.want, got.Breakdown)
			require.Equal(t, tc.estimateError, got.EstimateError)
			require.Equal(t, tc.tokenizer, got.Tokenizer)
			require.Len(t, got.Nodes, len(tc.in.Nodes))
		})
	}
}

// A host measurement survives the trip through the ABI, as the measure
// import hands it to a plugin and as a meter plugin hands it back.
func TestMeasurementRoundTrip(t *testing.T) {
	e := int64(12)
	for _, in := range []*host.Measurement{
		{LogRevision: 9, Baseline: "usage", BaselineTokens: 800, SurfaceDeltaTokens: 20, TotalTokens: 820, SurfaceTokens: 600,
			Nodes:         []host.NodeTokens{{Seq: 2, Tokens: 600, HeuristicTokens: 650}},
			Breakdown:     host.Breakdown{System: 50, User: 300, Assistant: 200, ToolResults: 100, Tools: 70},
			EstimateError: &e, Tokenizer: "deepseek-v3"},
		{Baseline: "none", Nodes: []host.NodeTokens{}},
	} {
		wire, err := toABIMeasurement(in)
		require.NoError(t, err)
		var dec abi.Measurement
		require.NoError(t, dec.Decode(wire.Encode(nil)))
		got, err := fromABIMeasurement(&dec, nil)
		require.NoError(t, err)
		require.Equal(t, in, got)
	}
}
