//go:build unix

package plugin

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByOther reports whether fi belongs to a user other than the one
// running the host.
func ownedByOther(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) != os.Geteuid()
}

// fileIno is fi's inode number.
func fileIno(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
