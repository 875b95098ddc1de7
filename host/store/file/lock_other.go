//go:build !unix

package file

import "fmt"

// holder: the file store takes no writer locks on this platform (see
// surface/jsonl), so it cannot tell a holder.
func holder(path string) (pid int, held bool, err error) {
	return 0, false, fmt.Errorf("session log %s: writer locks are not supported on this platform", path)
}
