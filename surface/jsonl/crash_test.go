package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface/internal/loggen"
)

// TestCrashKillDuringAppends kills a writer with SIGKILL at random moments.
// The child appends batches of source events, printing each batch before it
// writes it and each acknowledged (synced) batch. After every kill, the
// session reopens cleanly with all acknowledged events and at most the
// events of the batch in flight, as whole lines (no partial line survives a
// reopen), and a further append works. The next child continues the same
// file.
func TestCrashKillDuringAppends(t *testing.T) {
	trials, maxDelay := 60, 40*time.Millisecond
	if longRun() {
		trials, maxDelay = 600, 100*time.Millisecond
	}
	dir := t.TempDir()
	src, err := loggen.Events(loggen.Small(1200))
	require.NoError(t, err)
	srcPath := filepath.Join(dir, "source.jsonl")
	require.NoError(t, os.WriteFile(srcPath, encodeFile(t, testHeader(), src), 0o644))
	path := filepath.Join(dir, FileName)
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("WEIR_CRASH_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("kill timing seed %d (set WEIR_CRASH_SEED to repeat)", seed)
	r := rand.New(rand.NewPCG(42, seed))

	var stats struct {
		unpublished, inFlightKept, inFlightPart, inFlightLost, torn, acked, rotations int
	}
	stored := int64(0) // events known to be stored before the trial
	for trial := range trials {
		cmd := child(t, roleCrash, envPath+"="+path, envSrc+"="+srcPath, envSeed+"="+strconv.Itoa(trial))
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		ready, out := make(chan struct{}), make(chan []string, 1)
		go func() {
			var ls []string
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if sc.Text() == "ready" {
					close(ready)
					continue
				}
				ls = append(ls, sc.Text())
			}
			out <- ls
		}()
		// Most kills land while the child appends; one in eight lands
		// anywhere, start-up and the reopen included.
		if r.IntN(8) != 0 {
			select {
			case <-ready:
			case <-time.After(10 * time.Second):
			}
		}
		time.Sleep(time.Duration(r.Int64N(int64(maxDelay))))
		cmd.Process.Kill()
		ls := <-out
		werr := cmd.Wait()

		acked, tryFirst, tryLast, done := stored-1, int64(-1), int64(-1), false
		for _, l := range ls {
			var a, b int64
			switch {
			case strings.HasPrefix(l, "try "):
				_, err := fmt.Sscanf(l, "try %d %d", &a, &b)
				require.NoError(t, err)
				tryFirst, tryLast = a, b
			case strings.HasPrefix(l, "ack "):
				_, err := fmt.Sscanf(l, "ack %d", &a)
				require.NoError(t, err)
				require.Equal(t, tryLast, a, "an ack closes the batch tried last")
				acked = a
				stats.acked++
			case l == "done":
				done = true
			default:
				require.Failf(t, "child failed", "trial %d: %s (%v)", trial, l, werr)
			}
		}

		s, log, err := Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			// Killed before the first batch was published: nothing was
			// acknowledged.
			require.Equal(t, int64(-1), acked, "trial %d", trial)
			require.Zero(t, stored)
			stats.unpublished++
			continue
		}
		require.NoError(t, err, "trial %d: the session reopens cleanly", trial)
		n := log.NextSeq()
		require.GreaterOrEqual(t, n-1, acked, "trial %d: every acknowledged event survives", trial)
		if n-1 > acked {
			// A kill can interrupt the batch's write: whole lines of a
			// prefix of it may survive, never a partial line.
			require.LessOrEqual(t, n-1, tryLast, "trial %d: beyond the acknowledged events only events of the batch in flight (%d..%d) may survive", trial, tryFirst, tryLast)
			if n-1 == tryLast {
				stats.inFlightKept++
			} else {
				stats.inFlightPart++
			}
		} else if tryLast > acked {
			stats.inFlightLost++
		}
		if s.Torn() > 0 {
			stats.torn++
		}
		requireSameEvents(t, src[:n], log.Events())
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, s.Size(), int64(len(raw)))
		require.True(t, bytes.HasSuffix(raw, []byte{'\n'}), "trial %d: no partial line survives a reopen", trial)

		if done || n >= int64(len(src))-1 {
			require.NoError(t, s.Close())
			require.NoError(t, os.Remove(path))
			stats.rotations++
			stored = 0
			continue
		}
		require.NoError(t, s.Append(src[n:n+1]), "trial %d: a further append works", trial)
		stored = n + 1
		require.NoError(t, s.Close())
	}
	t.Logf("%d trials: %d killed before publishing; in-flight batches: %d kept whole, %d kept in part, %d lost; %d torn tails; %d acks; %d rotations",
		trials, stats.unpublished, stats.inFlightKept, stats.inFlightPart, stats.inFlightLost, stats.torn, stats.acked, stats.rotations)
	require.Less(t, stats.unpublished, trials, "some children got to append")
}
