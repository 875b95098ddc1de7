package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// lockedBuffer is a bytes.Buffer written by one goroutine and read by
// another.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestChatTakesBackACancelledLine: a line whose turn is cancelled with
// Ctrl-C before the line entered the log (here, while a pre-step handler
// prepares its step) is taken back and the prompt says so; the next line
// goes out alone, and the cancelled one is not in the log.
func TestChatTakesBackACancelledLine(t *testing.T) {
	t.Parallel()
	s := host.NewSession("chat-test", surface.New(), nil, host.WithIDs(host.CounterIDs("m")))
	model := llm.NewScripted(&llm.Script{Replies: []llm.ScriptReply{{Text: "hi", Repeat: true}}})
	a, err := host.NewAgent(s, host.Config{Route: host.Route{Provider: "offline", Model: "m", ContextWindow: 1000}, Model: model})
	require.NoError(t, err)
	entered := make(chan struct{}, 1)
	first := true
	_, err = a.PreStepChain.Add("slow-first-step", func(ctx context.Context, in host.PreStep) (host.PreStep, error) {
		if first {
			first = false
			entered <- struct{}{}
			<-ctx.Done() // the step is being prepared when Ctrl-C comes
			return in, ctx.Err()
		}
		return in, nil
	})
	require.NoError(t, err)

	stdin, lines := io.Pipe()
	var stderr lockedBuffer
	sig := make(chan os.Signal, 1)
	e := &env{stdin: stdin, stdout: io.Discard, stderr: &stderr}
	done := make(chan error, 1)
	go func() { done <- chatLoop(e, a, newPrinter(io.Discard), "chat-test", &lineReader{r: stdin}, sig) }()

	_, err = io.WriteString(lines, "cancel me\n")
	require.NoError(t, err)
	<-entered
	sig <- os.Interrupt
	_, err = io.WriteString(lines, "second\n") // read once the first turn ended
	require.NoError(t, err)
	require.NoError(t, lines.Close())
	require.NoError(t, <-done)

	out := stderr.String()
	require.Contains(t, out, `not sent: "cancel me" was taken back (the turn ended before it entered the log); type it again to send it`)
	require.Equal(t, 0, a.Pending(), "nothing is left to go out with a later line")
	var users []string
	for _, en := range s.Log().Transcript() {
		if en.Message.Role == surface.RoleUser {
			users = append(users, strings.TrimSpace(en.Message.Content[0].Text))
		}
	}
	require.Equal(t, []string{"second"}, users, "the cancelled line never entered the log; the next went out alone")
	require.Equal(t, 1, strings.Count(out, "not sent"))
}
