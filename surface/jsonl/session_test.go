package jsonl

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
)

func TestCreateWritesNothingUntilFirstAppend(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	s, err := Create(path, testHeader())
	require.NoError(t, err)
	require.NoError(t, s.Append(nil), "an empty batch is a no-op")
	entries, _ := os.ReadDir(dir)
	require.Empty(t, entries, "nothing is written before the first append")

	evs := small(t).Events()
	require.NoError(t, s.Append(evs[:5]))
	entries, _ = os.ReadDir(dir)
	require.Len(t, entries, 1, "the temporary file was published, not left behind")
	require.Equal(t, FileName, entries[0].Name())
	require.NoError(t, s.Append(evs[5:9]))
	require.Equal(t, int64(9), s.NextSeq())
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	require.ErrorIs(t, s.Append(evs[9:10]), ErrClosed)

	ld, err := Load(path)
	require.NoError(t, err)
	requireSameEvents(t, evs[:9], ld.Log.Events())

	s, err = Create(filepath.Join(dir, "unused.jsonl"), testHeader())
	require.NoError(t, err)
	require.NoError(t, s.Close())
	entries, _ = os.ReadDir(dir)
	require.Len(t, entries, 1, "a created session that never appended leaves nothing")
}

func TestCreateRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	evs := small(t).Events()
	path := writeSession(t, dir, evs[:10], 10)
	before, _ := os.ReadFile(path)

	_, err := Create(path, testHeader())
	require.ErrorIs(t, err, fs.ErrExist)
	require.ErrorContains(t, err, path)

	// Two sessions created for the same path: the second to publish loses.
	other := filepath.Join(dir, "race.jsonl")
	a, err := Create(other, testHeader())
	require.NoError(t, err)
	b, err := Create(other, Header{ID: "s-2"})
	require.NoError(t, err)
	require.NoError(t, a.Append(evs[:3]))
	err = b.Append(evs[:2])
	require.ErrorIs(t, err, fs.ErrExist)
	require.ErrorContains(t, err, "refusing to overwrite")
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
	ld, err := Load(other)
	require.NoError(t, err)
	require.Equal(t, "s-1", ld.Header.ID)
	require.Equal(t, 3, ld.Log.Len())

	after, _ := os.ReadFile(path)
	require.Equal(t, before, after)
	entries, _ := os.ReadDir(dir)
	require.Len(t, entries, 2, "no temporary file is left behind")
}

func TestAppendRejectsBatchNotContinuingTheLog(t *testing.T) {
	evs := small(t).Events()
	path := writeSession(t, t.TempDir(), evs[:20], 20)
	before, _ := os.ReadFile(path)
	s, _, err := Open(path, NoSync())
	require.NoError(t, err)
	defer s.Close()

	gap := append([]surface.Event{evs[20]}, evs[22])
	for name, batch := range map[string][]surface.Event{
		"starts after the end":  evs[21:25],
		"starts before the end": evs[19:25],
		"starts at zero":        evs[0:3],
		"gap inside the batch":  gap,
	} {
		err := s.Append(batch)
		require.ErrorIs(t, err, ErrNotContinuous, name)
		require.ErrorContains(t, err, "continues with seq")
	}
	after, _ := os.ReadFile(path)
	require.Equal(t, before, after, "a rejected batch writes nothing")
	require.NoError(t, s.Append(evs[20:25]))

	// A created session must start at seq 0.
	c, err := Create(filepath.Join(t.TempDir(), FileName), testHeader(), NoSync())
	require.NoError(t, err)
	require.ErrorIs(t, c.Append(evs[1:3]), ErrNotContinuous)
}

func TestPersistStoresWhatTheLogAdmitted(t *testing.T) {
	evs := small(t).Events()
	path := filepath.Join(t.TempDir(), FileName)
	l, err := surface.Restore(evs[:30])
	require.NoError(t, err)
	s, err := Create(path, testHeader(), NoSync())
	require.NoError(t, err)
	require.NoError(t, s.Persist(l))
	require.NoError(t, s.Persist(l), "nothing new: no-op")
	for i := 30; i < 60; i++ {
		require.NoError(t, l.Admit(evs[i]))
		if i%7 == 0 {
			require.NoError(t, s.Persist(l))
		}
	}
	require.NoError(t, s.Persist(l))
	require.NoError(t, s.Close())

	s, log, err := Open(path, NoSync())
	require.NoError(t, err)
	requireSameEvents(t, evs[:60], log.Events())
	require.ErrorIs(t, s.Persist(surface.New()), ErrNotContinuous, "a shorter log is not this session's")
	require.NoError(t, s.Close())
}

