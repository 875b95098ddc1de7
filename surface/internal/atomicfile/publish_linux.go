package atomicfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// PublishNoReplace moves tmp to path unless path exists, atomically:
// renameat2(RENAME_NOREPLACE), or link(2) and unlink where the file system
// lacks it. An existing path fails with an error matching fs.ErrExist.
func PublishNoReplace(tmp, path string) error {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return linkNoReplace(tmp, path)
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: tmp, New: path, Err: err}
	}
	return nil
}
