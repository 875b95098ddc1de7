// Package regular opens files that must be regular files (session logs, v2
// logs to convert) without blocking on a named pipe and without reading a
// device or a directory.
package regular

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrNotRegular is matched (errors.Is) by the error of opening a file that
// is not a regular file: a directory, a named pipe, a device or a socket.
// Such a file could block the reader or never end.
var ErrNotRegular = errors.New("not a regular file")

// Error is the error of a path that is not a regular file; What names what
// the file should have been ("a session log").
type Error struct {
	What string
	Path string
	Mode fs.FileMode
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s is not a regular file (%s); %s is a regular file", e.Path, kindOf(e.Mode), e.What)
}

// Is matches ErrNotRegular.
func (e *Error) Is(target error) bool { return target == ErrNotRegular }

// Open opens path with flag, refusing anything but a regular file; what
// names what the file should be, for the message.
// The type is checked before the open, so that a device is not even
// opened, and again on the descriptor, which is what counts should the
// path change in between; the open does not block on a named pipe.
func Open(path string, flag int, what string) (*os.File, error) {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, &Error{What: what, Path: path, Mode: fi.Mode()}
	}
	f, err := os.OpenFile(path, flag|openFlags, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &Error{What: what, Path: path, Mode: fi.Mode()}
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
