package compact

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// TestG6_ReportedFigures pins the definitions docs/authors.md states for
// the figures of a bracket, with a token meter whose prices differ from
// the fixed estimate so that each figure's unit is visible:
// shadowedTokenCount sums the shadowed nodes' heuristic prices,
// tokensBefore is the meter's total, tokensAfter is that total minus the
// shadowed nodes' meter prices plus the checkpoint's heuristic price.
func TestG6_ReportedFigures(t *testing.T) {
	b := conversation(t)
	s := b.session()
	const meterExtra = 1000 // what the meter counts beyond the nodes (tools, framing)
	s.measure = func(s *fakeSession) (*Measurement, error) {
		m, err := Estimate(s)
		if err != nil {
			return nil, err
		}
		m.TotalTokens = meterExtra
		for i := range m.Nodes {
			m.Nodes[i].Tokens = 3*m.Nodes[i].HeuristicTokens + 1
			m.TotalTokens += m.Nodes[i].Tokens
		}
		return m, nil
	}
	meter, err := s.Measure()
	require.NoError(t, err)
	var meterSpan, heurSpan int64
	for _, n := range meter.Nodes[1 : len(meter.Nodes)-1] {
		meterSpan += n.Tokens
		heurSpan += n.HeuristicTokens
	}
	require.NotEqual(t, meterSpan, heurSpan)

	out, err := Compact(s, DefaultConfig(), Request{Reason: Overflow, Turn: 1, SessionID: "sess"}, &State{})
	require.NoError(t, err)
	require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeUserMessage, surface.TypeCompactionEnd}, types(out.Proposals))
	sum, end := decode(t, out.Proposals[1].Data), decode(t, out.Proposals[3].Data)
	next := s.l.NextSeq()
	_, err = s.admit(out.Proposals)
	require.NoError(t, err)
	cp, ok := s.l.Message(next + 2)
	require.True(t, ok)
	checkpoint := EstimateNode(surface.TypeUserMessage, cp)

	require.Equal(t, float64(heurSpan), sum["shadowedTokenCount"], "shadowedTokenCount: heuristic prices of the shadowed nodes")
	require.Equal(t, float64(meter.TotalTokens), end["tokensBefore"], "tokensBefore: the meter's total")
	require.Equal(t, float64(meter.TotalTokens-meterSpan+checkpoint), end["tokensAfter"], "tokensAfter: total - span's meter prices + checkpoint's estimate")
}
