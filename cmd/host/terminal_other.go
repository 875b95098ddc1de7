//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package cli

// isTTY has no terminal query on this system: a character device counts as
// a terminal (isTerminal checks that).
func isTTY(uintptr) bool { return true }
