// Package storetest is the conformance suite of the session store
// contract (package host/store). Every implementation runs it from its
// tests:
//
//	func TestConformance(t *testing.T) { storetest.Run(t, harness) }
//
// and, for the crash trials, which re-execute the test binary, its
// TestMain calls Main first.
package storetest

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

// Harness tells the suite how to make and handle stores of one kind.
type Harness struct {
	// New returns a fresh, empty store; the suite closes it.
	New func(t testing.TB) store.Store
	// Again returns a second handle on the store st (another connection,
	// as a second process would open it), or nil to reuse st. The suite
	// closes it.
	Again func(t testing.TB, st store.Store) store.Store
	// Lapse makes the lease of session id's writer run out, as if its
	// host had paused past the lease's timeout. nil when a lease cannot
	// lapse while its holder lives (the file store's flock).
	Lapse func(t testing.TB, st store.Store, id string)
	// Spec names the store st for a child process, which opens it with
	// the function given to Main; nil skips the crash trials (a store
	// that does not outlive its process).
	Spec func(t testing.TB, st store.Store) string
	// Short returns a store whose leases last lease, never renewed (its
	// writers' hosts are stopped), and whose lock waits are bounded by
	// wait: a fresh one when st is nil, else a second
	// handle on st's database. nil skips the FrozenWriter test.
	Short func(t testing.TB, st store.Store, lease, wait time.Duration) store.Store
	// Freeze begins a transaction on st's database, from st's own
	// connections, that runs the first statement of an append to session
	// id and then stops, as a writer frozen or cut off inside its append
	// transaction; thaw rolls it back (if the database has not ended it).
	Freeze func(t testing.TB, st store.Store, id string) (thaw func())
	// EndsFrozen says the database itself ends a transaction left idle
	// past the lease (PostgreSQL's idle_in_transaction_session_timeout),
	// so a takeover needs nothing of the frozen writer. Without it the
	// lock lasts until the frozen writer's process ends (SQLite), and the
	// suite checks only that every wait is bounded and names the writer.
	EndsFrozen bool
	// PartialReads says a reader beside a writer may see part of a batch
	// in flight (whole events, but not the whole batch): the file store,
	// whose reader reads the file while a write extends it.
	PartialReads bool
}

//go:embed testdata/*.jsonl
var testdata embed.FS

// Fixture is a recorded session: its id and its event lines.
type Fixture struct {
	Name  string
	Lines [][]byte
}

// Fixtures are the sessions the round trip stores: between them every
// event type of the v3 format, an ignorable type this build does not know,
// and data with escapes, astral characters, big numbers and deep nesting.
func Fixtures(t testing.TB) []Fixture {
	ents, err := fs.ReadDir(testdata, "testdata")
	require.NoError(t, err)
	var out []Fixture
	for _, e := range ents {
		b, err := testdata.ReadFile("testdata/" + e.Name())
		require.NoError(t, err)
		lines := bytes.Split(bytes.TrimSuffix(b, []byte{'\n'}), []byte{'\n'})
		out = append(out, Fixture{Name: strings.TrimSuffix(e.Name(), ".jsonl"), Lines: lines[1:]})
	}
	return out
}

// Decode decodes event lines.
func Decode(t testing.TB, lines [][]byte) []surface.Event {
	evs := make([]surface.Event, len(lines))
	for i, l := range lines {
		e, err := surface.DecodeEvent(l)
		require.NoError(t, err, "line %d", i)
		evs[i] = e
	}
	return evs
}

// Synthetic returns n events cycling through the fixtures' events, with
// seqs 0..n-1 (a store keeps any contiguous events; it does not admit
// them, so the log they form need not be valid).
func Synthetic(t testing.TB, n int) []surface.Event {
	var src []surface.Event
	for _, f := range Fixtures(t) {
		src = append(src, Decode(t, f.Lines)...)
	}
	out := make([]surface.Event, n)
	for i := range out {
		e := src[i%len(src)]
		out[i] = surface.Event{Type: e.Type, Seq: int64(i), Time: e.Time, Data: e.Data, Op: e.Op, Sources: e.Sources, Ignorable: e.Ignorable}
	}
	return out
}

func encode(e surface.Event) []byte { return surface.AppendEvent(nil, &e) }

func newStore(t testing.TB, h Harness) store.Store {
	st := h.New(t)
	t.Cleanup(func() { st.Close() })
	return st
}

func again(t testing.TB, h Harness, st store.Store) store.Store {
	if h.Again == nil {
		return st
	}
	st2 := h.Again(t, st)
	t.Cleanup(func() { st2.Close() })
	return st2
}

