package mcp_test

import (
	"context"
	"testing"

	"github.com/weirhost/weir/host/mcp"
)

// BenchmarkCall is one tool call's round trip, over stdio (the test binary
// as the server) and over streamable HTTP on loopback.
func BenchmarkCall(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  func(testing.TB) mcp.Config
	}{
		{"stdio", stdioConfig},
		{"http", func(t testing.TB) mcp.Config {
			return mcp.Config{Name: "t", URL: httpServer(t, "x"), Headers: map[string]string{"Authorization": "Bearer x"}}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := mcp.New(tc.cfg(b), mcp.Options{})
			defer s.Close()
			tools, err := s.Tools(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			echo := toolNamed(b, tools, "t__echo")
			for b.Loop() {
				if _, err := echo.Run(context.Background(), `{"msg":"hi"}`); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCrashAndRestart is a call that crashes the stdio server and the
// next call, which starts it again.
func BenchmarkCrashAndRestart(b *testing.B) {
	cfg := stdioConfig(b)
	cfg.Failures = 1 << 30
	s := mcp.New(cfg, mcp.Options{})
	defer s.Close()
	tools, err := s.Tools(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	crash, echo := toolNamed(b, tools, "t__crash"), toolNamed(b, tools, "t__echo")
	for b.Loop() {
		if _, err := crash.Run(context.Background(), `{}`); err == nil {
			b.Fatal("the crash call succeeded")
		}
		if _, err := echo.Run(context.Background(), `{"msg":"x"}`); err != nil {
			b.Fatal(err)
		}
	}
}
