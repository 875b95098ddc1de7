//go:build unix

package builtin

import "syscall"

// openFlags are added to every open: a named pipe or a device opened
// without O_NONBLOCK can block the open itself, before its type can be
// checked on the descriptor.
const openFlags = syscall.O_NONBLOCK
