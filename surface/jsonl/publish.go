package jsonl

import "os"

// linkNoReplace publishes tmp as path with link(2), which fails when path
// exists, then drops the temporary name (a leftover name is harmless: Open
// removes it).
func linkNoReplace(tmp, path string) error {
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	os.Remove(tmp)
	return nil
}
