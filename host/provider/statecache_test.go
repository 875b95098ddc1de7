package provider_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/surface"
)

// readOnlyCache serves the entries of a cache without storing new ones.
type readOnlyCache struct{ provider.StateCache }

func (readOnlyCache) Store(string, provider.CachedState) {}

// cachedMeter is the first-party token meter of a session restored from
// events, with cache, after the agent handed it the log.
func cachedMeter(t *testing.T, events []surface.Event, cache provider.StateCache) (*provider.Meter, *gen) {
	t.Helper()
	return cachedMeterAs(t, "bench", events, cache)
}

// cachedMeterAs is cachedMeter for the session named id.
func cachedMeterAs(t *testing.T, id string, events []surface.Event, cache provider.StateCache) (*provider.Meter, *gen) {
	t.Helper()
	g := restoreGen(t, events)
	if id != g.s.ID() {
		g.s = host.NewSession(id, g.s.Log(), nil)
	}
	firstPartySet.load(t, firstParty)
	var opts []provider.Option
	if cache != nil {
		opts = append(opts, provider.WithStateCache(cache))
	}
	m, err := firstPartySet.met.Meter(g.s, opts...)
	require.NoError(t, err)
	_, err = host.NewAgent(g.s, host.Config{Route: bigRoute, Model: idleModel{}, Meter: m})
	require.NoError(t, err)
	return m, g
}

func TestStateCacheResumesFromTheBlob(t *testing.T) {
	events := history(t, 100, 1_000)
	cache := &provider.DirStateCache{Dir: t.TempDir()}
	ctx := context.Background()

	plain, _ := cachedMeter(t, events, nil)
	want, err := plain.Measure(ctx, nil)
	require.NoError(t, err)

	first, _ := cachedMeter(t, events, cache) // folds the log, leaves a blob at its end
	got, err := first.Measure(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, want, got)

	calls := firstPartySet.met.Stats().Calls
	again, g := cachedMeter(t, events, readOnlyCache{cache})
	require.Equal(t, int64(len(events)), again.Folded(), "the blob covers the log")
	require.Equal(t, calls, firstPartySet.met.Stats().Calls, "adopting the blob calls no plugin")
	got, err = again.Measure(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, want, got, "a meter resumed from the cached blob measures as one that folded the log")

	// The session goes on: the resumed meter folds the new events as the
	// plain one does.
	g.turn(2)
	pg := restoreGen(t, g.s.Log().Events())
	plainOn, err := firstPartySet.met.Meter(pg.s)
	require.NoError(t, err)
	require.NoError(t, plainOn.Observe(pg.s.Log().Events()))
	want, err = plainOn.Measure(ctx, nil)
	require.NoError(t, err)
	got, err = again.Measure(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestStateCacheRefusesAnEntryThatDoesNotFit(t *testing.T) {
	ctx := context.Background()
	events := history(t, 100, 1_000)
	dir := t.TempDir()
	cache := &provider.DirStateCache{Dir: dir}
	cachedMeter(t, events, cache)

	// Another log of the same session id: the event before the entry's
	// position differs, so the entry is not adopted.
	other := history(t, 100, 2_000)
	plain, _ := cachedMeter(t, other, nil)
	want, err := plain.Measure(ctx, nil)
	require.NoError(t, err)
	m, _ := cachedMeter(t, other, readOnlyCache{cache})
	got, err := m.Measure(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, want, got)

	// A log shorter than the entry's position, and a damaged file.
	short, _ := cachedMeter(t, events[:len(events)-5], readOnlyCache{cache})
	plainShort, _ := cachedMeter(t, events[:len(events)-5], nil)
	want, err = plainShort.Measure(ctx, nil)
	require.NoError(t, err)
	got, err = short.Measure(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, want, got)

	files, err := filepath.Glob(filepath.Join(dir, "*.meter"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(files[0], b[:len(b)-3], 0o644))
	_, ok := cache.Load("bench\x00token-meter-token-meter")
	require.False(t, ok, "a truncated entry is no entry")
}

// TestStateCacheIgnoresAPlantedBlob: the case. Another session's
// blob planted under this session's entry does not change the token line:
// copied as it is (it names its own session), or rewritten to name this
// one (it folds another log prefix). The cache is read all the same: a
// forged entry giving this session's id and prefix hash (which are not
// secrets: anyone who can read the log can compute them) is adopted and
// does change it, so the refusals are the rules at work.
func TestStateCacheIgnoresAPlantedBlob(t *testing.T) {
	ctx := context.Background()
	theirs, ours := history(t, 100, 1_000), history(t, 100, 2_000)
	cache := &provider.DirStateCache{Dir: t.TempDir()}
	leaver, _ := cachedMeter(t, theirs, cache) // session "bench" leaves its blob
	_, err := leaver.Measure(ctx, nil)
	require.NoError(t, err)
	foreign, ok := cache.Load("bench\x00" + leaver.ID())
	require.True(t, ok)
	require.Equal(t, "bench", foreign.Session)
	require.Positive(t, foreign.Next)
	require.LessOrEqual(t, foreign.Next, int64(len(ours)))
	require.NotEqual(t, surface.AppendEvent(nil, &theirs[foreign.Next-1]), surface.AppendEvent(nil, &ours[foreign.Next-1]),
		"the two sessions' logs differ before the blob's position")

	plain, _ := cachedMeterAs(t, "ours", ours, nil)
	want, err := plain.Measure(ctx, nil)
	require.NoError(t, err)

	// This session's own entry, for its position and prefix hash.
	ownCache := &provider.DirStateCache{Dir: t.TempDir()}
	m, _ := cachedMeterAs(t, "ours", ours, ownCache)
	_, err = m.Measure(ctx, nil)
	require.NoError(t, err)
	own, ok := ownCache.Load("ours\x00" + leaver.ID())
	require.True(t, ok)
	forged := own
	forged.State = foreign.State

	cases := []struct {
		name    string
		plant   provider.CachedState
		adopted bool
	}{
		{"another session's entry as it is", foreign, false},
		{"rewritten to name this session", withSession(foreign, "ours"), false},
		{"forged with this session's id and prefix hash", forged, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			planted := &provider.DirStateCache{Dir: t.TempDir()}
			planted.Store("ours\x00"+leaver.ID(), c.plant)
			m, _ := cachedMeterAs(t, "ours", ours, readOnlyCache{planted})
			got, err := m.Measure(ctx, nil)
			if c.adopted {
				// Folded from another log, the measurement is another
				// one, or one the meter's rules refuse.
				require.True(t, err != nil || !reflect.DeepEqual(want, got), "the forged blob is adopted")
				return
			}
			require.NoError(t, err)
			require.Equal(t, want, got, "the planted blob is ignored: the token line is the log's")
		})
	}
}

func withSession(e provider.CachedState, id string) provider.CachedState {
	e.Session = id
	return e
}
