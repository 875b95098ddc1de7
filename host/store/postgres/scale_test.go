package postgres_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/host/store/postgres"
	"github.com/weirhost/weir/host/store/storetest"
	"github.com/weirhost/weir/surface"
)

const (
	scaleEnv      = "WEIR_PG_SCALE_URL"
	scaleArgsEnv  = "WEIR_PG_SCALE_ARGS" // "first sessions turns"
	scaleTurnSize = 4                    // events a turn appends, one batch
)

// scaleChild is one process of TestScaleOut: it works through its
// sessions, opening each (taking it over when its lease lapsed), appending
// the turns it lacks, one batch each, and printing each append's latency.
func scaleChild(url, spec string) error {
	var first, n, turns int
	if _, err := fmt.Sscan(spec, &first, &n, &turns); err != nil {
		return err
	}
	ctx := context.Background()
	st, err := postgres.Open(ctx, url, postgres.Password(postgres.PasswordEnv), postgres.Lease(time.Second, 300*time.Millisecond))
	if err != nil {
		return err
	}
	defer st.Close()
	evs := storetest.Synthetic(nopTB{}, turns*scaleTurnSize)
	pending := make([]int, 0, n)
	for i := range n {
		pending = append(pending, first+i)
	}
	for len(pending) > 0 {
		i := pending[0]
		pending = pending[1:]
		id := "s" + strconv.Itoa(i)
		w, err := st.Open(ctx, id, store.OpenOptions{Create: true}, func(surface.Event) error { return nil })
		if errors.Is(err, store.ErrLocked) {
			pending = append(pending, i) // its writer died: its lease lapses soon
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if err != nil {
			return err
		}
		if w.Info().Events > 0 {
			fmt.Println("takeover", id)
		}
		for next := int(w.Info().Events); next < len(evs); next += scaleTurnSize {
			start := time.Now()
			if err := w.Append(ctx, evs[next:next+scaleTurnSize]); err != nil {
				return err
			}
			fmt.Println("lat", time.Since(start).Nanoseconds())
		}
		if err := w.Close(); err != nil {
			return err
		}
	}
	fmt.Println("done")
	return nil
}

type nopTB struct{ testing.TB }

func (nopTB) Helper()               {}
func (nopTB) Errorf(string, ...any) {}
func (nopTB) FailNow()              { panic("fixtures do not decode") }

// TestScaleOut runs several processes on one PostgreSQL, each working
// through its share of the sessions a turn (one batch of four events) at
// a time, SIGKILLs random ones mid-run and starts a replacement that takes
// their sessions over once the dead writer's lease lapsed. Every session
// ends with exactly its events, byte for byte: none lost, none twice.
// WEIR_SCALE=1 runs the benchmark size (4 processes × 250 sessions × 3
// turns) and reports turns/s and the p99 append latency.
func TestScaleOut(t *testing.T) {
	procs, sessions, turns, kills := 3, 20, 3, 2
	if os.Getenv("WEIR_SCALE") == "1" {
		procs, sessions, turns, kills = 4, 250, 3, 4
	}
	url := newDB(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	type child struct {
		cmd  *exec.Cmd
		out  chan []string
		spec string
	}
	start := func(spec string) *child {
		c := &child{cmd: exec.Command(exe, "-test.run=^$"), out: make(chan []string, 1), spec: spec}
		c.cmd.Env = append(os.Environ(), scaleEnv+"="+url, scaleArgsEnv+"="+spec)
		c.cmd.Stderr = os.Stderr
		stdout, err := c.cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, c.cmd.Start())
		go func() {
			var ls []string
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				ls = append(ls, sc.Text())
			}
			c.out <- ls
		}()
		return c
	}
	began := time.Now()
	var live []*child
	for p := range procs {
		live = append(live, start(fmt.Sprintf("%d %d %d", p*sessions, sessions, turns)))
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 6))
	var lats []int64
	takeovers := 0
	collect := func(c *child, killed bool) {
		ls := <-c.out
		err := c.cmd.Wait()
		done := false
		for _, l := range ls {
			switch {
			case strings.HasPrefix(l, "lat "):
				v, _ := strconv.ParseInt(l[4:], 10, 64)
				lats = append(lats, v)
			case l == "done":
				done = true
			case strings.HasPrefix(l, "takeover "):
				takeovers++
			default:
				t.Errorf("child %q: %s", c.spec, l)
			}
		}
		if !killed {
			require.NoError(t, err, "child %q", c.spec)
			require.True(t, done, "child %q finished", c.spec)
		}
	}
	for k := range kills {
		time.Sleep(300*time.Millisecond + time.Duration(r.Int64N(int64(time.Second))))
		i := r.IntN(len(live))
		c := live[i]
		c.cmd.Process.Kill()
		collect(c, true)
		live[i] = start(c.spec) // the replacement takes the dead one's sessions over
		t.Logf("kill %d: process %q killed and replaced", k, c.spec)
	}
	for _, c := range live {
		collect(c, false)
	}
	elapsed := time.Since(began)

	st := open(t, url)
	defer st.Close()
	evs := storetest.Synthetic(t, turns*scaleTurnSize)
	list, err := st.List(context.Background())
	require.NoError(t, err)
	require.Len(t, list, procs*sessions)
	for _, info := range list {
		n := 0
		_, err := st.Load(context.Background(), info.ID, func(e surface.Event) error {
			require.Equal(t, string(surface.AppendEvent(nil, &evs[n])), string(surface.AppendEvent(nil, &e)), "session %s seq %d", info.ID, n)
			n++
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, len(evs), n, "session %s holds every event once", info.ID)
	}
	slices.Sort(lats)
	total := procs * sessions * turns
	p99 := time.Duration(lats[len(lats)*99/100])
	require.LessOrEqual(t, len(lats), total, "no turn was acknowledged twice")
	t.Logf("%d processes, %d sessions, %d turns, %d kills, %d sessions a replacement reopened with events in them: %.0f turns/s, append p50 %s p99 %s, %d appends acknowledged, 0 lost or duplicated events",
		procs, procs*sessions, total, kills, takeovers, float64(total)/elapsed.Seconds(), time.Duration(lats[len(lats)/2]), p99, len(lats))
}
