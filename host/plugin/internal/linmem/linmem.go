// Package linmem backs the linear memories of plugin instances with
// memory mapped outside the Go heap, so that growing one never copies it.
//
// # Model
//
// wazero's default linear memory is a Go slice: memory.grow past its
// capacity allocates a larger slice and copies the whole memory into it,
// and the collector accounts for every byte. A Go guest grows its memory
// several times while it starts (4 MiB to 6 MiB and more), so a start
// copies megabytes and faults in twice the pages it keeps.
//
// A Memory instead reserves the memory's maximum size (the runtime's
// memory cap, or the module's own lower maximum) as address space with no
// access, and grants access to the pages below the memory's length as it
// grows: the base address never moves, nothing is copied, and the kernel
// supplies zeroed pages only when the guest first touches them. The
// reservation costs address space, not memory; pages beyond the length
// fault if touched, which wazero's bounds checks already prevent.
//
// Where the platform has no mmap (see mmap_other.go), or the reservation
// fails (an address-space limit), a Memory falls back to a Go slice grown
// as wazero grows its own.
//
// # Lifetime
//
// wazero frees a memory when its module closes, which can happen on
// another goroutine while the instance that owns it is still running
// guest code or reading guest memory (a runtime closing under a call).
// Unmapping then would turn those reads into faults that crash the
// process, so a Memory is unmapped only once both wazero has freed it and
// its owner has released it (Release), whichever comes last. Discard is
// the owner's release when the module never came to life (its
// instantiation failed, so wazero may never free it). A Memory that
// becomes unreachable while still mapped is unmapped by a cleanup.
package linmem

import (
	"runtime"
	"sync"

	"github.com/tetratelabs/wazero/experimental"
)

// Memory is the linear memory of one instance. Pass it to the
// instantiation with experimental.WithMemoryAllocator; its first Allocate
// returns itself (a module has at most one memory).
type Memory struct {
	mu        sync.Mutex
	r         *region // the reservation; nil when heap-backed or not allocated
	heap      []byte  // the fallback buffer
	max       uint64  // the most Reallocate grants
	allocated bool
	freed     bool // wazero called Free
	released  bool // the owner called Release
}

// region is a reservation of address space, of which the first size bytes
// are accessible. It is kept apart from Memory so that the cleanup of an
// unreachable Memory can unmap it.
type region struct {
	mu   sync.Mutex
	mem  []byte // the whole reservation; nil once unmapped
	size uint64
}

// New returns an unallocated Memory.
func New() *Memory { return &Memory{} }

// Allocate implements experimental.MemoryAllocator: it reserves max bytes
// and returns m. capacity is wazero's suggested initial capacity, used by
// the heap fallback only.
func (m *Memory) Allocate(capacity, max uint64) experimental.LinearMemory {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.allocated {
		// Never for the modules wazero runs (one memory each); a second
		// memory gets a Memory of its own that nobody releases.
		o := &Memory{released: true}
		o.init(capacity, max)
		return o
	}
	m.init(capacity, max)
	return m
}

func (m *Memory) init(capacity, max uint64) {
	m.allocated, m.max = true, max
	if max > 0 && uint64(int(max)) == max {
		if b, err := reserve(int(max)); err == nil {
			m.r = &region{mem: b}
			runtime.AddCleanup(m, (*region).unmap, m.r)
			return
		}
	}
	m.heap = make([]byte, 0, min(capacity, max))
}

// Reallocate implements experimental.LinearMemory: it makes the first size
// bytes accessible and returns them, or returns nil when size is beyond
// the reservation or the system refuses the pages (memory.grow then
// fails in the guest).
func (m *Memory) Reallocate(size uint64) []byte {
	if m.r == nil {
		if size > m.max {
			return nil
		}
		if size <= uint64(cap(m.heap)) {
			m.heap = m.heap[:size]
		} else {
			m.heap = append(m.heap[:cap(m.heap)], make([]byte, size-uint64(cap(m.heap)))...)
		}
		return m.heap
	}
	return m.r.grow(size)
}

func (r *region) grow(size uint64) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mem == nil || size > uint64(len(r.mem)) {
		return nil
	}
	if size > r.size {
		if err := commit(r.mem[r.size:size]); err != nil {
			return nil
		}
		r.size = size
	}
	return r.mem[:size:size]
}

// Free implements experimental.LinearMemory; wazero calls it when the
// module closes. The pages are unmapped now if the owner has released m,
// else at Release.
func (m *Memory) Free() {
	m.mu.Lock()
	m.freed = true
	done := m.released
	m.mu.Unlock()
	if done {
		m.unmap()
	}
}

// Release tells m that its owner will run no more guest code on it and
// read no more of it. The pages are unmapped now if wazero has freed m,
// else when it does.
func (m *Memory) Release() {
	m.mu.Lock()
	m.released = true
	done := m.freed
	m.mu.Unlock()
	if done {
		m.unmap()
	}
}

// Discard releases m and unmaps it at once: for the memory of a module
// whose instantiation failed, which wazero may never free and which no
// code can reach.
func (m *Memory) Discard() {
	m.mu.Lock()
	m.released, m.freed = true, true
	m.mu.Unlock()
	m.unmap()
}

func (m *Memory) unmap() {
	m.mu.Lock()
	r := m.r // a heap-backed memory is the collector's
	m.mu.Unlock()
	if r != nil {
		r.unmap()
	}
}

func (r *region) unmap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mem != nil {
		_ = unreserve(r.mem)
		r.mem, r.size = nil, 0
	}
}

// Mapped reports whether m is backed by a reservation still mapped.
func (m *Memory) Mapped() bool {
	m.mu.Lock()
	r := m.r
	m.mu.Unlock()
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mem != nil
}
