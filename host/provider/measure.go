package provider

import (
	"fmt"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/surface"
)

// toABIMeasurement converts a host measurement for the measure import. The
// breakdown carries user, assistant and tool results both summed (the
// message category of minor 0) and split (minor 1).
func toABIMeasurement(m *host.Measurement) (*abi.Measurement, error) {
	out := &abi.Measurement{
		LogRevision:        m.LogRevision,
		Baseline:           abi.Baseline{Tokens: m.BaselineTokens},
		SurfaceDeltaTokens: m.SurfaceDeltaTokens,
		TotalTokens:        m.TotalTokens,
		SurfaceTokens:      m.SurfaceTokens,
		Nodes:              make([]abi.NodeTokens, len(m.Nodes)),
		Breakdown: abi.Breakdown{
			SystemTokens:     m.Breakdown.System,
			ToolsTokens:      m.Breakdown.Tools,
			MessageTokens:    m.Breakdown.User + m.Breakdown.Assistant + m.Breakdown.ToolResults,
			UserTokens:       m.Breakdown.User,
			AssistantTokens:  m.Breakdown.Assistant,
			ToolResultTokens: m.Breakdown.ToolResults,
		},
		Tokenizer: m.Tokenizer,
	}
	if m.EstimateError != nil {
		out.EstimateError, out.HasEstimateError = *m.EstimateError, true
	}
	switch m.Baseline {
	case "none", "":
		out.Baseline.Kind = abi.BaselineNone
	case "estimated":
		out.Baseline.Kind = abi.BaselineEstimated
	case "usage":
		out.Baseline.Kind = abi.BaselineUsage
	default:
		return nil, fmt.Errorf("the meter's baseline %q is not none, estimated or usage", m.Baseline)
	}
	for i, n := range m.Nodes {
		out.Nodes[i] = abi.NodeTokens{Seq: n.Seq, Tokens: n.Tokens, HeuristicTokens: n.HeuristicTokens}
	}
	return out, nil
}

// fromABIMeasurement converts a plugin's measurement, with its estimate
// error and tokenizer name when the plugin sends them. The breakdown's
// user/assistant/tool-result split is the plugin's when it adds up to the
// message total (abi.Breakdown.HasSplit). Otherwise (a meter of ABI minor
// 0 sends only the total) the total is split by the type of each priced
// node (looked up with typeOf): assistant/message nodes count as
// Assistant, tool/result nodes as ToolResults, the rest (user messages,
// earlier system messages) as User.
func fromABIMeasurement(m *abi.Measurement, typeOf func(seq int64) string) (*host.Measurement, error) {
	out := &host.Measurement{
		LogRevision:        m.LogRevision,
		BaselineTokens:     m.Baseline.Tokens,
		SurfaceDeltaTokens: m.SurfaceDeltaTokens,
		TotalTokens:        m.TotalTokens,
		SurfaceTokens:      m.SurfaceTokens,
		Nodes:              make([]host.NodeTokens, len(m.Nodes)),
		Breakdown:          host.Breakdown{System: m.Breakdown.SystemTokens, Tools: m.Breakdown.ToolsTokens},
		Tokenizer:          m.Tokenizer,
	}
	if m.HasEstimateError {
		e := m.EstimateError
		out.EstimateError = &e
	}
	switch m.Baseline.Kind {
	case abi.BaselineNone:
		out.Baseline = "none"
	case abi.BaselineEstimated:
		out.Baseline = "estimated"
	case abi.BaselineUsage:
		out.Baseline = "usage"
	default:
		return nil, fmt.Errorf("malformed measurement: unknown baseline kind %d", m.Baseline.Kind)
	}
	for i, n := range m.Nodes {
		out.Nodes[i] = host.NodeTokens{Seq: n.Seq, Tokens: n.Tokens, HeuristicTokens: n.HeuristicTokens}
	}
	if m.Breakdown.HasSplit() {
		out.Breakdown.User = m.Breakdown.UserTokens
		out.Breakdown.Assistant = m.Breakdown.AssistantTokens
		out.Breakdown.ToolResults = m.Breakdown.ToolResultTokens
		return out, nil
	}
	var assistant, tools int64
	if typeOf != nil {
		for _, n := range m.Nodes {
			switch typeOf(n.Seq) {
			case surface.TypeAssistantMessage:
				assistant += n.Tokens
			case surface.TypeToolResult:
				tools += n.Tokens
			}
		}
	}
	msgs := m.Breakdown.MessageTokens
	if assistant+tools > msgs {
		// The nodes do not add up to the plugin's message total: keep the
		// total as one category rather than invent a split.
		assistant, tools = 0, 0
	}
	out.Breakdown.Assistant, out.Breakdown.ToolResults = assistant, tools
	out.Breakdown.User = msgs - assistant - tools
	return out, nil
}

func cloneMeasurement(m *host.Measurement) *host.Measurement {
	c := *m
	c.Nodes = append([]host.NodeTokens(nil), m.Nodes...)
	if m.EstimateError != nil {
		e := *m.EstimateError
		c.EstimateError = &e
	}
	return &c
}
