package postgres_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/host/store/postgres"
	"github.com/weirhost/weir/surface"
)

const (
	hostsEnv      = "WEIR_PG_HOSTS_URL"
	hostsArgsEnv  = "WEIR_PG_HOSTS_ARGS" // "first sessions turns workers"
	hostsModelEnv = "WEIR_PG_HOSTS_MODEL"
)

// timedStore reports the latency of every append its writers make.
type timedStore struct {
	store.Store
	out func(format string, args ...any)
}

func (t timedStore) Open(ctx context.Context, id string, opt store.OpenOptions, load func(surface.Event) error) (store.Writer, error) {
	w, err := t.Store.Open(ctx, id, opt, load)
	if err != nil {
		return nil, err
	}
	return timedWriter{w, t.out}, nil
}

type timedWriter struct {
	store.Writer
	out func(format string, args ...any)
}

func (w timedWriter) Append(ctx context.Context, batch []surface.Event) error {
	start := time.Now()
	err := w.Writer.Append(ctx, batch)
	if err == nil && len(batch) > 0 {
		w.out("app %d", time.Since(start).Nanoseconds())
	}
	return err
}

// prefixHash is the SHA-256 of the canonical encodings of evs, in order:
// what a host acknowledged, compared with the stored log at the end.
func prefixHash(evs []surface.Event) string {
	h := sha256.New()
	var b []byte
	for i := range evs {
		b = surface.AppendEvent(b[:0], &evs[i])
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// turnsOf counts the turns a session's log started and completed.
func turnsOf(evs []surface.Event) (started, completed int) {
	for _, ev := range evs {
		switch ev.Type {
		case surface.TypeTurnStart:
			started++
		case surface.TypeTurnEnd:
			var end surface.TurnEnd
			if json.Unmarshal(ev.Data, &end) == nil && end.Reason.Kind == surface.EndCompleted {
				completed++
			}
		}
	}
	return started, completed
}

// hostsChild is one host process of TestScaleOutHosts, an embedder as in
// examples/embed: workers goroutines share its sessions, each opening one
// through host.Open (taking it over when the last writer's lease lapsed,
// the agent repairing a turn a killed host left open), running the turns
// it lacks against the streaming model server, and printing, after each
// completed turn, the turn's latency and what it acknowledged (the
// session's event count and the hash of those events). The store prints
// each append's latency.
func hostsChild(url, spec, model string) error {
	var first, n, turns, workers int
	if _, err := fmt.Sscan(spec, &first, &n, &turns, &workers); err != nil {
		return err
	}
	var mu sync.Mutex
	out := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	ctx := context.Background()
	pg, err := postgres.Open(ctx, url, postgres.Password(postgres.PasswordEnv), postgres.Lease(time.Second, 300*time.Millisecond))
	if err != nil {
		return err
	}
	defer pg.Close()
	st := timedStore{pg, out}
	client, err := llm.NewClient(llm.ClientConfig{BaseURL: model, Timeout: time.Minute, IdleTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	var qmu sync.Mutex
	pending := make([]string, 0, n)
	for i := range n {
		pending = append(pending, "s"+strconv.Itoa(first+i))
	}
	left := n
	// next hands out a session to work on, "" when every one is done.
	next := func() string {
		for {
			qmu.Lock()
			if left == 0 {
				qmu.Unlock()
				return ""
			}
			if len(pending) > 0 {
				id := pending[0]
				pending = pending[1:]
				qmu.Unlock()
				return id
			}
			qmu.Unlock()
			time.Sleep(10 * time.Millisecond) // another worker holds the rest
		}
	}
	session := func(id string) (done bool, err error) {
		s, err := host.Open(ctx, st, id)
		if errors.Is(err, store.ErrLocked) {
			return false, nil // its writer died: its lease lapses soon
		}
		if err != nil {
			return false, err
		}
		defer s.Close()
		a, err := host.NewAgent(s, host.Config{
			Route:    host.Route{Provider: "loopback", Model: "scale", ContextWindow: 65536},
			Model:    client,
			Sections: []host.Section{{Key: "base", Text: "You are terse."}},
		})
		if err != nil {
			return false, err
		}
		started, completed := turnsOf(s.Log().Events())
		if s.Log().Len() > 0 {
			out("takeover %s %d", id, started-completed)
		}
		for ; completed < turns; completed++ {
			started++
			begin := time.Now()
			res, err := a.Run(ctx, a.UserMessage(fmt.Sprintf("%s turn %d", id, started)))
			if err != nil {
				return false, err
			}
			if res.Err() != nil {
				return false, fmt.Errorf("session %s turn %d: %w", id, started, res.Err())
			}
			if err := s.Flush(); err != nil {
				return false, err
			}
			took := time.Since(begin)
			evs := s.Log().Events()
			out("ack %s %d %s", id, len(evs), prefixHash(evs))
			out("turn %d", took.Nanoseconds())
		}
		return true, nil
	}
	errs := make(chan error, workers)
	for range workers {
		go func() {
			for id := next(); id != ""; id = next() {
				done, err := session(id)
				if err != nil {
					errs <- fmt.Errorf("session %s: %w", id, err)
					return
				}
				qmu.Lock()
				if done {
					left--
				} else {
					pending = append(pending, id)
				}
				qmu.Unlock()
				if !done {
					time.Sleep(20 * time.Millisecond)
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			return err
		}
	}
	out("done")
	return nil
}

var userTurn = regexp.MustCompile(`"(s\d+) turn (\d+)"`)

// TestScaleOutHosts runs several embedded-host processes on one
// PostgreSQL, each running agent turns for its share of the sessions
// (several at once) against a loopback model server speaking the
// OpenAI-compatible streaming protocol. It SIGKILLs processes mid-run,
// each after a random number of its acknowledged turns, and starts a
// replacement on the same sessions, which takes each over once the dead
// host's lease lapsed, the agent repairing the turn the kill interrupted.
// At the end every session's log loads, holds exactly its turns (each
// user message once, in order, the given number completed), and begins
// with every event prefix a host acknowledged, byte for byte: none lost,
// none twice. WEIR_SCALE=1 runs the benchmark size (4 processes × 250
// sessions × 3 turns, 4 kills) and reports turns/s and the p50 and p99 of
// the turn and the append latency.
func TestScaleOutHosts(t *testing.T) {
	procs, sessions, turns, workers, kills := 3, 6, 2, 2, 2
	if os.Getenv("WEIR_SCALE") == "1" {
		procs, sessions, turns, workers, kills = 4, 250, 3, 4, 4
	}
	url := newDB(t)
	srv := llmtest.NewServer(t)
	srv.SetFallback(func(int, llmtest.Request) llmtest.Reply {
		r := llmtest.TextReply(120, 12, "Noted", ", ", "and", " done", ".")
		r.Gap = 2 * time.Millisecond // a model streaming its reply
		return r
	})
	exe, err := os.Executable()
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))

	type child struct {
		cmd    *exec.Cmd
		spec   string
		killAt int // acknowledged turns after which it is killed; 0: never
		lines  []string
		killed bool
	}
	var mu sync.Mutex // guards every child's lines and killed
	finished := make(chan *child)
	start := func(spec string, killAt int) *child {
		c := &child{cmd: exec.Command(exe, "-test.run=^$"), spec: spec, killAt: killAt}
		c.cmd.Env = append(os.Environ(), hostsEnv+"="+url, hostsArgsEnv+"="+spec, hostsModelEnv+"="+srv.URL())
		c.cmd.Stderr = os.Stderr
		stdout, err := c.cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, c.cmd.Start())
		go func() {
			acks := 0
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				mu.Lock()
				c.lines = append(c.lines, sc.Text())
				if strings.HasPrefix(sc.Text(), "ack ") {
					acks++
					if acks == c.killAt {
						c.killed = true
						c.cmd.Process.Kill()
					}
				}
				mu.Unlock()
			}
			c.cmd.Wait()
			finished <- c
		}()
		return c
	}
	killAt := func() int {
		if kills == 0 {
			return 0
		}
		kills--
		return 1 + r.IntN(max(1, sessions*turns/2))
	}
	began := time.Now()
	live := 0
	for p := range procs {
		start(fmt.Sprintf("%d %d %d %d", p*sessions, sessions, turns, workers), killAt())
		live++
	}
	var all []*child
	for live > 0 {
		c := <-finished
		live--
		all = append(all, c)
		mu.Lock()
		killed := c.killed
		mu.Unlock()
		if killed {
			t.Logf("process %q killed after %d acknowledged turns; a replacement takes its sessions over", c.spec, c.killAt)
			start(c.spec, killAt())
			live++
			continue
		}
		require.True(t, c.cmd.ProcessState.Success(), "process %q: %s", c.spec, strings.Join(c.lines, "\n"))
		require.Equal(t, "done", c.lines[len(c.lines)-1], "process %q finished", c.spec)
	}
	elapsed := time.Since(began)

	var turnLats, appLats []int64
	acks := map[string][][2]string{} // session → (event count, hash) a host acknowledged
	takeovers, repaired := 0, 0
	for _, c := range all {
		for _, l := range c.lines {
			f := strings.Fields(l)
			switch {
			case f[0] == "turn" && len(f) == 2:
				v, _ := strconv.ParseInt(f[1], 10, 64)
				turnLats = append(turnLats, v)
			case f[0] == "app" && len(f) == 2:
				v, _ := strconv.ParseInt(f[1], 10, 64)
				appLats = append(appLats, v)
			case f[0] == "ack" && len(f) == 4:
				acks[f[1]] = append(acks[f[1]], [2]string{f[2], f[3]})
			case f[0] == "takeover" && len(f) == 3:
				takeovers++
				if f[2] != "0" {
					repaired++
				}
			case l == "done":
			default:
				t.Errorf("process %q: %s", c.spec, l)
			}
		}
	}

	st := open(t, url)
	defer st.Close()
	list, err := st.List(context.Background())
	require.NoError(t, err)
	require.Len(t, list, procs*sessions)
	interrupted, lost := 0, 0
	for _, info := range list {
		l := surface.New()
		_, err := st.Load(context.Background(), info.ID, l.Admit)
		require.NoError(t, err, "session %s loads", info.ID)
		evs := l.Events()
		started, completed := turnsOf(evs)
		require.Equal(t, turns, completed, "session %s completed each of its turns once", info.ID)
		interrupted += started - completed
		// Each user message once, turns in order. A turn a kill cut off
		// before its user message was committed has none (that message
		// was never acknowledged); every completed turn has its own.
		said := map[int64]bool{}
		last := int64(0)
		for _, ev := range evs {
			switch ev.Type {
			case surface.TypeUserMessage:
				m := userTurn.FindAllSubmatch(ev.Data, -1)
				require.Len(t, m, 1, "session %s seq %d: one user message of the test", info.ID, ev.Seq)
				require.Equal(t, info.ID, string(m[0][1]), "seq %d", ev.Seq)
				k, _ := strconv.ParseInt(string(m[0][2]), 10, 64)
				require.Greater(t, k, last, "session %s seq %d: each turn's user message once, in order", info.ID, ev.Seq)
				require.LessOrEqual(t, k, int64(started), "session %s seq %d", info.ID, ev.Seq)
				said[k], last = true, k
			case surface.TypeTurnEnd:
				var end surface.TurnEnd
				require.NoError(t, json.Unmarshal(ev.Data, &end))
				if end.Reason.Kind == surface.EndCompleted {
					require.True(t, said[end.Turn], "session %s: completed turn %d has its user message", info.ID, end.Turn)
				}
			}
		}
		lost += started - len(said)
		for _, a := range acks[info.ID] {
			k, _ := strconv.Atoi(a[0])
			require.LessOrEqual(t, k, len(evs), "session %s keeps the %d events a host acknowledged", info.ID, k)
			require.Equal(t, a[1], prefixHash(evs[:k]), "session %s: the first %d events are those a host acknowledged, byte for byte", info.ID, k)
		}
	}
	total := procs * sessions * turns
	// A turn a host committed just before it was killed may not have been
	// reported; none is reported twice (a completed turn is never run again).
	require.LessOrEqual(t, len(turnLats), total, "no turn was acknowledged twice")
	require.GreaterOrEqual(t, len(turnLats), total-(len(all)-procs)*workers, "every turn was reported but those a killed host's workers had just committed")
	slices.Sort(turnLats)
	slices.Sort(appLats)
	pct := func(v []int64, p int) time.Duration { return time.Duration(v[min(len(v)-1, len(v)*p/100)]) }
	t.Logf("%d host processes × %d sessions × %d turns (%d workers each), %d kills: %.0f turns/s; turn p50 %s p99 %s; append p50 %s p99 %s (%d appends); "+
		"%d sessions reopened by a replacement with events in them, %d with a turn the kill interrupted (%d interrupted turns repaired, %d of them before their user message was committed); %d model requests; 0 acknowledged events lost, 0 duplicated",
		procs, sessions, turns, workers, len(all)-procs, float64(total)/elapsed.Seconds(), pct(turnLats, 50), pct(turnLats, 99), pct(appLats, 50), pct(appLats, 99), len(appLats),
		takeovers, repaired, interrupted, lost, len(srv.Requests()))
}
