// Package atomicfile publishes finished files without ever overwriting an
// existing one, and makes directory entries durable. The session store and
// the v2 converter both write a temporary file, sync it, publish it here and
// sync the directory.
package atomicfile

import (
	"os"
)

// SyncDir fsyncs a directory, making the entries created in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// linkNoReplace publishes tmp as path with link(2), which fails when path
// exists, then drops the temporary name (a leftover name is harmless).
func linkNoReplace(tmp, path string) error {
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	os.Remove(tmp)
	return nil
}
