package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/policy"
)

// The terminal confirmation reads the answers of a scripted terminal, one
// line per question, shares its reader with the chat loop, and denies on
// anything but y or yes, at the end of input and at the call's deadline.
func TestTerminalAsk(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	in := &lineReader{r: strings.NewReader("y\nno\nYES\n\n")}
	finished := 0
	ask := terminalAsk(&env{stderr: &stderr}, in, func() { finished++ })
	d := policy.Decision{Rule: policy.Ask, By: "the default for a tool that may write or run"}
	call := host.ToolCall{ID: "c1", Name: "notes__write", Arguments: "{\"path\":\"a\x1b[2J\"}"}
	var got []bool
	for range 5 {
		ok, err := ask(context.Background(), call, d)
		require.NoError(t, err)
		got = append(got, ok)
	}
	assert.Equal(t, []bool{true, false, true, false, false}, got, "y, no, YES, an empty line, the end of input")
	assert.Equal(t, 5, finished, "the streamed reply's line is finished before each question")
	assert.Contains(t, stderr.String(), "run tool notes__write {\"path\":\"a\\x1b[2J\"}? (the default for a tool that may write or run: ask) [y/N] ",
		"the arguments are shown escaped")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	silent, w := io.Pipe() // a terminal no one types on
	t.Cleanup(func() { w.Close() })
	ok, err := terminalAsk(&env{stderr: &stderr}, &lineReader{r: silent}, func() {})(ctx, call, d)
	assert.False(t, ok)
	require.ErrorContains(t, err, "no answer before the call's timeout")
}
