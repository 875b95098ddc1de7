package jsonl

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/internal/loggen"
)

var long = flag.Bool("long", false, "run the long crash test (also WEIR_LONG=1)")

func longRun() bool { return *long || os.Getenv("WEIR_LONG") == "1" }

// childEnv selects a child-process role when the test binary re-executes
// itself (see child_test.go).
const childEnv = "WEIR_JSONL_CHILD"

var benchDir string

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	flag.Parse()
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

var (
	smallOnce sync.Once
	smallLog  *surface.Log
	smallErr  error
)

// small returns a shared generated log of a few thousand events.
func small(t testing.TB) *surface.Log {
	smallOnce.Do(func() { smallLog, smallErr = loggen.Generate(loggen.Small(2500)) })
	require.NoError(t, smallErr)
	return smallLog
}

func testHeader() Header {
	return Header{ID: "s-1", CreatedAt: 1_750_000_000_000, Cwd: "/work/project", IsSeeded: false}
}

// encodeFile renders a whole session file: header line and event lines.
func encodeFile(t testing.TB, h Header, evs []surface.Event) []byte {
	b, err := appendHeader(nil, &h)
	require.NoError(t, err)
	b = append(b, '\n')
	for i := range evs {
		b = surface.AppendEvent(b, &evs[i])
		b = append(b, '\n')
	}
	return b
}

// writeSession stores evs through a created Session in batches of up to
// batch events and returns the file's path.
func writeSession(t testing.TB, dir string, evs []surface.Event, batch int) string {
	path := filepath.Join(dir, FileName)
	s, err := Create(path, testHeader(), NoSync())
	require.NoError(t, err)
	for i := 0; i < len(evs); i += batch {
		require.NoError(t, s.Append(evs[i:min(i+batch, len(evs))]))
	}
	require.NoError(t, s.Close())
	return path
}

// requireSameEvents compares events by their observable fields and their
// canonical encoding.
func requireSameEvents(t testing.TB, want, got []surface.Event) {
	t.Helper()
	require.Equal(t, len(want), len(got), "event count")
	for i := range want {
		w, g := &want[i], &got[i]
		if w.Type != g.Type || w.Seq != g.Seq || w.Time != g.Time || !bytes.Equal(w.Data, g.Data) ||
			w.Op != g.Op || fmt.Sprint(w.Sources) != fmt.Sprint(g.Sources) || w.Ignorable != g.Ignorable ||
			(w.Sources == nil) != (g.Sources == nil) {
			require.Failf(t, "events differ", "seq %d:\nwant %s\n got %s", w.Seq,
				surface.AppendEvent(nil, w), surface.AppendEvent(nil, g))
		}
		require.Equal(t, string(surface.AppendEvent(nil, w)), string(surface.AppendEvent(nil, g)))
	}
}

// lines splits a file into its lines (without newlines); the last element is
// the torn tail ("" when the file ends in a newline).
func lines(b []byte) []string { return strings.Split(string(b), "\n") }
