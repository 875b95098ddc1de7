package jsonl

import (
	"os"

	"github.com/weirhost/weir/surface/internal/regular"
)

// ErrNotRegular is matched (errors.Is) by the error of loading or opening a
// session file that is not a regular file: a directory, a named pipe, a
// device or a socket. Such a file could block the reader or never end.
var ErrNotRegular = regular.ErrNotRegular

// NotRegularError is the error of a session path that is not a regular file.
type NotRegularError = regular.Error

// openRegular opens a session file, refusing anything but a regular file.
func openRegular(path string, flag int) (*os.File, error) {
	return regular.Open(path, flag, "a session log")
}
