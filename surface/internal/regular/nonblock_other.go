//go:build !unix

package regular

// openFlags are added to every open; only Unix needs
// O_NONBLOCK to open a named pipe without blocking.
const openFlags = 0
