package llm

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

func readEvents(t *testing.T, r io.Reader) ([]sseEvent, error) {
	t.Helper()
	s := newSSEReader(r)
	var out []sseEvent
	for {
		ev, err := s.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, sseEvent{Name: ev.Name, Data: []byte(string(ev.Data))})
	}
}

func TestSSEReader(t *testing.T) {
	ev := func(name, data string) sseEvent { return sseEvent{Name: name, Data: []byte(data)} }
	tests := []struct {
		name string
		in   string
		want []sseEvent
	}{
		{"LF", "data: a\n\ndata: b\n\n", []sseEvent{ev("", "a"), ev("", "b")}},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []sseEvent{ev("", "a"), ev("", "b")}},
		{"CR", "data: a\r\rdata: b\r\r", []sseEvent{ev("", "a"), ev("", "b")}},
		{"multi-line data", "data: one\ndata: two\ndata:three\n\n", []sseEvent{ev("", "one\ntwo\nthree")}},
		{"comments and keepalives", ": keepalive\n\n:\ndata: x\n: inside\n\n: bye\n", []sseEvent{ev("", "x")}},
		{"event name", "event: error\ndata: {\"e\":1}\n\ndata: y\n\n", []sseEvent{ev("error", `{"e":1}`), ev("", "y")}},
		{"only one space removed", "data:  two spaces\n\n", []sseEvent{ev("", " two spaces")}},
		{"empty data line", "data\n\ndata:\n\n", []sseEvent{ev("", ""), ev("", "")}},
		{"id and retry ignored", "id: 7\nretry: 100\ndata: z\n\n", []sseEvent{ev("", "z")}},
		{"BOM", "\xEF\xBB\xBFdata: a\n\n", []sseEvent{ev("", "a")}},
		{"blank lines without data", "\n\n\nevent: x\n\ndata: a\n\n", []sseEvent{ev("", "a")}},
		{"last event without blank line", "data: a\n\ndata: [DONE]\n", []sseEvent{ev("", "a"), ev("", "[DONE]")}},
		{"unterminated last line dropped", "data: a\n\ndata: {\"trunc", []sseEvent{ev("", "a")}},
		{"JSON with colons", `data: {"a":"b:c"}` + "\n\n", []sseEvent{ev("", `{"a":"b:c"}`)}},
		{"CR at end of stream", "data: a\r", []sseEvent{ev("", "a")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []string{"whole", "one byte", "half"} {
				var r io.Reader = strings.NewReader(tt.in)
				switch mode {
				case "one byte":
					r = iotest.OneByteReader(r)
				case "half":
					r = iotest.HalfReader(r)
				}
				got, err := readEvents(t, r)
				require.NoError(t, err, mode)
				require.Equal(t, tt.want, got, mode)
			}
		})
	}
}

func TestSSEReaderLongLine(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	got, err := readEvents(t, strings.NewReader("data: "+long+"\n\ndata: b\n\n"))
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, long, string(got[0].Data))
}

func TestSSEReaderReadError(t *testing.T) {
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), iotest.ErrReader(boom))
	got, err := readEvents(t, r)
	require.ErrorIs(t, err, boom)
	require.Equal(t, []sseEvent{{Data: []byte("a")}}, got)
}
