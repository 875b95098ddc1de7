package surface_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/internal/loggen"
)

var (
	fuzzLogsMu sync.Mutex
	fuzzLogs   = map[uint64][]surface.Event{}
)

// fuzzLog is a generated valid log (tool calls, results, compactions,
// prompt changes) for one of 8 seeds, generated once per seed.
func fuzzLog(t testing.TB, seed uint64) []surface.Event {
	fuzzLogsMu.Lock()
	defer fuzzLogsMu.Unlock()
	if evs, ok := fuzzLogs[seed]; ok {
		return evs
	}
	cfg := loggen.Small(150)
	cfg.Seed, cfg.CompactEvery = seed, 3
	evs, err := loggen.Events(cfg)
	require.NoError(t, err)
	fuzzLogs[seed] = evs
	return evs
}

// checkWireSince is the check a host runs on a provider's planned batch.
func checkWireSince(pl *surface.Log, first int64) error {
	if err := pl.CheckWireSince(first); err != nil {
		return err
	}
	return nil
}

// FuzzProposals applies random checkpoint replacements (single, two in one
// batch, a tool result replaced by a user message, a range widened to whole
// call groups) to a generated valid
// log through AppendBatchChecked with the wire check of the changed
// region, and requires that whatever is admitted leaves the whole surface
// satisfying the pairing rule, and that whatever is refused leaves the log
// unchanged. It shows that checking only the changed region is enough.
func FuzzProposals(f *testing.F) {
	f.Add(uint64(0), []byte{0, 1, 3})
	f.Add(uint64(1), []byte{0, 2, 0, 0, 5, 1, 0, 3, 9})
	f.Add(uint64(2), []byte{1, 1, 2, 1, 3, 4, 2, 0, 0})
	f.Add(uint64(3), []byte{2, 5, 0, 2, 9, 0, 0, 1, 40})
	f.Add(uint64(4), []byte{0, 7, 0, 0, 7, 1, 0, 7, 2, 1, 9, 9})
	f.Add(uint64(5), []byte{2, 1, 1, 0, 4, 4, 1, 0, 8})
	f.Add(uint64(6), []byte{3, 2, 3, 3, 9, 1, 3, 4, 0, 2, 1, 0, 3, 1, 2})
	f.Add(uint64(7), []byte{3, 30, 2, 1, 5, 6, 3, 11, 0, 0, 2, 2})
	f.Fuzz(func(t *testing.T, seed uint64, ops []byte) {
		l, err := surface.Restore(fuzzLog(t, seed%8))
		require.NoError(t, err)
		require.Nil(t, l.CheckWire(), "a generated log keeps the pairing rule")
		id := 0
		checkpoint := func(nodes []int64, a, b int) surface.Proposal {
			id++
			return surface.Proposal{Type: surface.TypeUserMessage, Data: userData(fmt.Sprintf("cp-%d", id), "summary"),
				Op: surface.Replace(nodes[a], nodes[b]), Sources: append([]int64(nil), nodes[a:b+1]...)}
		}
		for round := 0; len(ops) >= 3 && round < 24; round++ {
			kind, x, y := ops[0], int(ops[1]), int(ops[2])
			ops = ops[3:]
			nodes := l.Nodes()
			if len(nodes) < 3 {
				return
			}
			a := 1 + x%(len(nodes)-1)
			b := a + y%(len(nodes)-a)
			var ps []surface.Proposal
			switch kind % 4 {
			case 0:
				ps = []surface.Proposal{checkpoint(nodes, a, b)}
			case 1:
				ps = []surface.Proposal{checkpoint(nodes, a, a)}
				if b > a {
					ps = append(ps, checkpoint(nodes, a+1+(b-a)/2, b))
				}
			case 2:
				var results []int
				for k, info := range l.Surface() {
					if info.Type == surface.TypeToolResult {
						results = append(results, k)
					}
				}
				if len(results) == 0 {
					continue
				}
				k := results[x%len(results)]
				ps = []surface.Proposal{checkpoint(nodes, k, k)}
			case 3:
				// Widen a..b to whole call groups, as a careful compactor
				// does: mostly admitted.
				info := l.Surface()
				for a > 1 && info[a].Type == surface.TypeToolResult {
					a--
				}
				for b+1 < len(info) && info[b+1].Type == surface.TypeToolResult {
					b++
				}
				ps = []surface.Proposal{checkpoint(nodes, a, b)}
			}
			next, before := l.NextSeq(), l.Nodes()
			_, err := l.AppendBatchChecked(ps, checkWireSince)
			if err != nil {
				require.Equal(t, next, l.NextSeq(), "a refused batch appends nothing")
				require.Equal(t, before, l.Nodes(), "a refused batch leaves the surface")
				continue
			}
			if werr := l.CheckWire(); werr != nil {
				t.Fatalf("admitted %d proposal(s) at seq %d leave the surface breaking the pairing rule: %v", len(ps), next, werr)
			}
		}
	})
}
