package host

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// RegionCompactor is a CompactionProvider that may compact a requested
// range of the surface (CompactRegion). CompactsRegion reports whether it
// does: a plugin adapter answers from what the plugin declared.
type RegionCompactor interface {
	CompactionProvider
	CompactsRegion() bool
}

// ErrRegionUnsupported is the error of a region compaction that no
// configured compaction provider supports.
var ErrRegionUnsupported = errors.New("compaction.region is not supported")

// CompactRegion asks for the compaction of the current surface nodes from
// seq start to seq end (inclusive), between turns. The first compaction
// provider that compacts regions is asked (CompactionRequest.Start, End,
// reason CompactRegion); its proposals are admitted under the same rules
// as any compaction's. It reports whether the surface was rewritten. When
// no provider supports it the error wraps ErrRegionUnsupported and names
// the providers.
func (a *Agent) CompactRegion(ctx context.Context, start, end int64) (bool, error) {
	release, err := a.s.acquire("compact")
	if err != nil {
		return false, err
	}
	defer release()
	a.cur = a.settings()
	if t, _ := a.s.log.OpenTurn(); t != 0 {
		return false, fmt.Errorf("compaction is busy: turn %d is open", t)
	}
	// Positions, not seqs, order the surface: a checkpoint has a later
	// seq than the nodes after it.
	at := map[int64]int{}
	for i, n := range a.s.log.Surface() {
		at[n.Seq] = i
	}
	for _, seq := range []int64{start, end} {
		if _, ok := at[seq]; !ok {
			return false, fmt.Errorf("region %d..%d: seq %d is not a current surface node", start, end, seq)
		}
	}
	if at[start] > at[end] {
		return false, fmt.Errorf("region %d..%d is empty: its start (surface node %d) comes after its end (node %d)", start, end, at[start], at[end])
	}
	var c CompactionProvider
	var names []string
	for _, x := range a.cfg.Compactors {
		names = append(names, strconv.Quote(x.ID()))
		if r, ok := x.(RegionCompactor); ok && r.CompactsRegion() && c == nil {
			c = x
		}
	}
	if c == nil {
		if len(names) == 0 {
			return false, fmt.Errorf("%w: no compaction provider is configured", ErrRegionUnsupported)
		}
		return false, fmt.Errorf("%w by compaction provider %s (a plugin must declare compaction.region in its describe answer)",
			ErrRegionUnsupported, strings.Join(names, ", "))
	}
	before := a.s.log.ReplaceGeneration()
	err = a.compactWith(ctx, c, CompactionRequest{Reason: CompactRegion, Start: start, End: end})
	return a.s.log.ReplaceGeneration() != before, err
}
