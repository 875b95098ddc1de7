//go:build !unix

package jsonl

import (
	"fmt"
	"os"
)

func lock(f *os.File, path string) error {
	return fmt.Errorf("session log %s: writer locks are not supported on this platform", path)
}
