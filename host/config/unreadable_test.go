package config

import (
	"io/fs"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// An existing configuration file that cannot be opened is reported by its
// cause, never as a syntax problem. (The process-level case cannot be made
// as root, who reads every file, so the mapping is tested here.)
func TestUnreadableNamesTheCause(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&fs.PathError{Op: "open", Path: "weir.yaml", Err: syscall.EACCES},
			"cannot be read: permission denied; give read access to it (chmod u+r) or name another file with --config"},
		{&fs.PathError{Op: "open", Path: "weir.yaml", Err: syscall.EIO}, "cannot be read: input/output error"},
		{&fs.PathError{Op: "open", Path: "weir.yaml", Err: syscall.ELOOP}, "cannot be read: too many levels of symbolic links"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, unreadable(c.err))
	}
}
