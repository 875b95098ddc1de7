package jsonl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrNotRegular is matched (errors.Is) by the error of loading or opening a
// session file that is not a regular file: a directory, a named pipe, a
// device or a socket. Such a file could block the reader or never end.
var ErrNotRegular = errors.New("not a regular file")

// NotRegularError is the error of a session path that is not a regular file.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is not a regular file (%s); a session log is a regular file", e.Path, kindOf(e.Mode))
}

// Is matches ErrNotRegular.
func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// openRegular opens path with flag, refusing anything but a regular file.
// The type is checked before the open, so that a device is not even
// opened, and again on the descriptor, which is what counts should the
// path change in between; the open does not block on a named pipe.
func openRegular(path string, flag int) (*os.File, error) {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	f, err := os.OpenFile(path, flag|openFlags, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// kindOf names a file type for messages.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "an irregular file"
}
