package host

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// A dry run reports what the compaction would do and leaves the session,
// its store and its generations exactly as they were; running the
// compaction for real afterwards does what the receipt said.
func TestCompactDryRun(t *testing.T) {
	comp := &checkpointCompactor{}
	h := newHarness(t, "sys", func(c *Config) { c.Compactors = []CompactionProvider{comp} })
	h.model.then(reply("one"), reply("two"))
	h.turn("first")
	h.turn("second")
	l := h.s.Log()
	events, nodes, gen := l.Len(), l.Nodes(), l.ReplaceGeneration()

	r, err := h.a.CompactDryRun(context.Background())
	require.NoError(t, err)
	require.Equal(t, events, l.Len(), "the dry run appended to the session")
	require.Equal(t, nodes, l.Nodes())
	require.Equal(t, gen, l.ReplaceGeneration())
	require.True(t, r.Changed)
	require.Equal(t, len(nodes), r.NodesBefore)
	require.Equal(t, 2, r.NodesAfter)
	require.Len(t, r.Compactions, 1)
	c := r.Compactions[0]
	require.Equal(t, "test-compactor", c.Provider)
	require.Equal(t, nodes[1:], c.Shadowed)
	require.Equal(t, nodes[1], c.Start)
	require.Equal(t, nodes[len(nodes)-1], c.End)
	require.Equal(t, "<compacted-summary>summary</compacted-summary>", c.Checkpoint)

	changed, err := h.a.CompactNow(context.Background())
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, r.NodesAfter, l.NodeCount())
}

func TestCompactDryRunRefusesAnOpenTurn(t *testing.T) {
	h := newHarness(t, "sys", func(c *Config) { c.Compactors = []CompactionProvider{&checkpointCompactor{}} })
	_, err := h.s.Propose(Proposer{Kind: ByLoop}, surface.Proposal{Type: surface.TypeTurnStart, Data: []byte(`{"turn":1}`)})
	require.NoError(t, err)
	_, err = h.a.CompactDryRun(context.Background())
	require.ErrorContains(t, err, "turn 1 is open")
}
