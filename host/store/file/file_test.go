package file_test

import (
	"os"
	"testing"

	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/host/store/file"
	"github.com/weirhost/weir/host/store/storetest"
)

func TestMain(m *testing.M) {
	storetest.Main(func(dir string) (store.Store, error) { return file.Dir(dir), nil })
	os.Exit(m.Run())
}

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New:          func(t testing.TB) store.Store { return file.Dir(t.TempDir()) },
		PartialReads: true,
		Spec: func(t testing.TB, st store.Store) string {
			p, err := st.(*file.Store).Path("x")
			if err != nil {
				t.Fatal(err)
			}
			return p[:len(p)-len("/x.jsonl")]
		},
	})
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B, durable bool) store.Store {
		if durable {
			return file.Dir(b.TempDir())
		}
		return file.Dir(b.TempDir(), file.NoSync())
	})
}
