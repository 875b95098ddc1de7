//go:build !(linux || darwin || freebsd)

package linmem

import "errors"

var errNoMmap = errors.New("linmem: no mmap on this platform")

// reserve fails: the memory falls back to a Go slice.
func reserve(int) ([]byte, error) { return nil, errNoMmap }

func commit([]byte) error { return errNoMmap }

func unreserve([]byte) error { return nil }