// collect loads session id into encoded lines.
func collect(t testing.TB, st store.Store, id string) (store.Info, [][]byte) {
	var got [][]byte
	info, err := st.Load(context.Background(), id, func(e surface.Event) error {
		got = append(got, encode(e))
		return nil
	})
	require.NoError(t, err)
	return info, got
}

func open(t testing.TB, st store.Store, id string, create bool) (store.Writer, [][]byte) {
	var got [][]byte
	w, err := st.Open(context.Background(), id, store.OpenOptions{Create: create, CreatedAt: 1_750_000_000_000}, func(e surface.Event) error {
		got = append(got, encode(e))
		return nil
	})
	require.NoError(t, err)
	return w, got
}

func requireLines(t testing.TB, want, got [][]byte, msg string) {
	t.Helper()
	require.Equal(t, len(want), len(got), "%s: event count", msg)
	for i := range want {
		if !bytes.Equal(want[i], got[i]) {
			require.Failf(t, msg, "event %d differs:\nwant %s\ngot  %s", i, want[i], got[i])
		}
	}
}

// Run runs the conformance suite.
func Run(t *testing.T, h Harness) {
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, h) })
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, h) })
	t.Run("Header", func(t *testing.T) { testHeader(t, h) })
	t.Run("BatchAtomicity", func(t *testing.T) { testAtomicity(t, h) })
	t.Run("SingleWriter", func(t *testing.T) { testSingleWriter(t, h) })
	t.Run("FencedAfterTakeover", func(t *testing.T) { testFenced(t, h) })
	t.Run("FrozenWriter", func(t *testing.T) { testFrozen(t, h) })
	t.Run("EpochsNeverRepeat", func(t *testing.T) { testEpochs(t, h) })
	t.Run("LeaseTools", func(t *testing.T) { testLeaseTools(t, h) })
	t.Run("ReaderDuringWrites", func(t *testing.T) { testReader(t, h) })
	t.Run("Cancelled", func(t *testing.T) { testCancelled(t, h) })
	t.Run("List", func(t *testing.T) { testList(t, h) })
	t.Run("HostResume", func(t *testing.T) { testHostResume(t, h) })
	t.Run("CloseFlushes", func(t *testing.T) { testCloseFlushes(t, h) })
	t.Run("Crash", func(t *testing.T) { testCrash(t, h) })
}

// testRoundTrip stores every fixture in batches of varied sizes and reads
// it back, through Load and through Open, byte for byte.
func testRoundTrip(t *testing.T, h Harness) {
	st := newStore(t, h)
	ctx := context.Background()
	for _, f := range Fixtures(t) {
		evs := Decode(t, f.Lines)
		w, got := open(t, st, f.Name, true)
		require.Empty(t, got)
		info := w.Info()
		require.Equal(t, f.Name, info.ID)
		require.Equal(t, int64(1_750_000_000_000), info.CreatedAt)
		require.Zero(t, info.Events)
		for i, size := 0, 1; i < len(evs); i, size = i+size, size%4+1 {
			require.NoError(t, w.Append(ctx, evs[i:min(i+size, len(evs))]))
		}
		require.Equal(t, int64(len(evs)), w.Info().Events)
		require.NoError(t, w.Close())
		require.NoError(t, w.Close(), "Close is idempotent")

		info, got = collect(t, st, f.Name)
		requireLines(t, f.Lines, got, f.Name+": Load")
		require.Equal(t, int64(len(evs)), info.Events)
		w, got = open(t, st, f.Name, false)
		requireLines(t, f.Lines, got, f.Name+": Open")
		require.Equal(t, int64(len(evs)), w.Info().Events)
		require.NoError(t, w.Close())
		_, got = collect(t, again(t, h, st), f.Name)
		requireLines(t, f.Lines, got, f.Name+": Load through a second handle")
	}
}

