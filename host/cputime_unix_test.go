//go:build unix

package host

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used (user and system), all
// goroutines and the garbage collector included: on a loaded machine it
// moves far less than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
