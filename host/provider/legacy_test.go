package provider_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/surface"
)

// TestEachEarlierMinorLoadsAndRuns loads the legacy guest declaring each
// ABI minor and compacts a session with it: minor 2 brackets its
// checkpoint itself; minors 0 and 1 propose it alone, as they were allowed
// to, and the host commits it inside a bracket it writes (docs/abi.md,
// section 9.2). A minor-2 plugin that leaves its checkpoint bare is still
// refused with compaction/bracket.
func TestEachEarlierMinorLoadsAndRuns(t *testing.T) {
	for _, tc := range []struct {
		name     string
		config   string
		minor    uint32
		repaired bool
		refused  string // the rule of the expected refusal; "" when admitted
	}{
		{name: "minor 0", config: `{"minor":0}`, minor: 0, repaired: true},
		{name: "minor 1", config: `{"minor":1}`, minor: 1, repaired: true},
		{name: "minor 2", config: `{"minor":2}`, minor: 2},
		{name: "minor 2, bare checkpoint", config: `{"minor":2,"bare":true}`, minor: 2, refused: string(host.RuleCompactionBracket)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lp := load(t, "legacy", "legacy", provider.RoleCompaction, tc.config, provider.Limits{})
			require.Equal(t, tc.minor, lp.Description().AbiMinor)
			comp, err := lp.Compaction()
			require.NoError(t, err)
			l := newLoop(t, func(_ *host.Session, cfg *host.Config) { cfg.Compactors = []host.CompactionProvider{comp} })
			l.turn("the first question, long enough that a one-line checkpoint is cheaper than the turn it replaces")
			l.turn("the second question, long enough that a one-line checkpoint is cheaper than the turn it replaces")
			before := l.s.Log().NodeCount()

			done, err := l.a.CompactNow(context.Background())
			if tc.refused != "" {
				require.Error(t, err)
				require.False(t, done)
				fs := l.failures()
				require.Len(t, fs, 1)
				require.Contains(t, fs[0].Error, tc.refused)
				require.Empty(t, l.events(surface.TypeCompactionStart))
				require.Equal(t, before, l.s.Log().NodeCount(), "nothing of the refused batch is committed")
				l.turn("the session goes on")
				return
			}
			require.NoError(t, err)
			require.True(t, done)
			require.Empty(t, l.failures())

			starts := l.events(surface.TypeCompactionStart)
			require.Len(t, starts, 1)
			var start struct {
				ID         string `json:"compactionId"`
				RepairedBy string `json:"repairedBy"`
			}
			require.NoError(t, json.Unmarshal(starts[0].Data, &start))
			// The bracket is whole and in order, around the committed checkpoint.
			evs := l.s.Log().Events()
			at := starts[0].Seq
			if tc.repaired {
				// The checkpoint named no compaction: the host's id is
				// "abi1-" and the checkpoint's seq.
				require.Equal(t, "abi1-"+strconv.FormatInt(at+2, 10), start.ID)
				require.Equal(t, "host", start.RepairedBy)
			} else {
				require.True(t, strings.HasPrefix(start.ID, "legacy-"), start.ID)
				require.Empty(t, start.RepairedBy)
			}
			require.Equal(t, surface.TypeCompactionSummary, evs[at+1].Type)
			cp := evs[at+2]
			require.Equal(t, surface.TypeUserMessage, cp.Type)
			require.Equal(t, surface.OpReplace, cp.Op.Kind)
			require.Contains(t, string(cp.Data), "<compacted-summary>earlier turns</compacted-summary>")
			require.Equal(t, surface.TypeCompactionEnd, evs[at+3].Type)
			require.Contains(t, string(evs[at+3].Data), start.ID)
			require.Equal(t, 3, l.s.Log().NodeCount(), "system head, checkpoint, newest node")

			require.Equal(t, surface.EndCompleted, l.turn("after the compaction").Reason.Kind)
			require.Empty(t, l.failures())
			l.checkReconstruction()
		})
	}
}