// testHeader: a session created with a header loads with every member of
// it, unknown ones included; its ID and CreatedAt are the session's.
func testHeader(t *testing.T, h Harness) {
	st := newStore(t, h)
	ctx := context.Background()
	hd := jsonl.Header{ID: "ignored", CreatedAt: 1, Cwd: "/srv/work", ParentSession: "parent-1", IsSeeded: true, Origin: "subagent",
		DelegationDepth: 2, AgentPreset: jsontext.Value(`{"name":"reviewer","tools":["read"]}`), Extra: jsontext.Value(`{"title":"t","x":[1,{"y":null}]}`)}
	w, err := st.Open(ctx, "hd", store.OpenOptions{Create: true, CreatedAt: 1_750_000_000_000, Header: &hd}, nil)
	require.NoError(t, err)
	require.NoError(t, w.Append(ctx, Synthetic(t, 2)))
	require.NoError(t, w.Close())
	info, _ := collect(t, again(t, h, st), "hd")
	require.NotNil(t, info.Header, "the store keeps the header")
	want := hd
	want.ID, want.CreatedAt = "hd", 1_750_000_000_000
	wantLine, err := jsonl.MarshalHeader(want)
	require.NoError(t, err)
	gotLine, err := jsonl.MarshalHeader(*info.Header)
	require.NoError(t, err)
	require.Equal(t, string(wantLine), string(gotLine), "the header, byte for byte")

	w, err = st.Open(ctx, "plain", store.OpenOptions{Create: true}, nil)
	require.NoError(t, err)
	require.NoError(t, w.Append(ctx, Synthetic(t, 1)))
	require.NoError(t, w.Close())
	info, _ = collect(t, st, "plain")
	if info.Header != nil {
		require.False(t, info.Header.IsSeeded)
		require.Empty(t, info.Header.Cwd)
	}
}

func testNotFound(t *testing.T, h Harness) {
	st := newStore(t, h)
	ctx := context.Background()
	_, err := st.Open(ctx, "absent", store.OpenOptions{}, func(surface.Event) error { return nil })
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = st.Load(ctx, "absent", func(surface.Event) error { return nil })
	require.ErrorIs(t, err, store.ErrNotFound)
	// An error from the load function aborts the open and releases the
	// lease.
	w, _ := open(t, st, "s", true)
	require.NoError(t, w.Append(ctx, Synthetic(t, 3)))
	require.NoError(t, w.Close())
	boom := errors.New("refused by the loader")
	_, err = st.Open(ctx, "s", store.OpenOptions{}, func(surface.Event) error { return boom })
	require.ErrorIs(t, err, boom)
	w, got := open(t, st, "s", false)
	require.Len(t, got, 3)
	require.NoError(t, w.Close())
}

// testAtomicity: a batch that does not continue the log stores nothing,
// not even its valid prefix, and the writer goes on.
func testAtomicity(t *testing.T, h Harness) {
	st := newStore(t, h)
	ctx := context.Background()
	evs := Synthetic(t, 10)
	w, _ := open(t, st, "atomic", true)
	defer w.Close()
	require.NoError(t, w.Append(ctx, evs[:3]))
	bad := []surface.Event{evs[3], evs[4], evs[6]}
	require.ErrorIs(t, w.Append(ctx, bad), store.ErrNotContinuous)
	require.ErrorIs(t, w.Append(ctx, evs[5:7]), store.ErrNotContinuous)
	require.ErrorIs(t, w.Append(ctx, evs[:2]), store.ErrNotContinuous)
	require.NoError(t, w.Append(ctx, nil), "an empty batch is a no-op")
	_, got := collect(t, st, "atomic")
	require.Len(t, got, 3, "nothing of a refused batch is stored")
	require.NoError(t, w.Append(ctx, evs[3:10]))
	_, got = collect(t, st, "atomic")
	want := make([][]byte, 10)
	for i := range evs {
		want[i] = encode(evs[i])
	}
	requireLines(t, want, got, "after the refusals")
}

func testSingleWriter(t *testing.T, h Harness) {
	st := newStore(t, h)
	st2 := again(t, h, st)
	ctx := context.Background()
	w, _ := open(t, st, "one", true)
	require.NoError(t, w.Append(ctx, Synthetic(t, 2)))
	for _, s := range []store.Store{st, st2} {
		_, err := s.Open(ctx, "one", store.OpenOptions{Create: true}, func(surface.Event) error { return nil })
		require.ErrorIs(t, err, store.ErrLocked, "a second writer is refused while the first holds the lease")
		if d, ok := s.(store.Deleter); ok {
			require.ErrorIs(t, d.Delete(ctx, "one"), store.ErrLocked, "a held session is not deleted")
		}
	}
	// Concurrent writers of a new session: exactly one gets to store its
	// batch. The others are refused at the open (ErrLocked) or, where a
	// store creates a session with its first batch (the file store), at
	// that append (ErrFenced).
	var wg sync.WaitGroup
	var mu sync.Mutex
	stored, refused := 0, 0
	var opened []store.Writer // closed once every writer tried
	for i := range 4 {
		s := []store.Store{st, st2}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := s.Open(ctx, "race", store.OpenOptions{Create: true}, func(surface.Event) error { return nil })
			if err == nil {
				err = w.Append(ctx, Synthetic(t, 2))
			}
			mu.Lock()
			defer mu.Unlock()
			if w != nil {
				opened = append(opened, w)
			}
			switch {
			case err == nil:
				stored++
			case errors.Is(err, store.ErrLocked), errors.Is(err, store.ErrFenced):
				refused++
			default:
				t.Errorf("concurrent writer: %v", err)
			}
		}()
	}
	wg.Wait()
	for _, w := range opened {
		require.NoError(t, w.Close())
	}
	require.Equal(t, 1, stored, "one of four concurrent writers stores its batch")
	require.Equal(t, 3, refused)
	_, got := collect(t, st, "race")
	require.Len(t, got, 2)

	require.NoError(t, w.Close())
	w2, got := open(t, st2, "one", false)
	require.Len(t, got, 2, "the next writer gets the session once the first closed")
	require.NoError(t, w2.Close())
}

