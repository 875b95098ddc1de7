//go:build unix

package regular

import "syscall"

// openFlags are added to every open: a named pipe opened
// without O_NONBLOCK blocks the open itself until a writer comes, before
// its type can be checked on the descriptor. Regular files ignore the flag.
const openFlags = syscall.O_NONBLOCK
