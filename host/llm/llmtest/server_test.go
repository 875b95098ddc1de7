package llmtest

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func post(t *testing.T, url, body string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(b)
}

func TestServer(t *testing.T) {
	s := NewServer(t)
	require.True(t, strings.HasPrefix(s.URL(), "http://127.0.0.1:"))
	s.Push(Stream(Text("a"), Finish("stop")), RateLimited("5"), Reply{Raw: []string{": hi\r\n", "data: x\r\n\r\n"}, End: EndClean})

	code, h, body := post(t, s.URL()+"/chat/completions", `{"n":1}`)
	require.Equal(t, 200, code)
	require.Equal(t, "text/event-stream", h.Get("Content-Type"))
	require.Equal(t, "data: "+Text("a")+"\n\ndata: "+Finish("stop")+"\n\ndata: [DONE]\n\n", body)

	code, h, body = post(t, s.URL()+"/chat/completions", `{"n":2}`)
	require.Equal(t, 429, code)
	require.Equal(t, "5", h.Get("Retry-After"))
	require.Contains(t, body, "rate_limit_exceeded")

	_, _, body = post(t, s.URL()+"/chat/completions", `{"n":3}`)
	require.Equal(t, ": hi\r\ndata: x\r\n\r\n", body)

	code, _, body = post(t, s.URL()+"/chat/completions", `{"n":4}`)
	require.Equal(t, 500, code)
	require.Contains(t, body, "no reply queued for request 3")

	code, _, _ = post(t, s.URL()+"/completions", `{}`)
	require.Equal(t, 404, code)

	reqs := s.Requests()
	require.Len(t, reqs, 5)
	require.Equal(t, `{"n":2}`, string(reqs[1].Body))
	require.Equal(t, "/v1/chat/completions", reqs[1].Path)
	require.Equal(t, http.MethodPost, reqs[1].Method)
	require.Equal(t, "application/json", reqs[1].Header.Get("Content-Type"))
	require.Zero(t, s.Pending())
}

func TestServerDrop(t *testing.T) {
	s := NewServer(t)
	s.Push(Drop(Text("a")))
	resp, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Equal(t, "data: "+Text("a")+"\n\n", string(b))
}

func TestChunkBuilders(t *testing.T) {
	require.Contains(t, Text("a\"b\n\x01"), `"content":"a\"b\n\u0001"`)
	require.Contains(t, ToolCall(1, "id", "fn", `{"x"`), `{"tool_calls":[{"index":1,"id":"id","type":"function","function":{"name":"fn","arguments":"{\"x\""}}]}`)
	require.Contains(t, ToolCall(1, "", "", "1}"), `{"tool_calls":[{"index":1,"function":{"arguments":"1}"}}]}`)
	require.Contains(t, DeepSeekUsage(3, 4, 5, 1), `"prompt_tokens":7,"completion_tokens":5,"total_tokens":12,"prompt_cache_hit_tokens":3,"prompt_cache_miss_tokens":4`)
}

// TestServerNeverEnding checks the endings of servers that never finish:
// the stream goes on, as keep-alives or as the repeated reply, until the
// client leaves.
func TestServerNeverEnding(t *testing.T) {
	tests := []struct {
		name  string
		reply Reply
		want  string
	}{
		{"keep-alive", Reply{Chunks: []string{Text("a")}, End: EndKeepAlive, Tick: time.Millisecond},
			"data: " + Text("a") + "\n\n" + strings.Repeat(": keep-alive\n\n", 3)},
		{"repeat", Reply{Chunks: []string{Text("a"), Text("b")}, End: EndRepeat},
			strings.Repeat("data: "+Text("a")+"\n\ndata: "+Text("b")+"\n\n", 3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewServer(t)
			s.Push(tt.reply)
			resp, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader("{}"))
			require.NoError(t, err)
			got := make([]byte, len(tt.want))
			_, err = io.ReadFull(resp.Body, got)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
			require.NoError(t, resp.Body.Close(), "the client leaves; the server stops")
		})
	}
}