// testFenced: a writer whose lease lapsed and was taken over has its next
// append refused by the store, and the log holds the old writer's
// acknowledged events, then the new writer's, nothing interleaved.
func testFenced(t *testing.T, h Harness) {
	if h.Lapse == nil {
		t.Skip("this store's lease cannot lapse while its holder lives: a second writer waits for the first to close or die (see Crash)")
	}
	st := newStore(t, h)
	st2 := again(t, h, st)
	ctx := context.Background()
	evs := Synthetic(t, 8)
	w1, _ := open(t, st, "fence", true)
	defer w1.Close()
	require.NoError(t, w1.Append(ctx, evs[:3]))
	_, err := st2.Open(ctx, "fence", store.OpenOptions{}, func(surface.Event) error { return nil })
	require.ErrorIs(t, err, store.ErrLocked)
	var before store.Lease
	if l, ok := st.(store.Leaser); ok {
		var err error
		before, err = l.Lease(ctx, "fence")
		require.NoError(t, err)
		require.NotEmpty(t, before.Holder, "the lease names its writer")
		require.Positive(t, before.Left, "the writer's lease is running")
	}
	h.Lapse(t, st, "fence")
	if l, ok := st.(store.Leaser); ok {
		lapsed, err := l.Lease(ctx, "fence")
		require.NoError(t, err)
		require.Zero(t, lapsed.Left, "a lapsed lease has nothing left")
		require.Equal(t, before.Holder, lapsed.Holder, "and still names its last writer")
		require.ErrorIs(t, l.Lapse(ctx, "no-such-session"), store.ErrNotFound)
	}
	w2, got := open(t, st2, "fence", false)
	defer w2.Close()
	require.Len(t, got, 3)
	if l, ok := st.(store.Leaser); ok {
		after, err := l.Lease(ctx, "fence")
		require.NoError(t, err)
		require.NotEqual(t, before.Epoch, after.Epoch, "the takeover has a new epoch")
		require.Positive(t, after.Left)
	}
	require.NoError(t, w2.Append(ctx, evs[3:5]))
	err = w1.Append(ctx, evs[3:5])
	require.ErrorIs(t, err, store.ErrFenced, "the stale writer's append is refused")
	require.ErrorIs(t, w1.Append(ctx, evs[5:6]), store.ErrFenced, "and every later one")
	require.NoError(t, w2.Append(ctx, evs[5:8]))
	_, got = collect(t, st, "fence")
	want := make([][]byte, 8)
	for i := range evs {
		want[i] = encode(evs[i])
	}
	requireLines(t, want, got, "after the takeover")
	require.NoError(t, w1.Close(), "closing a fenced writer releases nothing of the new one")
	_, err = st.Open(ctx, "fence", store.OpenOptions{}, func(surface.Event) error { return nil })
	require.ErrorIs(t, err, store.ErrLocked, "the new writer still holds the lease")
}

