package cli

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/config"
)

// fakeTerminal is the screen of a terminal: the lines written so far and
// the line the cursor is on. It understands what the status line writes:
// "\r" (to the line's start), ESC [K (erase to the line's end) and "\n".
type fakeTerminal struct {
	mu    sync.Mutex
	lines []string
	cur   []rune
	col   int
}

func (f *fakeTerminal) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := string(b)
	for len(s) > 0 {
		switch {
		case strings.HasPrefix(s, "\x1b[K"):
			f.cur = f.cur[:f.col]
			s = s[3:]
			continue
		case s[0] == '\r':
			f.col = 0
		case s[0] == '\n':
			f.lines = append(f.lines, string(f.cur))
			f.cur, f.col = nil, 0
		default:
			r := []rune(s)[0]
			if f.col < len(f.cur) {
				f.cur[f.col] = r
			} else {
				f.cur = append(f.cur, r)
			}
			f.col++
			s = s[len(string(r)):]
			continue
		}
		s = s[1:]
	}
	return len(b), nil
}

// screen is the committed lines and the current one.
func (f *fakeTerminal) screen() ([]string, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lines...), string(f.cur)
}

// TestLogLinesNeverBreakTheBar: with eval's bar on the status line, a WARN
// line from the logger lands on a line of its own, whole, and the bar is
// drawn again below it; clearing leaves no bar behind.
func TestLogLinesNeverBreakTheBar(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			term := &fakeTerminal{}
			st := newStatus(term)
			log := newLogger(config.Log{Level: "warn", Format: format}, st)
			bar := newSetBars(st, 1).progress(0, "baseline")
			bar(1, 4)
			log.Warn("plugin slow", "plugin", "compaction-basic")
			lines, cur := term.screen()
			require.Len(t, lines, 1)
			require.Contains(t, lines[0], "plugin slow")
			require.NotContains(t, lines[0], "baseline [", "the log line is whole, without the bar")
			require.Equal(t, barLine("baseline", 1, 4), cur, "the bar is drawn again below the log line")
			bar(4, 4)
			log.Warn("second", "n", 2)
			lines, cur = term.screen()
			require.Len(t, lines, 2)
			require.Contains(t, lines[1], "second")
			require.Equal(t, barLine("baseline", 4, 4), cur)
			st.Clear()
			fmt.Fprintln(st, "report follows")
			lines, cur = term.screen()
			require.Equal(t, "report follows", lines[2])
			require.Empty(t, cur, "no bar after Clear")
		})
	}
}

// TestSetBarsShareTheLine: sets replayed at once share the status line,
// each with its count; the last one running has its full bar again.
func TestSetBarsShareTheLine(t *testing.T) {
	t.Parallel()
	term := &fakeTerminal{}
	st := newStatus(term)
	bars := newSetBars(st, 2)
	a, b := bars.progress(0, "baseline"), bars.progress(1, "low")
	a(4, 4) // a set's last request always draws
	_, cur := term.screen()
	require.Equal(t, barLine("baseline", 4, 4), cur)
	a(1, 4)
	b(2, 6)
	b(6, 6)
	_, cur = term.screen()
	require.Equal(t, barLine("baseline", 1, 4), cur, "low is done: baseline's bar alone")
	bars.last = time.Time{}
	b(3, 6)
	_, cur = term.screen()
	require.Equal(t, "baseline 1/4 · low 3/6 requests", cur)
	bars.clear()
	_, cur = term.screen()
	require.Empty(t, cur)
	require.Nil(t, newSetBars(nil, 1).progress(0, "x"), "no terminal, no bar")
}

// TestStatusAfterAPartialLine: a write that does not end its line (a
// prompt) hides the status line rather than gluing it to the text.
func TestStatusAfterAPartialLine(t *testing.T) {
	t.Parallel()
	term := &fakeTerminal{}
	st := newStatus(term)
	st.Set("waiting")
	fmt.Fprint(st, "> ")
	_, cur := term.screen()
	require.Equal(t, "> ", cur)
	fmt.Fprint(st, "typed\n")
	lines, cur := term.screen()
	require.Equal(t, []string{"> typed"}, lines)
	require.Equal(t, "waiting", cur, "drawn again once the line ended")
}

// TestWaitShowsWhatItWaitsFor: a wait announces itself with what it waits
// for and the seconds so far, and stop erases it; text on standard output
// ends a model wait first, so the reply never shares a line with it; a
// command whose standard error is not a terminal shows nothing.
func TestWaitShowsWhatItWaitsFor(t *testing.T) {
	t.Parallel()
	term := &fakeTerminal{}
	st := newStatus(term)
	st.delay = 0 // announce at once
	stop := st.wait("compacting s.jsonl with compaction-basic (a summary waits for deepseek-chat)")
	require.Eventually(t, func() bool {
		_, cur := term.screen()
		return strings.HasPrefix(cur, "compacting s.jsonl with compaction-basic (a summary waits for deepseek-chat)… ")
	}, 10*time.Second, 5*time.Millisecond)
	stop()
	stop()
	lines, cur := term.screen()
	require.Empty(t, lines)
	require.Empty(t, cur, "stop erases the status line")

	mw := newModelWait(st, "deepseek-chat")
	mw.start()
	require.Eventually(t, func() bool {
		_, cur := term.screen()
		return strings.HasPrefix(cur, "waiting for deepseek-chat (request 1)… ")
	}, 10*time.Second, 5*time.Millisecond)
	fmt.Fprint(mw.Output(term), "assistant: hello\n")
	lines, cur = term.screen()
	require.Equal(t, []string{"assistant: hello"}, lines)
	require.Empty(t, cur)
	mw.start()
	require.Eventually(t, func() bool {
		_, cur := term.screen()
		return strings.HasPrefix(cur, "waiting for deepseek-chat (request 2)… ")
	}, 10*time.Second, 5*time.Millisecond)
	mw.end()
	_, cur = term.screen()
	require.Empty(t, cur)

	var plain strings.Builder
	require.Nil(t, statusOf(&plain))
	statusOf(&plain).wait("nothing")()
	statusOf(&plain).Set("nothing")
	none := newModelWait(statusOf(&plain), "m")
	none.start()
	fmt.Fprint(none.Output(&plain), "text\n")
	none.end()
	require.Equal(t, "text\n", plain.String(), "no status line off a terminal")
}
