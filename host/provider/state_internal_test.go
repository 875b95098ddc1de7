package provider

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// step is one event of a test log: a plugin/state event when plugin is
// set, else an ignorable note.
type step struct {
	plugin, module, blob string
	note                 string
	time                 int64
}

func st(plugin, module, blob string) step { return step{plugin: plugin, module: module, blob: blob} }
func note(s string) step                  { return step{note: s} }

// logOf appends steps to a fresh log, each at its time (1 when unset).
func logOf(t *testing.T, steps ...step) *surface.Log {
	t.Helper()
	var now int64
	l := surface.New(surface.WithClock(func() int64 { return now }))
	for _, s := range steps {
		now = max(s.time, 1)
		p := surface.Proposal{Type: "test/note", Data: []byte(fmt.Sprintf(`{"note":%q}`, s.note)), Ignorable: true}
		if s.plugin != "" {
			var err error
			p, err = stateProposal(s.plugin, s.module, []byte(s.blob))
			require.NoError(t, err)
		}
		_, err := l.Append(p)
		require.NoError(t, err)
	}
	return l
}

// The state reader continues from the position it read up to while the
// log it is handed still holds the event it read last there; when the log
// does not (the session was reopened from a store that lost its tail, and
// maybe grew again otherwise, as after a kill inside a turn), it reads the
// log again from the start, so the blob it returns is always the log's
// own, never that of events the log no longer holds: the same blob a
// reader that never read the first log returns.
func TestLoggedStateRestart(t *testing.T) {
	const p, m = "pruner", "m1"
	read := []step{note("a"), st(p, m, "s1"), note("b"), st(p, m, "s2")}
	cases := []struct {
		name          string
		before, after []step // the logs handed to the reader, in turn
		want          string // the blob it returns for after
	}{
		{"the log grew: read on", read,
			append(read[:4:4], note("c"), st(p, m, "s3"), st("other", m, "x"), st(p, "m2", "y")), "s3"},
		{"the log is the same", read, read, "s2"},
		{"the log lost its tail", read, read[:2], "s1"},
		{"the log lost everything", read, nil, ""},
		{"the log lost its tail and grew past the position", read,
			append(read[:2:2], note("b"), note("c"), note("d")), "s1"},
		{"the same length, another last event", read, append(read[:3:3], note("c")), "s1"},
		{"the same last event at another time, an earlier state differs",
			[]step{note("a"), st(p, m, "s1"), note("b")},
			[]step{note("a"), st(p, m, "t1"), {note: "b", time: 2}}, "t1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var l, first, fresh loggedState
			require.Equal(t, string(first.sync(logOf(t, c.before...), p, m)), string(l.sync(logOf(t, c.before...), p, m)))
			got := l.sync(logOf(t, c.after...), p, m)
			require.Equal(t, c.want, string(got))
			require.Equal(t, string(fresh.sync(logOf(t, c.after...), p, m)), string(got))
		})
	}
}