// testFrozen: a writer frozen inside its append transaction holds the
// session's row (the whole database, in SQLite). Every open beside it
// returns within the store's bounded wait, with ErrLocked naming the
// writer; a reader loads the committed events meanwhile; and where the
// database ends an idle transaction, a takeover succeeds within the lease
// plus a margin and the frozen writer is refused afterwards.
func testFrozen(t *testing.T, h Harness) {
	if h.Short == nil || h.Freeze == nil {
		t.Skip("this store has no transaction to freeze")
	}
	const lease, wait, margin = 3 * time.Second, 500 * time.Millisecond, 2 * time.Second
	a := h.Short(t, nil, lease, wait)
	t.Cleanup(func() { a.Close() })
	b := h.Short(t, a, lease, wait)
	t.Cleanup(func() { b.Close() })
	ctx := context.Background()
	evs := Synthetic(t, 6)
	w1, _ := open(t, a, "frozen", true)
	defer w1.Close()
	require.NoError(t, w1.Append(ctx, evs[:3]))
	thaw := h.Freeze(t, a, "frozen")
	defer thaw()
	frozen := time.Now()

	_, got := collect(t, b, "frozen")
	require.Len(t, got, 3, "a reader beside the frozen writer loads the committed events")
	c := h.Short(t, a, lease, wait)
	_, got = collect(t, c, "frozen")
	require.Len(t, got, 3, "a store opened beside the frozen writer (its migration check takes no lock) loads the committed events")
	require.NoError(t, c.Close())
	var w2 store.Writer
	for attempt := 0; w2 == nil; attempt++ {
		start := time.Now()
		w, err := b.Open(ctx, "frozen", store.OpenOptions{}, func(surface.Event) error { return nil })
		took := time.Since(start)
		require.LessOrEqual(t, took, wait+margin, "attempt %d: an open beside a frozen writer returns within the bounded wait", attempt)
		if err == nil {
			w2 = w
			break
		}
		t.Logf("attempt %d: %v", attempt, err)
		require.ErrorIs(t, err, store.ErrLocked, "attempt %d", attempt)
		require.Contains(t, err.Error(), "writer ", "attempt %d: the error names the writer", attempt)
		require.NotContains(t, err.Error(), "writer  ", "attempt %d: the error names the writer", attempt)
		if !h.EndsFrozen && attempt == 2 {
			thaw() // the frozen writer's process ended
			h.Lapse(t, a, "frozen")
		}
		require.LessOrEqual(t, time.Since(frozen), lease+wait+margin, "the takeover waits no longer than the lease plus a margin")
	}
	defer w2.Close()
	require.NoError(t, w2.Append(ctx, evs[3:6]))
	require.Error(t, w1.Append(ctx, evs[3:4]), "the frozen writer, thawed, stores nothing")
	_, got = collect(t, b, "frozen")
	want := make([][]byte, len(evs))
	for i := range evs {
		want[i] = encode(evs[i])
	}
	requireLines(t, want, got, "after the takeover")
}

// testLeaseTools: a store that tells who holds a session (store.Leaser)
// says so while a writer holds it, refuses to delete it then, and to end
// a lock that lasts as long as its holder; once the writer closed, the
// session is free, releasing it changes nothing, and it can be deleted.
func testLeaseTools(t *testing.T, h Harness) {
	st := newStore(t, h)
	l, ok := st.(store.Leaser)
	if !ok {
		t.Skip("this store does not tell who holds a session")
	}
	ctx := context.Background()
	_, err := l.Lease(ctx, "no-such-session")
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, l.Lapse(ctx, "no-such-session"), store.ErrNotFound)
	w, _ := open(t, st, "tools", true)
	defer w.Close()
	require.NoError(t, w.Append(ctx, Synthetic(t, 2)))
	held, err := l.Lease(ctx, "tools")
	require.NoError(t, err)
	require.True(t, held.Held(), "the writer holds the session: %+v", held)
	if !held.UntilExit {
		require.NotEmpty(t, held.Holder, "the lease names its writer")
		require.Positive(t, held.Epoch)
	}
	if d, ok := st.(store.Deleter); ok {
		require.ErrorIs(t, d.Delete(ctx, "tools"), store.ErrLocked, "a held session is not deleted")
	}
	if held.UntilExit {
		err := l.Lapse(ctx, "tools")
		require.ErrorIs(t, err, store.ErrLocked, "a lock that lasts as long as its holder is not ended from outside")
		if held.Holder != "" {
			require.Contains(t, err.Error(), strings.TrimPrefix(held.Holder, "pid "), "the refusal names the holder")
		}
		require.NoError(t, w.Append(ctx, Synthetic(t, 3)[2:]), "the writer keeps its lock")
	}
	require.NoError(t, w.Close())
	free, err := l.Lease(ctx, "tools")
	require.NoError(t, err)
	require.False(t, free.Held(), "a closed writer holds nothing: %+v", free)
	require.NoError(t, l.Lapse(ctx, "tools"), "releasing a free session changes nothing")
	w2, got := open(t, st, "tools", false)
	require.NotEmpty(t, got)
	require.NoError(t, w2.Close())
	if d, ok := st.(store.Deleter); ok {
		require.NoError(t, d.Delete(ctx, "tools"))
		_, err = l.Lease(ctx, "tools")
		require.ErrorIs(t, err, store.ErrNotFound, "a deleted session is gone")
		_, err = st.Load(ctx, "tools", func(surface.Event) error { return nil })
		require.ErrorIs(t, err, store.ErrNotFound)
	}
}

