package file_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/host/store/file"
	"github.com/weirhost/weir/host/store/storetest"
)

// On Linux the file store names the process that holds a session's lock
// (from /proc/locks), and the refusal to release it names it too.
func TestLeaseNamesTheProcess(t *testing.T) {
	ctx := context.Background()
	st := file.Dir(t.TempDir())
	w, err := st.Open(ctx, "s", store.OpenOptions{Create: true}, nil)
	require.NoError(t, err)
	defer w.Close()
	require.NoError(t, w.Append(ctx, storetest.Synthetic(t, 1)))
	l, err := st.Lease(ctx, "s")
	require.NoError(t, err)
	pid := strconv.Itoa(os.Getpid())
	require.Equal(t, store.Lease{Holder: "pid " + pid, UntilExit: true}, l)
	err = st.Lapse(ctx, "s")
	require.ErrorIs(t, err, store.ErrLocked)
	require.Contains(t, err.Error(), "session s: live process "+pid+" holds the lock of ")
	require.Contains(t, err.Error(), "it ends when that process closes the session or exits")
}
