package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/surface"
)

var (
	benchOnce sync.Once
	benchEvs  []surface.Event
)

// LoadEvents is the size of the load benchmark's session.
const LoadEvents = 70_000

func benchEvents(b *testing.B) []surface.Event {
	benchOnce.Do(func() { benchEvs = Synthetic(b, 100_000) })
	return benchEvs
}

// Bench runs the store benchmarks: appending one event and a batch of
// ten, and loading a session of LoadEvents events (Load and Open), with
// and without durability. newStore returns a fresh store, durable or not
// (fsync or synchronous commits off).
func Bench(b *testing.B, newStore func(b *testing.B, durable bool) store.Store) {
	evs := benchEvents(b)
	ctx := context.Background()
	for _, durable := range []bool{true, false} {
		mode := "durable"
		if !durable {
			mode = "nosync"
		}
		for _, n := range []int{1, 10} {
			b.Run(fmt.Sprintf("Append%d/%s", n, mode), func(b *testing.B) {
				st := newStore(b, durable)
				defer st.Close()
				w, err := st.Open(ctx, "bench", store.OpenOptions{Create: true}, func(surface.Event) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				next, fresh := 0, 0
				for b.Loop() {
					if next+n > len(evs) {
						b.StopTimer()
						w.Close()
						next = 0
						fresh++
						w, err = st.Open(ctx, fmt.Sprintf("bench-%d", fresh), store.OpenOptions{Create: true}, func(surface.Event) error { return nil })
						if err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
					if err := w.Append(ctx, evs[next:next+n]); err != nil {
						b.Fatal(err)
					}
					next += n
				}
			})
		}
	}
	for _, size := range []int{LoadEvents, 100_000} {
		b.Run(fmt.Sprintf("Load%dk", size/1000), func(b *testing.B) {
			st := newStore(b, false)
			defer st.Close()
			w, err := st.Open(ctx, "load", store.OpenOptions{Create: true}, func(surface.Event) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < size; i += 1000 {
				if err := w.Append(ctx, evs[i:min(i+1000, size)]); err != nil {
					b.Fatal(err)
				}
			}
			w.Close()
			var bytes int64
			for _, e := range evs[:size] {
				bytes += int64(len(surface.AppendEvent(nil, &e))) + 1
			}
			b.SetBytes(bytes)
			for b.Loop() {
				n := 0
				if _, err := st.Load(ctx, "load", func(surface.Event) error { n++; return nil }); err != nil {
					b.Fatal(err)
				}
				if n != size {
					b.Fatalf("loaded %d events, want %d", n, size)
				}
			}
		})
	}
}
