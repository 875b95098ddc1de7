package provider_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// BenchmarkIdleSessionsRSS holds 10,000 sessions in one process, each with
// its own agent and the three first-party WASM providers (one runtime, one
// pool of instances per plugin), after one turn each, and reports the
// process's resident memory once they are all idle: base-MiB with the
// plugins loaded before any session, rss-MiB with the sessions idle (after
// a GC), per-session-KiB the difference per session, hwm-MiB the peak,
// heap-MiB the Go heap in use, and the instances the pools started. The
// turns (one or three per session) run on GOMAXPROCS goroutines; the
// sessions stay alive until the measurement. Run with -benchtime 1x
// (about a minute on two cores).
func BenchmarkIdleSessionsRSS(b *testing.B) {
	for _, turns := range []int{1, 3} {
		b.Run("turns="+strconv.Itoa(turns), func(b *testing.B) { idleSessions(b, 10_000, turns) })
	}
}

func idleSessions(b *testing.B, sessions, turns int) {
	set := firstPartySet
	set.load(b, firstParty)
	runtime.GC()
	debug.FreeOSMemory()
	base, _ := memStatus(b)
	for b.Loop() {
		runs := make([]*sessionRun, sessions)
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make([]error, runtime.GOMAXPROCS(0))
		for w := range errs {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= sessions {
						return
					}
					runs[i] = newSessionRun(b, set, i)
					if err := runs[i].turns(turns); err != nil {
						errs[w] = err
						return
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(b, err)
		}
		runtime.GC()
		debug.FreeOSMemory()
		rss, hwm := memStatus(b)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(base, "base-MiB")
		b.ReportMetric(rss, "rss-MiB")
		b.ReportMetric(hwm, "hwm-MiB")
		b.ReportMetric((rss-base)*1024/float64(sessions), "per-session-KiB")
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
		runtime.KeepAlive(runs)
	}
	started := set.prompt.Stats().Started + set.comp.Stats().Started + set.met.Stats().Started
	b.ReportMetric(float64(started), "instances")
	b.Log(set.what)
}

// turns runs n turns of the session and checks that they completed
// without a plugin failure.
func (r *sessionRun) turns(n int) error {
	for t := range n {
		res, err := r.a.Run(context.Background(), r.a.UserMessage("turn "+strconv.Itoa(t)+" "+filler))
		if err != nil {
			return err
		}
		if res.Reason.Kind != surface.EndCompleted {
			return fmt.Errorf("session %d turn %d ended %s", r.i, t, res.Reason.Kind)
		}
	}
	for _, e := range r.s.Log().Events() {
		if e.Type == surface.TypePluginFailure {
			return fmt.Errorf("session %d: plugin failure: %s", r.i, e.Data)
		}
	}
	return nil
}
