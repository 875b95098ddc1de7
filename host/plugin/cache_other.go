//go:build !unix

package plugin

import "io/fs"

// ownedByOther is false where the platform tells no file owner.
func ownedByOther(fs.FileInfo) bool { return false }

// fileIno is 0 where the platform tells no inode.
func fileIno(fs.FileInfo) uint64 { return 0 }