func TestSecondWriterGetsLockError(t *testing.T) {
	evs := small(t).Events()
	dir := t.TempDir()
	path := writeSession(t, dir, evs[:10], 10)

	s, _, err := Open(path, NoSync())
	require.NoError(t, err)
	_, _, err = Open(path, NoSync())
	var le *LockedError
	require.ErrorAs(t, err, &le)
	require.ErrorIs(t, err, ErrLocked)
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, "another writer holds it")
	_, err = Load(path)
	require.NoError(t, err, "readers take no lock")
	require.NoError(t, s.Close())
	s, _, err = Open(path, NoSync())
	require.NoError(t, err, "Close released the lock")
	require.NoError(t, s.Close())

	// A created session holds the lock from its first append on.
	other := filepath.Join(dir, "created.jsonl")
	c, err := Create(other, testHeader(), NoSync())
	require.NoError(t, err)
	require.NoError(t, c.Append(evs[:2]))
	_, _, err = Open(other, NoSync())
	require.ErrorIs(t, err, ErrLocked)
	require.NoError(t, c.Close())
}

func child(t *testing.T, role string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + role}, env...)...)
	cmd.Stderr = os.Stderr
	return cmd
}

func TestSecondWriterInAnotherProcessGetsLockError(t *testing.T) {
	path := writeSession(t, t.TempDir(), small(t).Events()[:10], 10)

	// This process holds the lock; a child cannot open the session.
	s, _, err := Open(path, NoSync())
	require.NoError(t, err)
	out, err := child(t, roleLockTry, envPath+"="+path).Output()
	require.NoError(t, err)
	require.Contains(t, string(out), "another writer holds it")
	require.Contains(t, string(out), path)
	require.NoError(t, s.Close())
	out, err = child(t, roleLockTry, envPath+"="+path).Output()
	require.NoError(t, err)
	require.Equal(t, "ok\n", string(out))

	// A child holds the lock; this process cannot open the session until
	// the child lets go.
	cmd := child(t, roleLockHold, envPath+"="+path)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "held\n", line)
	_, _, err = Open(path, NoSync())
	require.ErrorIs(t, err, ErrLocked)
	require.ErrorContains(t, err, "another writer holds it")
	require.NoError(t, stdin.Close())
	require.NoError(t, cmd.Wait())
	s, _, err = Open(path, NoSync())
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

// faultyFile injects write, sync and truncate failures. A failing write
// first writes partial bytes of the buffer, as a full disk does.
type faultyFile struct {
	file
	writeErr error
	partial  int
	syncErr  error
	truncErr error
	syncs    int
}

func (f *faultyFile) WriteAt(b []byte, off int64) (int, error) {
	if f.writeErr != nil {
		n, _ := f.file.WriteAt(b[:min(f.partial, len(b))], off)
		return n, f.writeErr
	}
	return f.file.WriteAt(b, off)
}

func (f *faultyFile) Sync() error {
	f.syncs++
	if f.syncErr != nil {
		return f.syncErr
	}
	return f.file.Sync()
}

func (f *faultyFile) Truncate(n int64) error {
	if f.truncErr != nil {
		return f.truncErr
	}
	return f.file.Truncate(n)
}

