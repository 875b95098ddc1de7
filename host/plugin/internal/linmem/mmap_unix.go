//go:build linux || darwin || freebsd

package linmem

import "golang.org/x/sys/unix"

// reserve maps n bytes of address space with no access.
func reserve(n int) ([]byte, error) {
	return unix.Mmap(-1, 0, n, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANON)
}

// commit makes b, part of a reservation, readable and writable.
func commit(b []byte) error {
	return unix.Mprotect(b, unix.PROT_READ|unix.PROT_WRITE)
}

// unreserve unmaps a reservation.
func unreserve(b []byte) error { return unix.Munmap(b) }
