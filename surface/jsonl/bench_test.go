package jsonl

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/internal/loggen"
)

var (
	bigOnce   sync.Once
	bigPath   string
	bigEvents []surface.Event
	bigErr    error
)

// big returns the realistic benchmark log (loggen.Realistic: about 70,000
// events, 30 MB) written to a file, and its events.
func big(b *testing.B) (string, []surface.Event, int64) {
	bigOnce.Do(func() {
		bigEvents, bigErr = loggen.Events(loggen.Realistic())
		if bigErr != nil {
			return
		}
		if benchDir, bigErr = os.MkdirTemp("", "weir-jsonl-bench-"); bigErr != nil {
			return
		}
		bigPath = filepath.Join(benchDir, FileName)
		var s *Session
		if s, bigErr = Create(bigPath, testHeader(), NoSync()); bigErr != nil {
			return
		}
		for i := 0; i < len(bigEvents) && bigErr == nil; i += 64 {
			bigErr = s.Append(bigEvents[i:min(i+64, len(bigEvents))])
		}
		s.Close()
	})
	require.NoError(b, bigErr)
	st, err := os.Stat(bigPath)
	require.NoError(b, err)
	return bigPath, bigEvents, st.Size()
}

// report adds events/s and the process CPU time per op, which, unlike
// wall time, stays meaningful on a busy machine (it includes the GC and
// every decoding worker).
func report(b *testing.B, events int, cpu0 time.Duration) {
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLoad measures Load of the realistic log: read, decode, admit
// (validate and fold) every event.
func BenchmarkLoad(b *testing.B) {
	path, evs, size := big(b)
	for _, bc := range []struct {
		name string
		opts []Option
	}{
		{"parallel", nil},
		{"workers=1", []Option{Workers(1)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				ld, err := Load(path, bc.opts...)
				if err != nil || ld.Log.Len() != len(evs) {
					b.Fatal(err)
				}
			}
			report(b, len(evs), cpu0)
		})
	}
}

// BenchmarkLoadParts splits Load into its parts:
//   - decode-parallel: Load's pipeline without admission (decoding and
//     payload preparation on all workers);
//   - decode-sequential: ReadEvents (decoding only, one goroutine);
//   - admit: surface.Restore of decoded, unprepared events (payload parsing,
//     fold and enclosure checks);
//   - admit-prepared: surface.Restore of events decoded with
//     Decoder.Prepare, the sequential part of Load.
func BenchmarkLoadParts(b *testing.B) {
	path, evs, size := big(b)
	raw, err := os.ReadFile(path)
	require.NoError(b, err)
	_, decoded, _, err := ReadEvents(bytes.NewReader(raw))
	require.NoError(b, err)
	prepared := make([]surface.Event, 0, len(decoded))
	dec := surface.Decoder{Prepare: true}
	for _, line := range bytes.Split(raw, []byte{'\n'})[1 : len(decoded)+1] {
		ev, err := dec.Decode(line)
		require.NoError(b, err)
		prepared = append(prepared, ev)
	}
	b.Run("decode-parallel", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		cpu0 := cpuTime()
		for b.Loop() {
			if _, err := Read(bytes.NewReader(raw), decodeOnly()); err != nil {
				b.Fatal(err)
			}
		}
		report(b, len(evs), cpu0)
	})
	b.Run("decode-sequential", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		cpu0 := cpuTime()
		for b.Loop() {
			if _, got, _, err := ReadEvents(bytes.NewReader(raw)); err != nil || len(got) != len(evs) {
				b.Fatal(err)
			}
		}
		report(b, len(evs), cpu0)
	})
	for _, bc := range []struct {
		name string
		evs  []surface.Event
	}{{"admit", decoded}, {"admit-prepared", prepared}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := surface.Restore(bc.evs); err != nil {
					b.Fatal(err)
				}
			}
			report(b, len(evs), cpu0)
		})
	}
}

// BenchmarkAppend measures appending one event (a typical tool result) per
// batch, with and without fsync.
func BenchmarkAppend(b *testing.B) {
	var ev surface.Event
	for _, e := range small(b).Events() {
		if e.Type == surface.TypeToolResult {
			ev = e
			break
		}
	}
	for _, bc := range []struct {
		name string
		opts []Option
	}{
		{"fsync", nil},
		{"nosync", []Option{NoSync()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := Create(filepath.Join(b.TempDir(), FileName), testHeader(), bc.opts...)
			require.NoError(b, err)
			defer s.Close()
			batch := []surface.Event{ev}
			b.SetBytes(int64(len(surface.AppendEvent(nil, &ev)) + 1))
			b.ReportAllocs()
			seq := int64(0)
			cpu0 := cpuTime()
			for b.Loop() {
				batch[0].Seq = seq
				if err := s.Append(batch); err != nil {
					b.Fatal(err)
				}
				seq++
			}
			report(b, 1, cpu0)
		})
	}
}
