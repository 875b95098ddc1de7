//go:build !unix

package jsonl

// openFlags are added to every open of a session file; only Unix needs
// O_NONBLOCK to open a named pipe without blocking.
const openFlags = 0
