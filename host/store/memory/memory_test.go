package memory_test

import (
	"testing"

	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/host/store/memory"
	"github.com/weirhost/weir/host/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New:   func(testing.TB) store.Store { return memory.New() },
		Lapse: func(_ testing.TB, st store.Store, id string) { st.(*memory.Store).Lapse(id) },
	})
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(*testing.B, bool) store.Store { return memory.New() })
}
