//go:build unix

package jsonl

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lock takes the writer's lock: an exclusive, non-blocking flock(2) on the
// session file. flock locks belong to the open file description, so a second
// Session in the same process conflicts exactly as one in another process
// does; the lock ends when the file is closed or the process dies.
func lock(f *os.File, path string) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return &LockedError{Path: path}
		default:
			return fmt.Errorf("session log %s: lock: %w", path, err)
		}
	}
}
