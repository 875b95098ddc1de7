package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/policy"
)

// lineReader reads standard input a line at a time on one goroutine, for
// the chat loop and the tool confirmations alike.
type lineReader struct {
	r    io.Reader
	once sync.Once
	ch   chan string
}

// lines is the channel of the input's lines, closed at its end.
func (l *lineReader) lines() <-chan string {
	l.once.Do(func() {
		l.ch = make(chan string)
		go func() {
			sc := bufio.NewScanner(l.r)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				l.ch <- sc.Text()
			}
			close(l.ch)
		}()
	})
	return l.ch
}

// maxShownArgs bounds the arguments a confirmation shows.
const maxShownArgs = 400

// terminalAsk asks on the terminal whether a tool call the permission
// policy says to ask about may run: "y" or "yes" allows it, anything else
// (an empty line, the end of input, the call's timeout) denies it.
func terminalAsk(e *env, in *lineReader, before func()) policy.AskFunc {
	var mu sync.Mutex // one question at a time
	return func(ctx context.Context, call host.ToolCall, d policy.Decision) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		before()
		args := call.Arguments
		if len(args) > maxShownArgs {
			args = args[:maxShownArgs] + "…"
		}
		fmt.Fprintf(e.stderr, "run tool %s %s? (%s: ask) [y/N] ", termLine(call.Name), termLine(args), d.By)
		select {
		case line, ok := <-in.lines():
			if !ok {
				fmt.Fprintln(e.stderr)
				return false, nil
			}
			a := strings.ToLower(strings.TrimSpace(line))
			return a == "y" || a == "yes", nil
		case <-ctx.Done():
			fmt.Fprintln(e.stderr)
			return false, fmt.Errorf("no answer before the call's timeout (tools.timeout)")
		}
	}
}
