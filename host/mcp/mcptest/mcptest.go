// Package mcptest serves MCP servers for tests: a server of the official
// SDK over streamable HTTP on loopback, behind a bearer token, and a log
// sink the servers' goroutines may write to while a test reads it.
package mcptest

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeHTTP serves srv over streamable HTTP on a loopback port until the
// test ends and returns its URL. A request without the header
// "Authorization: Bearer token" is refused with 401.
func ServeHTTP(t testing.TB, srv *sdk.Server, token string) string {
	t.Helper()
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// Text is a tool result of one text block.
func Text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// Log is a log sink safe for concurrent writes and reads.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