// testEpochs: a writer paused across its session's deletion and
// re-creation under the same id, with as many events as it expects, is
// refused: the new session's epoch is not the old writer's.
func testEpochs(t *testing.T, h Harness) {
	if h.Lapse == nil {
		t.Skip("this store's lease cannot lapse while its holder lives")
	}
	st := newStore(t, h)
	d, ok := st.(store.Deleter)
	if !ok {
		t.Skip("this store cannot delete a session")
	}
	st2 := again(t, h, st)
	ctx := context.Background()
	evs := Synthetic(t, 6)
	want := make([][]byte, 0, 6)
	for i := range evs[:3] {
		want = append(want, encode(evs[i]))
	}
	for round := range 3 {
		w1, _ := open(t, st, "again", true)
		require.NoError(t, w1.Append(ctx, evs[:3]))
		h.Lapse(t, st, "again")
		require.NoError(t, d.Delete(ctx, "again"))
		w2, got := open(t, st2, "again", true)
		require.Empty(t, got, "round %d: the re-created session starts empty", round)
		require.NoError(t, w2.Append(ctx, evs[:3]))
		err := w1.Append(ctx, evs[3:4])
		require.ErrorIs(t, err, store.ErrFenced, "round %d: the writer paused across the re-creation is refused", round)
		require.NoError(t, w2.Append(ctx, evs[3:6]))
		_, got = collect(t, st, "again")
		requireLines(t, append(want[:3:3], encode(evs[3]), encode(evs[4]), encode(evs[5])), got, "after the re-creation")
		require.NoError(t, w1.Close())
		require.NoError(t, w2.Close())
		h.Lapse(t, st, "again")
		require.NoError(t, d.Delete(ctx, "again"))
	}
}

