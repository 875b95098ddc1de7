package host

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

func TestResumeReportsAnOrphanedCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	s, err := OpenFile(path)
	require.NoError(t, err)
	// A provider's batch always closes its brackets, so the orphan is written
	// as the loop (which may write anything the log admits) would leave it.
	_, err = s.Propose(Proposer{Kind: ByLoop},
		surface.Proposal{Type: surface.TypeCompactionStart, Data: []byte(`{"compactionId":"c1","turn":null}`)})
	require.NoError(t, err)
	require.NoError(t, s.Close()) // the process stops inside the bracket

	s, err = OpenFile(path)
	require.NoError(t, err)
	defer s.Close()
	evs := s.Log().Events()
	require.Equal(t, surface.TypeEndSeed, evs[1].Type, "the end-seed makes the bracket stale")
	require.Equal(t, surface.TypePluginFailure, evs[2].Type)
	require.Contains(t, string(evs[2].Data), "compaction/start at seq 0 was never closed")
	for _, e := range evs {
		require.NotEqual(t, surface.TypeCompactionEnd, e.Type, "never closed as if it had succeeded")
	}
	// A new bracket is allowed after the end-seed.
	_, err = s.Propose(Proposer{Kind: ByCompaction, ID: "compaction-basic"},
		surface.Proposal{Type: surface.TypeCompactionStart, Data: []byte(`{"compactionId":"c2","turn":null}`)},
		surface.Proposal{Type: surface.TypeCompactionEnd, Data: []byte(`{"compactionId":"c2","turn":null,"error":"nothing to do"}`)})
	require.NoError(t, err)
	_, err = s.Propose(Proposer{Kind: ByLoop},
		surface.Proposal{Type: surface.TypeCompactionStart, Data: []byte(`{"compactionId":"c3","turn":null}`)})
	require.NoError(t, err)

	// Reopening again reports nothing new for the dead bracket, but the new
	// open one is reported.
	require.NoError(t, s.Close())
	s2, err := OpenFile(path)
	require.NoError(t, err)
	defer s2.Close()
	n := 0
	for _, e := range s2.Log().Events() {
		if e.Type == surface.TypePluginFailure {
			n++
		}
	}
	require.Equal(t, 2, n)
}

// appended records what a session made durable through a plain Appender.
type appended struct{ evs []surface.Event }

func (a *appended) Append(evs []surface.Event) error { a.evs = append(a.evs, evs...); return nil }

func TestCloseFlushesAnAppender(t *testing.T) {
	a := &appended{}
	s := NewSession("s", surface.New(), a)
	_, err := s.Propose(Proposer{Kind: ByLoop}, surface.Proposal{Type: "app/note", Data: []byte(`{}`), Ignorable: true})
	require.NoError(t, err)
	require.Empty(t, a.evs, "the loop's events wait for the next flush")
	require.NoError(t, s.Close())
	require.Len(t, a.evs, 1, "Close flushes whatever the store")
	require.NoError(t, s.Close(), "Close is idempotent")
	require.Len(t, a.evs, 1)
}
