package surface_test

import (
	"bytes"
	"testing"

	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/internal/loggen"
)

// BenchmarkDecodeLog decodes every line of a realistic generated log with
// one Decoder (the per-worker cost of loading a session file).
func BenchmarkDecodeLog(b *testing.B) {
	cfg := loggen.Realistic()
	cfg.Events = 5000
	evs, err := loggen.Events(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var lines [][]byte
	size := 0
	for i := range evs {
		line := surface.AppendEvent(nil, &evs[i])
		lines = append(lines, line)
		size += len(line) + 1
	}
	for _, prepare := range []bool{false, true} {
		name := "plain"
		if prepare {
			name = "prepare"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(size))
			dec := surface.Decoder{Prepare: prepare}
			for b.Loop() {
				for _, l := range lines {
					if _, err := dec.Decode(l); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(len(lines)*b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
	_ = bytes.MinRead
}