// testReader loads a session over and over while a writer appends batches
// of three: every load is a prefix of whole events, byte for byte, and of
// whole batches unless the harness says PartialReads.
func testReader(t *testing.T, h Harness) {
	st := newStore(t, h)
	st2 := again(t, h, st)
	ctx := context.Background()
	evs := Synthetic(t, 300)
	want := make([][]byte, len(evs))
	for i := range evs {
		want[i] = encode(evs[i])
	}
	w, _ := open(t, st, "read", true)
	defer w.Close()
	require.NoError(t, w.Append(ctx, evs[:3]))
	done := make(chan error, 1)
	go func() {
		for i := 3; i < len(evs); i += 3 {
			if err := w.Append(ctx, evs[i:i+3]); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	loads := 0
	for finished := false; !finished; loads++ {
		select {
		case err := <-done:
			require.NoError(t, err)
			finished = true
		default:
		}
		info, got := collect(t, st2, "read")
		if !h.PartialReads {
			require.Zero(t, len(got)%3, "a reader sees whole batches only (%d events)", len(got))
		}
		require.GreaterOrEqual(t, info.Events, int64(len(got)))
		requireLines(t, want[:len(got)], got, "a load during writes")
	}
	_, got := collect(t, st2, "read")
	requireLines(t, want, got, "the final load")
	t.Logf("%d loads during the writes", loads)
}

func testCancelled(t *testing.T, h Harness) {
	st := newStore(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := st.Open(ctx, "c", store.OpenOptions{Create: true}, func(surface.Event) error { return nil })
	require.ErrorIs(t, err, context.Canceled)
	w, _ := open(t, st, "c", true)
	defer w.Close()
	require.ErrorIs(t, w.Append(ctx, Synthetic(t, 1)), context.Canceled)
	require.NoError(t, w.Append(context.Background(), Synthetic(t, 1)), "a cancelled append stored nothing")
}

func testList(t *testing.T, h Harness) {
	st := newStore(t, h)
	ctx := context.Background()
	list, err := st.List(ctx)
	require.NoError(t, err)
	require.Empty(t, list)
	for i, id := range []string{"b", "a", "c"} {
		w, _ := open(t, st, id, true)
		require.NoError(t, w.Append(ctx, Synthetic(t, i+1)))
		require.NoError(t, w.Close())
	}
	list, err = st.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 3)
	for i, id := range []string{"a", "b", "c"} {
		require.Equal(t, id, list[i].ID)
		require.Equal(t, 1_750_000_000_000, int(list[i].CreatedAt))
	}
	require.Equal(t, []int64{2, 1, 3}, []int64{list[0].Events, list[1].Events, list[2].Events})
	if d, ok := st.(store.Deleter); ok {
		require.NoError(t, d.Delete(ctx, "b"))
		require.ErrorIs(t, d.Delete(ctx, "b"), store.ErrNotFound)
		list, err = st.List(ctx)
		require.NoError(t, err)
		require.Len(t, list, 2)
	}
}

// testHostResume runs the library's resume path (host.Open) over the
// store: a recorded session is imported, resumed (end-seed, open bracket
// report), appended to, and rebuilt from the store byte for byte.
func testHostResume(t *testing.T, h Harness) {
	st := newStore(t, h)
	ctx := context.Background()
	fx := Fixtures(t)
	var lines [][]byte
	for _, f := range fx {
		if f.Name == "fixture" {
			lines = f.Lines
		}
	}
	require.NotEmpty(t, lines)
	w, _ := open(t, st, "resume", true)
	require.NoError(t, w.Append(ctx, Decode(t, lines)))
	require.NoError(t, w.Close())

	clock := func() int64 { return 1_800_000_000_000 }
	s, err := host.Open(ctx, st, "resume", host.WithClock(clock), host.WithIDs(host.CounterIDs("r")), host.Existing())
	require.NoError(t, err)
	require.Equal(t, "resume", s.ID())
	evs := s.Log().Events()
	require.Len(t, evs, len(lines)+1)
	require.Equal(t, surface.TypeEndSeed, evs[len(lines)].Type, "a resumed session gets its end-seed")
	_, err = s.Propose(host.Proposer{Kind: host.ByLoop},
		surface.Proposal{Type: surface.TypeCompactionStart, Data: []byte(`{"compactionId":"c1","turn":null}`)})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s, err = host.Open(ctx, st, "resume", host.WithClock(clock), host.WithIDs(host.CounterIDs("r")))
	require.NoError(t, err)
	s2, err := host.Open(ctx, again(t, h, st), "resume")
	require.ErrorIs(t, err, store.ErrLocked, "host.Open honours the lease")
	require.Nil(t, s2)
	evs = s.Log().Events()
	n := len(evs)
	require.Equal(t, surface.TypeEndSeed, evs[n-2].Type)
	require.Equal(t, surface.TypePluginFailure, evs[n-1].Type, "the open compaction bracket is reported")
	require.Contains(t, string(evs[n-1].Data), "was never closed")
	want := make([][]byte, n)
	for i := range evs {
		want[i] = encode(evs[i])
	}
	require.NoError(t, s.Close())
	_, got := collect(t, st, "resume")
	requireLines(t, want, got, "the store holds the resumed log")

	_, err = host.Open(ctx, st, "absent", host.Existing())
	require.ErrorIs(t, err, store.ErrNotFound)
	s, err = host.Open(ctx, st, "", host.WithIDs(host.CounterIDs("n")))
	require.NoError(t, err)
	require.Equal(t, "session-n-1", s.ID(), "an empty id creates a new session")
	require.Zero(t, s.Log().Len(), "a new session gets no end-seed")
	require.NoError(t, s.Close())
}

// testCloseFlushes: events the loop committed but did not flush are made
// durable by Session.Close, whatever the store.
func testCloseFlushes(t *testing.T, h Harness) {
	st := newStore(t, h)
	ctx := context.Background()
	s, err := host.Open(ctx, st, "flush")
	require.NoError(t, err)
	_, err = s.Propose(host.Proposer{Kind: host.ByLoop},
		surface.Proposal{Type: "vendor/note", Data: []byte(`{"n":1}`), Ignorable: true},
		surface.Proposal{Type: "vendor/note", Data: []byte(`{"n":2}`), Ignorable: true})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	info, got := collect(t, st, "flush")
	require.Len(t, got, 2)
	require.Equal(t, int64(2), info.Events)
}

// Crash trials.

const (
	childEnv = "WEIR_STORETEST_CHILD"
	specEnv  = "WEIR_STORETEST_SPEC"
	seedEnv  = "WEIR_STORETEST_SEED"
)

// Main runs a crash-trial child when the test binary was re-executed as
// one (it then exits); otherwise it returns and TestMain goes on. open
// opens a store from the spec the harness's Spec made.
func Main(open func(spec string) (store.Store, error)) {
	if os.Getenv(childEnv) == "" {
		return
	}
	if err := crashChild(open); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

const crashEvents = 3000

// crashChild continues session "crash" with synthetic events in batches of
// 1 to 8, printing "try first last" before and "ack last" after each
// acknowledged batch.
func crashChild(open func(spec string) (store.Store, error)) error {
	st, err := open(os.Getenv(specEnv))
	if err != nil {
		return err
	}
	src := Synthetic(nopTB{}, crashEvents)
	seed, _ := strconv.ParseUint(os.Getenv(seedEnv), 10, 64)
	r := rand.New(rand.NewPCG(seed, 1))
	ctx := context.Background()
	w, err := st.Open(ctx, "crash", store.OpenOptions{Create: true}, func(surface.Event) error { return nil })
	if err != nil {
		return err
	}
	fmt.Println("ready")
	for next := int(w.Info().Events); next < len(src); {
		batch := src[next:min(next+1+r.IntN(8), len(src))]
		first, last := batch[0].Seq, batch[len(batch)-1].Seq
		fmt.Printf("try %d %d\n", first, last)
		if err := w.Append(ctx, batch); err != nil {
			return err
		}
		fmt.Printf("ack %d\n", last)
		next += len(batch)
	}
	fmt.Println("done")
	return w.Close()
}

// testCrash kills an appending child with SIGKILL at random moments: every
// acknowledged event survives, beyond them at most the events of the batch
// in flight (a prefix for the file store, all or nothing for a
// transactional one), byte for byte, and the session reopens for the next
// writer.
func testCrash(t *testing.T, h Harness) {
	if h.Spec == nil {
		t.Skip("this store does not outlive its process")
	}
	trials, maxDelay := 8, 60*time.Millisecond
	if os.Getenv("WEIR_LONG") == "1" {
		trials, maxDelay = 100, 150*time.Millisecond
	}
	st := newStore(t, h)
	spec := h.Spec(t, st)
	src := Synthetic(t, crashEvents)
	want := make([][]byte, len(src))
	for i := range src {
		want[i] = encode(src[i])
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill timing seed %d", seed)
	r := rand.New(rand.NewPCG(7, seed))
	exe, err := os.Executable()
	require.NoError(t, err)
	acks, partial := 0, 0
	stored := int64(0)
	for trial := range trials {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=1", specEnv+"="+spec, seedEnv+"="+strconv.Itoa(trial))
		cmd.Stderr = os.Stderr
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
		select {
		case <-ready:
		case <-time.After(20 * time.Second):
			t.Fatalf("trial %d: the child did not open the store", trial)
		}
		time.Sleep(time.Duration(r.Int64N(int64(maxDelay))))
		cmd.Process.Kill()
		ls := <-out
		cmd.Wait()
		acked, tryLast := stored-1, int64(-1)
		for _, l := range ls {
			var a, b int64
			switch {
			case strings.HasPrefix(l, "try "):
				fmt.Sscanf(l, "try %d %d", &a, &b)
				tryLast = b
			case strings.HasPrefix(l, "ack "):
				fmt.Sscanf(l, "ack %d", &a)
				acked = a
				acks++
			case l == "done":
			default:
				t.Fatalf("trial %d: child failed: %s", trial, l)
			}
		}
		if h.Lapse != nil {
			h.Lapse(t, st, "crash") // the dead child's lease times out
		}
		// Create: a child killed before its first append may have left no
		// session (the file store publishes a session with its first batch).
		w, got := open(t, st, "crash", stored == 0)
		n := int64(len(got))
		require.GreaterOrEqual(t, n-1, acked, "trial %d: every acknowledged event survives", trial)
		if n-1 > acked {
			require.LessOrEqual(t, n-1, tryLast, "trial %d: beyond the acknowledged events only the batch in flight", trial)
			partial++
		}
		requireLines(t, want[:n], got, fmt.Sprintf("trial %d", trial))
		if n >= int64(len(src)) {
			require.NoError(t, w.Close())
			break
		}
		require.NoError(t, w.Append(context.Background(), src[n:n+1]), "trial %d: a further append works", trial)
		stored = n + 1
		require.NoError(t, w.Close())
	}
	t.Logf("%d trials, %d acknowledged batches, %d in-flight batches kept", trials, acks, partial)
	require.Positive(t, acks, "the children got to append")
}

// nopTB lets the child use Synthetic, which never fails on the embedded
// fixtures.
type nopTB struct{ testing.TB }

func (nopTB) Helper()               {}
func (nopTB) Errorf(string, ...any) {}
func (nopTB) FailNow()              { panic("storetest: fixtures do not decode") }
