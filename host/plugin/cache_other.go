//go:build !unix

package plugin

import "io/fs"

// ownedByOther is false where the platform tells no file owner.
func ownedByOther(fs.FileInfo) bool { return false }
