package waterfall

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// BenchmarkRun measures a run over n trivial handlers, inline (no deadline)
// and guarded (a deadline, so each handler runs on its own goroutine). The
// difference per handler is the cost of the guard goroutine.
func BenchmarkRun(b *testing.B) {
	inc := func(_ context.Context, v int) (int, error) { return v + 1, nil }
	modes := []struct {
		name    string
		timeout time.Duration
	}{
		{"inline", 0},
		{"deadline", time.Minute},
	}
	for _, m := range modes {
		for _, n := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("%s/handlers=%d", m.name, n), func(b *testing.B) {
				c := New(Config[int]{Timeout: m.timeout})
				for i := range n {
					if _, err := c.Add(strconv.Itoa(i), inc); err != nil {
						b.Fatal(err)
					}
				}
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if v, _, err := c.Run(ctx, 0); err != nil || v != n {
						b.Fatal(v, err)
					}
				}
			})
		}
	}
}

// BenchmarkRunClone measures the Clone hook with a small map value.
func BenchmarkRunClone(b *testing.B) {
	clone := func(m map[string]int) map[string]int {
		out := make(map[string]int, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	read := func(_ context.Context, m map[string]int) (map[string]int, error) { return m, nil }
	c := New(Config[map[string]int]{Clone: clone})
	for i := range 4 {
		if _, err := c.Add(strconv.Itoa(i), read); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	initial := map[string]int{"a": 1, "b": 2, "c": 3}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.Run(ctx, initial); err != nil {
			b.Fatal(err)
		}
	}
}
