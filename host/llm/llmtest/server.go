package llmtest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// End says how a streamed reply ends.
type End int

// Stream endings.
const (
	// EndDone sends "data: [DONE]" and closes the response.
	EndDone End = iota
	// EndClean closes the response without [DONE].
	EndClean
	// EndDrop drops the connection without terminating the response.
	EndDrop
	// EndStall keeps the connection open, sending nothing, until the
	// client goes away or the server closes.
	EndStall
	// EndKeepAlive keeps the connection open, sending an SSE comment
	// (": keep-alive") every Tick, until the client goes away or the
	// server closes: a server that is alive but makes no progress.
	EndKeepAlive
	// EndRepeat sends the chunks (or raw pieces) again and again, each
	// after Gap, until the client goes away or the server closes: a reply
	// that never ends.
	EndRepeat
)

// DefaultTick is the keep-alive interval of EndKeepAlive when Tick is 0.
const DefaultTick = 5 * time.Millisecond

// Reply is the scripted answer to one request.
type Reply struct {
	// Status is the HTTP status; 0 means 200.
	Status int
	// Header holds extra response headers (e.g. Retry-After).
	Header http.Header
	// Body, when non-nil, is written verbatim as the whole response (with
	// Content-Type application/json unless Header sets one). Chunks, Raw
	// and End are then ignored.
	Body []byte
	// Chunks are SSE data payloads, each written as "data: <p>\n\n".
	Chunks []string
	// Raw, when non-nil, replaces Chunks: these byte strings are written
	// and flushed one by one, verbatim; they are the whole stream, so
	// EndDone adds no [DONE].
	Raw []string
	// Gap is the pause before each chunk or raw piece.
	Gap time.Duration
	// End says how the stream ends.
	End End
	// Tick is the interval of EndKeepAlive comments; 0 means DefaultTick.
	Tick time.Duration
}

// Request is one recorded request.
type Request struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

// Server is a loopback chat-completions server. Its methods are safe for
// concurrent use.
type Server struct {
	srv *httptest.Server
	api string

	mu       sync.Mutex
	replies  []Reply
	requests []Request
	fallback func(n int, r Request) Reply // see SetFallback
	stop     chan struct{}
	once     sync.Once
}

// NewServer starts an OpenAI-compatible server, closed when the test ends.
func NewServer(t testing.TB) *Server { return NewServerFor(t, "openai") }

// NewServerFor starts a server speaking api: "openai" (POST
// /v1/chat/completions), "anthropic" (POST /v1/messages) or "gemini" (POST
// /v1beta/models/MODEL:streamGenerateContent?alt=sse), closed when the test
// ends. Any other request path gets a 404.
func NewServerFor(t testing.TB, api string) *Server {
	switch api {
	case "openai", "anthropic", "gemini":
	default:
		t.Fatalf("llmtest: unknown API %q", api)
	}
	s := &Server{api: api, stop: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// URL is the API base URL the client of the server's API appends its path
// to: ".../v1" (openai), the root (anthropic) or ".../v1beta" (gemini).
func (s *Server) URL() string {
	switch s.api {
	case "anthropic":
		return s.srv.URL
	case "gemini":
		return s.srv.URL + "/v1beta"
	}
	return s.srv.URL + "/v1"
}

// routes reports whether r is a request of the server's API.
func (s *Server) routes(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	switch s.api {
	case "anthropic":
		return r.URL.Path == "/v1/messages"
	case "gemini":
		return strings.HasPrefix(r.URL.Path, "/v1beta/models/") && strings.HasSuffix(r.URL.Path, ":streamGenerateContent") &&
			r.URL.Query().Get("alt") == "sse"
	}
	return strings.HasSuffix(r.URL.Path, "/chat/completions")
}

// Close stops the server, releasing stalled replies first.
func (s *Server) Close() {
	s.once.Do(func() { close(s.stop) })
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Push queues replies for the next requests, in order.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// SetFallback sets the answer for requests that find the queue empty; n is
// the request's 0-based number. Without one such a request gets a 500
// saying no reply was queued.
func (s *Server) SetFallback(f func(n int, r Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = f
}

// Requests returns copies of the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = Request{Method: r.Method, Path: r.Path, Query: r.Query, Header: r.Header.Clone(), Body: append([]byte(nil), r.Body...)}
	}
	return out
}

// Pending returns the number of queued replies not yet served.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.replies)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "llmtest: reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	rec := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, rec)
	var reply Reply
	switch {
	case !s.routes(r):
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"error":{"message":"llmtest: no route for %s %s","type":"invalid_request_error"}}`, r.Method, r.URL.Path)
		return
	case len(s.replies) > 0:
		reply = s.replies[0]
		s.replies = s.replies[1:]
	case s.fallback != nil:
		f := s.fallback
		s.mu.Unlock()
		reply = f(n, rec)
		s.mu.Lock()
	default:
		reply = Reply{Status: http.StatusInternalServerError,
			Body: fmt.Appendf(nil, `{"error":{"message":"llmtest: no reply queued for request %d","type":"server_error"}}`, n)}
	}
	s.mu.Unlock()
	s.write(w, r, reply)
}

func (s *Server) write(w http.ResponseWriter, r *http.Request, reply Reply) {
	for k, vs := range reply.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	if reply.Body != nil {
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		w.Write(reply.Body)
		return
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	fl := w.(http.Flusher)
	fl.Flush()
	pieces := reply.Raw
	if pieces == nil {
		pieces = make([]string, len(reply.Chunks))
		for i, c := range reply.Chunks {
			pieces[i] = "data: " + c + "\n\n"
		}
	}
	send := func() bool {
		for _, p := range pieces {
			if reply.Gap > 0 && !s.pause(r, reply.Gap) {
				return false
			}
			if _, err := io.WriteString(w, p); err != nil {
				return false
			}
			fl.Flush()
		}
		return true
	}
	if !send() {
		return
	}
	switch reply.End {
	case EndDone:
		if reply.Raw == nil {
			io.WriteString(w, "data: [DONE]\n\n")
		}
	case EndDrop:
		fl.Flush()
		panic(http.ErrAbortHandler)
	case EndStall:
		select {
		case <-r.Context().Done():
		case <-s.stop:
		}
	case EndKeepAlive:
		tick := reply.Tick
		if tick <= 0 {
			tick = DefaultTick
		}
		for s.pause(r, tick) {
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	case EndRepeat:
		if len(pieces) == 0 {
			return
		}
		for send() {
			select {
			case <-r.Context().Done():
				return
			case <-s.stop:
				return
			default:
			}
		}
	}
}

// pause waits d unless the client leaves or the server stops first.
func (s *Server) pause(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.stop:
	}
	return false
}
