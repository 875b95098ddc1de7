package provider_test

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
	"github.com/weirhost/weir/surface"
)

// TestEventImportFromAGuest: a real guest reads every event of the log by
// seq through the event import and gets each one's type and stored data,
// log-only events included; past the end of the log it gets "not found"
// with the host's reason.
func TestEventImportFromAGuest(t *testing.T) {
	p := load(t, "eventprobe", "eventprobe", provider.RoleCompaction, "", provider.Limits{})
	comp, err := p.Compaction()
	require.NoError(t, err)
	l := toolLoop(t, comp)
	l.script()
	require.Equal(t, surface.EndCompleted, l.turn("please echo something for me").Reason.Kind)
	before := l.s.Log().Events()

	_, err = l.a.CompactNow(context.Background())
	require.NoError(t, err)
	probes := l.events("probe/events")
	require.Len(t, probes, 1)
	var got struct {
		Events []struct {
			Seq  int64          `json:"seq"`
			Type string         `json:"type"`
			Data jsontext.Value `json:"data"`
		} `json:"events"`
		Past string `json:"past"`
	}
	require.NoError(t, json.Unmarshal(probes[0].Data, &got))
	require.Len(t, got.Events, len(before))
	sawToolResult := false
	for i, e := range before {
		require.Equal(t, e.Seq, got.Events[i].Seq)
		require.Equal(t, e.Type, got.Events[i].Type)
		require.JSONEq(t, string(e.Data), string(got.Events[i].Data), "seq %d", e.Seq)
		if e.Type == surface.TypeToolResult {
			sawToolResult = true
			var d struct {
				Turn int64 `json:"turn"`
				Step int64 `json:"step"`
			}
			require.NoError(t, json.Unmarshal(got.Events[i].Data, &d))
			require.Equal(t, int64(1), d.Turn, "a pruner can read a tool result's turn")
			require.Positive(t, d.Step)
		}
	}
	require.True(t, sawToolResult)
	require.Contains(t, got.Past, "event: not found")
	require.Contains(t, got.Past, "is not in the log")
}

// TestEventImportGrants: event answers where message does (compaction and
// meter calls) and is "not granted" to a prompt call; a Host that does not
// implement plugin.EventHost answers "not granted" too.
func TestEventImportGrants(t *testing.T) {
	for _, k := range abi.Kinds {
		require.Equal(t, abi.Granted(k, abi.ImportMessage), abi.Granted(k, abi.ImportEvent), k.String())
	}
	var h plugin.Host = plugin.UnimplementedHost{}
	_, err := h.(plugin.EventHost).Event(context.Background(), 1)
	require.ErrorIs(t, err, plugin.ErrNotGranted)
}

// TestRegionOnAGuestWithoutIt: a compaction guest whose describe answer
// does not declare compaction.region (as no guest before it does) loads
// and works as before; asking it for a region fails with a clear error
// before any call, nothing is written and it is not counted against it.
func TestRegionOnAGuestWithoutIt(t *testing.T) {
	p := load(t, "checkpoint", "checkpoint", provider.RoleCompaction, "", provider.Limits{})
	require.Empty(t, p.Description().Methods)
	comp, err := p.Compaction()
	require.NoError(t, err)
	require.False(t, comp.CompactsRegion())
	l := toolLoop(t, comp)
	l.script()
	require.Equal(t, surface.EndCompleted, l.turn("please echo something for me").Reason.Kind)
	nodes := l.s.Log().Nodes()
	n := len(l.s.Log().Events())

	changed, err := l.a.CompactRegion(context.Background(), nodes[1], nodes[len(nodes)-1])
	require.False(t, changed)
	require.ErrorIs(t, err, host.ErrRegionUnsupported)
	require.EqualError(t, err, `compaction.region is not supported by compaction provider "checkpoint" (a plugin must declare compaction.region in its describe answer)`)
	require.Len(t, l.s.Log().Events(), n, "nothing was written")

	require.False(t, comp.Disabled("session-1"))

	// The runtime refuses the call itself without reaching the guest.
	raw, err := plugintest.Runtime(t).Load(context.Background(), "checkpoint-raw", modules["checkpoint"])
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Close(context.Background()) })
	require.False(t, raw.Implements(abi.MethodCompactionRegion))
	_, err = raw.Region(context.Background(), plugin.UnimplementedHost{}, &abi.CompactionRequest{RegionStartSeq: 1, RegionEndSeq: 2})
	require.ErrorIs(t, err, plugin.ErrUnsupported)
	require.EqualError(t, err, `plugin "checkpoint-raw": call compaction.region: plugin does not implement compaction.region (its describe lists no such method)`)
	require.Zero(t, raw.Stats().Calls, "no call reached the guest")

	// Manual compaction still works.
	changed, err = l.a.CompactNow(context.Background())
	require.NoError(t, err)
	require.True(t, changed)
}
