package compactionbasic

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	adapter "github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/plugins"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/surface"
)

// regionSession is three turns, the second with a tool call:
// [S, U1, A1, U2, A(call), T, A2, U3, A3].
func regionSession(t *testing.T) *wh {
	h := newWH(t, "You are helpful.", `{}`, func(h *wh) { h.cfg.Tools = []host.Tool{echo} })
	h.model.then(say(words(100)))
	h.turn(words(100))
	h.model.then(callTool("c1"), say(words(50)))
	h.turn(words(100))
	h.turn("third")
	require.Len(t, h.s.Log().Nodes(), 9)
	return h
}

// compaction.region through the real host: the module declares it, the
// host validates the request, and the plugin summarizes exactly the span
// (tool pair included), keeping node 0 and every node outside the span;
// between turns the bracket has no owner turn.
func TestRegion_WASM_CompactsExactlyTheSpan(t *testing.T) {
	p := loadFirstParty(t, plugins.CompactionBasic, adapter.RoleCompaction, `{}`)
	require.Equal(t, []abi.Method{abi.MethodCompactionRegion}, p.Description().Methods)
	h := regionSession(t)
	require.True(t, h.comp.CompactsRegion())
	before := h.s.Log().Nodes()
	events := len(h.s.Log().Events())
	ctx := context.Background()

	// Refused by the host before any call.
	_, err := h.a.CompactRegion(ctx, before[5], before[3])
	require.ErrorContains(t, err, "its start (surface node 5) comes after its end (node 3)")
	_, err = h.a.CompactRegion(ctx, before[1], 9999)
	require.EqualError(t, err, "region "+strconv.FormatInt(before[1], 10)+"..9999: seq 9999 is not a current surface node")
	// Refused by the plugin: the cut after A(call) splits the tool pair.
	changed, err := h.a.CompactRegion(ctx, before[3], before[4])
	require.False(t, changed)
	require.ErrorContains(t, err, "after end seq "+strconv.FormatInt(before[4], 10)+" is not a balanced boundary")
	require.Len(t, h.s.Log().Events(), events+1, "only the plugin/failure record")
	require.Equal(t, surface.TypePluginFailure, h.s.Log().Events()[events].Type)
	require.Empty(t, h.sum.reqs)

	replayed, err := surface.Restore(h.s.Log().Events())
	require.NoError(t, err)
	changed, err = h.a.CompactRegion(ctx, before[3], before[6])
	require.NoError(t, err)
	require.True(t, changed)
	evs := h.compactionEvents()
	require.Equal(t, bracket, typesOf(evs))
	require.Nil(t, dataOf(t, evs[0])["turn"], "between turns the bracket has no owner")
	cp := evs[2]
	require.Equal(t, surface.Replace(before[3], before[6]), cp.Op)
	require.Equal(t, append([]int64{evs[0].Seq, evs[1].Seq}, before[3:7]...), cp.Sources)
	require.Equal(t, []int64{before[0], before[1], before[2], cp.Seq, before[7], before[8]}, h.s.Log().Nodes())
	require.Nil(t, h.s.Log().CheckWire())
	require.Len(t, h.sum.reqs, 1)
	// The summarizer reads the system prompt, exactly the span and the
	// instruction.
	in := h.sum.reqs[0].Messages
	require.Len(t, in, 6)
	require.Equal(t, surface.RoleSystem, in[0].Role)
	var span []*surface.Message
	for _, seq := range before[3:7] {
		m, ok := replayed.Message(seq)
		require.True(t, ok)
		span = append(span, m)
	}
	require.Equal(t, messagesJSON(t, span), messagesJSON(t, in[1:5]))
	replay, err := surface.Restore(h.s.Log().Events())
	require.NoError(t, err)
	require.Equal(t, messagesJSON(t, h.s.Log().Messages()), messagesJSON(t, replay.Messages()))
}

// A span over node 0 is recorded as a failed attempt (start and end with
// the error) without a model call; the surface is unchanged.
func TestRegion_WASM_SystemHeadIsProtected(t *testing.T) {
	h := regionSession(t)
	before := h.s.Log().Nodes()
	changed, err := h.a.CompactRegion(context.Background(), before[0], before[2])
	require.NoError(t, err)
	require.False(t, changed)
	evs := h.compactionEvents()
	require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionEnd}, typesOf(evs))
	require.Contains(t, dataOf(t, evs[1])["error"], "covers surface node 0, which holds the protected system prompt")
	require.Equal(t, before, h.s.Log().Nodes())
	require.Empty(t, h.sum.reqs)
}