func TestFailedAppendTruncatesBack(t *testing.T) {
	evs := small(t).Events()
	tests := []struct {
		name   string
		fault  faultyFile
		broken bool
		want   error
	}{
		{"disk full mid-write", faultyFile{writeErr: syscall.ENOSPC, partial: 700}, false, syscall.ENOSPC},
		{"short write", faultyFile{writeErr: syscall.EIO, partial: 1}, false, syscall.EIO},
		{"sync fails", faultyFile{syncErr: syscall.EIO}, false, syscall.EIO},
		{"truncate fails too", faultyFile{writeErr: syscall.ENOSPC, partial: 30, truncErr: syscall.EROFS}, true, syscall.ENOSPC},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeSession(t, t.TempDir(), evs[:40], 40)
			before, _ := os.ReadFile(path)
			s, _, err := Open(path)
			require.NoError(t, err)
			defer s.Close()
			fault := tc.fault
			fault.file = s.f
			s.f = &fault

			err = s.Append(evs[40:50])
			require.ErrorIs(t, err, tc.want)
			require.ErrorContains(t, err, "append seq 40..49")
			require.Equal(t, int64(40), s.NextSeq(), "the batch is not acknowledged")
			if tc.broken {
				require.ErrorContains(t, err, "refuses further appends")
				fault.writeErr, fault.truncErr = nil, nil
				require.ErrorContains(t, s.Append(evs[40:50]), "refuses further appends")
				require.NoError(t, s.Close())
				// The partial batch ends in a torn line; reopening drops it.
				s2, log, err := Open(path, NoSync())
				require.NoError(t, err)
				require.Positive(t, s2.Torn())
				requireSameEvents(t, evs[:40], log.Events())
				require.NoError(t, s2.Close())
				return
			}
			require.ErrorContains(t, err, "truncated back to")
			after, _ := os.ReadFile(path)
			require.Equal(t, before, after, "the file is back at its previous length")

			fault.writeErr, fault.syncErr = nil, nil
			require.NoError(t, s.Append(evs[40:50]), "the same batch can be appended again")
			require.NoError(t, s.Append(evs[50:55]))
			require.NoError(t, s.Close())
			ld, err := Load(path)
			require.NoError(t, err)
			requireSameEvents(t, evs[:55], ld.Log.Events())
		})
	}
}

func TestFailedFirstAppendPublishesNothing(t *testing.T) {
	evs := small(t).Events()
	for _, fault := range []faultyFile{{writeErr: syscall.ENOSPC, partial: 100}, {syncErr: syscall.EIO}} {
		dir := t.TempDir()
		path := filepath.Join(dir, FileName)
		s, err := Create(path, testHeader())
		require.NoError(t, err)
		var injected *faultyFile
		s.wrap = func(f *os.File) file {
			injected = &faultyFile{file: f, writeErr: fault.writeErr, partial: fault.partial, syncErr: fault.syncErr}
			return injected
		}
		err = s.Append(evs[:4])
		require.Error(t, err)
		require.True(t, errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EIO))
		entries, _ := os.ReadDir(dir)
		require.Empty(t, entries, "neither the session file nor the temporary file exists")

		s.wrap = osFile
		require.NoError(t, s.Append(evs[:4]))
		require.NoError(t, s.Close())
		ld, err := Load(path)
		require.NoError(t, err)
		requireSameEvents(t, evs[:4], ld.Log.Events())
	}
}

func TestSyncOption(t *testing.T) {
	evs := small(t).Events()
	for _, tc := range []struct {
		opts  []Option
		syncs int
	}{{nil, 2}, {[]Option{NoSync()}, 0}} {
		path := writeSession(t, t.TempDir(), evs[:5], 5)
		s, _, err := Open(path, tc.opts...)
		require.NoError(t, err)
		counter := &faultyFile{file: s.f}
		s.f = counter
		require.NoError(t, s.Append(evs[5:6]))
		require.NoError(t, s.Append(evs[6:8]))
		require.Equal(t, tc.syncs, counter.syncs)
		require.NoError(t, s.Close())
	}
}

func TestOpenRemovesStaleTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	path := writeSession(t, dir, small(t).Events()[:3], 3)
	stale := filepath.Join(dir, tempPrefix(path)+"123")
	require.NoError(t, os.WriteFile(stale, []byte("partial"), 0o644))
	unrelated := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(unrelated, nil, 0o644))
	s, _, err := Open(path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = os.Stat(stale)
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = os.Stat(unrelated)
	require.NoError(t, err)
}

func TestEventWithLineBreakIsRefused(t *testing.T) {
	s, err := Create(filepath.Join(t.TempDir(), FileName), testHeader(), NoSync())
	require.NoError(t, err)
	ev := surface.Event{Type: "turn/start", Seq: 0, Time: 1, Data: []byte("{\"turn\":\n1}")}
	err = s.Append([]surface.Event{ev})
	require.ErrorContains(t, err, "line break")
	require.True(t, strings.Contains(err.Error(), "seq 0"))
}
