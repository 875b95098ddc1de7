//go:build unix

package file

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// holder reports whether a writer holds the lock of the session file at
// path (jsonl's exclusive flock) and, when the system tells, that
// writer's process id (0 when unknown). It asks for the lock shared and
// without waiting, and drops it at once: a writer opening the session in
// that instant is refused as if another writer held it.
func holder(path string) (pid int, held bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		return 0, false, nil // closing f drops the probe's lock
	case errors.Is(err, unix.EWOULDBLOCK):
		var st unix.Stat_t
		if unix.Fstat(int(f.Fd()), &st) == nil {
			pid = lockPID(uint64(st.Dev), st.Ino)
		}
		return pid, true, nil
	default:
		return 0, false, fmt.Errorf("session log %s: probe its lock: %w", path, err)
	}
}
