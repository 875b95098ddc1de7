package linmem

import "testing"

// BenchmarkGrow grows a memory as a Go guest's start does, from 4 MiB to
// 6 MiB one 64 KiB page at a time, touching each new page: "mmap" is a
// Memory, "slice" what wazero does without an allocator (append, which
// copies the whole memory whenever it outgrows its capacity).
//
//	go test -run '^$' -bench Grow ./host/plugin/internal/linmem
func BenchmarkGrow(b *testing.B) {
	const start, end = 64, 96 // pages
	b.Run("mmap", func(b *testing.B) {
		for b.Loop() {
			m := New()
			lm := m.Allocate(start*page, 1024*page)
			for p := uint64(start); p <= end; p++ {
				buf := lm.Reallocate(p * page)
				buf[len(buf)-1] = 1
			}
			m.Discard()
		}
	})
	b.Run("slice", func(b *testing.B) {
		for b.Loop() {
			buf := make([]byte, start*page)
			for p := start + 1; p <= end; p++ {
				buf = append(buf, make([]byte, page)...)
				buf[len(buf)-1] = 1
			}
		}
	})
}
