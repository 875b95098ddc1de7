package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/setup"
	"github.com/weirhost/weir/surface"
)

// status is standard error on a terminal with one status line at its
// foot: what a long wait waits for, or eval's progress bar. Everything
// else written to standard error (log lines, messages, the token line)
// goes through Write, which erases the status line first and draws it
// again below what was written, so a log line never breaks a bar. Main
// puts one in front of standard error when it is a terminal; on anything
// else there is no status line (statusOf returns nil, whose methods do
// nothing) and standard error gets the plain text only.
type status struct {
	mu   sync.Mutex
	w    io.Writer
	line string // the status line, "" when none
	// shown reports whether line is on the screen: a write that did not
	// end its line hides it until the next Set.
	shown bool
	// delay is how long a wait goes unannounced (waitDelay).
	delay time.Duration
}

func newStatus(w io.Writer) *status { return &status{w: w, delay: waitDelay} }

// statusOf is w's status line, nil when w is not a terminal's.
func statusOf(w io.Writer) *status {
	s, _ := w.(*status)
	return s
}

const eraseLine = "\r\x1b[K"

func (s *status) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shown {
		io.WriteString(s.w, eraseLine)
		s.shown = false
	}
	n, err := s.w.Write(b)
	if err == nil && s.line != "" && len(b) > 0 && b[len(b)-1] == '\n' {
		io.WriteString(s.w, s.line)
		s.shown = true
	}
	return n, err
}

// Set shows text as the status line, replacing the one shown.
func (s *status) Set(text string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.line = termLine(text)
	io.WriteString(s.w, eraseLine+s.line)
	s.shown = true
}

// Clear erases the status line.
func (s *status) Clear() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shown {
		io.WriteString(s.w, eraseLine)
	}
	s.line, s.shown = "", false
}

// waitDelay is how long a wait goes unannounced: a wait shorter than it
// shows nothing.
const waitDelay = time.Second

// wait shows what a long wait waits for: once it has lasted s.delay,
// the status line says "what… 3s", counting the seconds, until stop
// erases it. stop may be called more than once; on a nil status wait
// shows nothing.
func (s *status) wait(what string) (stop func()) {
	if s == nil {
		return func() {}
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		start := time.Now()
		t := time.NewTimer(s.delay)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			s.Set(fmt.Sprintf("%s… %ds", what, int(time.Since(start).Seconds())))
			t.Reset(time.Second)
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-exited
			s.Clear()
		})
	}
}

// modelWait announces the waits for a model's reply in a running
// session: a request starts one (start), the first output of any kind on
// standard output ends it (the writer Output returns calls stop first).
type modelWait struct {
	st    *status
	model string
	mu    sync.Mutex
	stop  func()
	n     int
}

func newModelWait(st *status, model string) *modelWait {
	return &modelWait{st: st, model: model, stop: func() {}}
}

// start announces the wait for the reply to the session's next request.
func (m *modelWait) start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stop()
	m.n++
	m.stop = m.st.wait(fmt.Sprintf("waiting for %s (request %d)", m.model, m.n))
}

// end ends the wait being announced, if any.
func (m *modelWait) end() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stop()
	m.stop = func() {}
}

// observe follows a session's log: a request header starts a wait, the
// reply's message or the step's end ends it.
func (m *modelWait) observe(ev surface.Event) {
	switch ev.Type {
	case surface.TypeRequestHeader:
		m.start()
	case surface.TypeAssistantMessage, surface.TypeStepEnd, surface.TypeTurnEnd:
		m.end()
	}
}

// Output is w with the wait ended before every write: text on standard
// output means the reply has begun, and the status line must not share
// a line with it.
func (m *modelWait) Output(w io.Writer) io.Writer {
	if m.st == nil {
		return w
	}
	return endingWriter{w: w, end: m.end}
}

type endingWriter struct {
	w   io.Writer
	end func()
}

func (e endingWriter) Write(b []byte) (int, error) {
	e.end()
	return e.w.Write(b)
}

// barLine is eval's progress bar for a set: name [####....] done/total.
func barLine(name string, done, total int) string {
	const width = 30
	fill := done * width / total
	return fmt.Sprintf("%s [%s%s] %d/%d requests", name, strings.Repeat("#", fill), strings.Repeat(".", width-fill), done, total)
}

// compactWait says what "weir compact" waits for: the compaction plugins,
// whose summaries wait for the route's model.
func compactWait(session string, compactors []host.CompactionProvider, route *setup.Route) string {
	names := make([]string, len(compactors))
	for i, c := range compactors {
		names[i] = c.ID()
	}
	return fmt.Sprintf("compacting %s with %s (a summary waits for %s)", session, strings.Join(names, ", "), route.Route.Model)
}
