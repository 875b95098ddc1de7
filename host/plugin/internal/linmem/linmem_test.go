package linmem

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

const page = 65536

func TestGrowKeepsTheBaseAndTheContents(t *testing.T) {
	m := New()
	lm := m.Allocate(page, 64*page)
	require.Same(t, m, lm)
	b := lm.Reallocate(page)
	require.Len(t, b, page)
	require.Equal(t, page, cap(b), "no capacity past the length: nothing may write beyond it")
	b[0], b[page-1] = 1, 2
	base := unsafe.SliceData(b)
	if m.Mapped() {
		for _, pages := range []uint64{2, 7, 64} {
			g := lm.Reallocate(pages * page)
			require.Len(t, g, int(pages*page))
			require.Equal(t, base, unsafe.SliceData(g), "growing to %d pages moved the memory", pages)
			require.Equal(t, byte(1), g[0])
			require.Equal(t, byte(2), g[page-1])
			require.Zero(t, g[len(g)-1], "new pages are zero")
			g[len(g)-1] = 3
		}
	}
	require.True(t, lm.Reallocate(65*page) == nil, "growing past the maximum fails")
	require.Len(t, lm.Reallocate(64*page), 64*page, "a failed grow changes nothing")
	m.Discard()
	require.False(t, m.Mapped())
}

func TestMappedWhereThePlatformHasMmap(t *testing.T) {
	switch runtime.GOOS {
	case "linux", "darwin", "freebsd":
	default:
		t.Skip("no mmap on " + runtime.GOOS + ": the Go slice fallback is tested elsewhere")
	}
	m := New()
	m.Allocate(0, 16*page)
	require.True(t, m.Mapped())
	m.Discard()
}

// The pages stay mapped until both wazero has freed the memory and its
// owner has released it, in either order.
func TestUnmappedWhenFreedAndReleased(t *testing.T) {
	for _, freeFirst := range []bool{true, false} {
		m := New()
		m.Allocate(page, 4*page).Reallocate(page)
		if !m.Mapped() {
			t.Skip("no mmap on this platform")
		}
		first, second := m.Free, m.Release
		if !freeFirst {
			first, second = m.Release, m.Free
		}
		first()
		require.True(t, m.Mapped(), "unmapped before both were done (free first: %v)", freeFirst)
		second()
		require.False(t, m.Mapped(), "still mapped when both were done (free first: %v)", freeFirst)
		second() // a second call is harmless
	}
}

func TestHeapFallback(t *testing.T) {
	m := &Memory{}
	m.allocated, m.max = true, 4*page
	m.heap = make([]byte, 0, page) // what init keeps when the reservation fails
	b := m.Reallocate(page)
	b[0] = 7
	g := m.Reallocate(3 * page)
	require.Len(t, g, 3*page)
	require.Equal(t, byte(7), g[0])
	require.True(t, m.Reallocate(5*page) == nil, "the fallback keeps the maximum too")
	require.False(t, m.Mapped())
	m.Free()
	m.Release()
}

// A memory of maximum zero (a module declaring no pages at all) is a
// slice: there is nothing to reserve.
func TestZeroMaximum(t *testing.T) {
	m := New()
	lm := m.Allocate(0, 0)
	require.NotNil(t, lm.Reallocate(0))
	require.True(t, lm.Reallocate(page) == nil, "growing past the maximum fails")
	m.Discard()
}

func TestSecondAllocationIsIndependent(t *testing.T) {
	m := New()
	require.Same(t, m, m.Allocate(0, 2*page))
	o := m.Allocate(0, 2*page)
	require.NotSame(t, m, o)
	o.Reallocate(page)[0] = 1
	o.Free() // released from the start: unmapped now
	require.False(t, o.(*Memory).Mapped())
	m.Discard()
}
