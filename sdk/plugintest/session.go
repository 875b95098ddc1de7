package plugintest

import (
	"context"
	"sync"
	"unicode/utf8"

	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
)

// Session is an in-memory plugin.Host for tests: fixed answers for the
// queries, optional functions for the capabilities, and a record of what the
// plugin asked. A nil field or function answers "not found" (data) or "not
// granted" (capabilities).
type Session struct {
	Nodes    []abi.Node
	Messages map[int64][]byte // message JSON by seq
	// Events answers the event import (ABI minor 2), by seq.
	Events      map[int64]abi.EventData
	Gens        abi.Generations
	HeaderJSON  []byte
	Measurement *abi.Measurement

	// Summarizer answers summarize; nil means not granted.
	Summarizer func(ctx context.Context, req *abi.SummarizeRequest) (*abi.SummarizeResult, error)
	// Tokenizer answers count_tokens; nil means not granted.
	Tokenizer func(tokenizer string, text []byte) (int, error)

	mu    sync.Mutex
	calls []string
}

var _ plugin.EventHost = (*Session)(nil)

func (s *Session) record(name string) {
	s.mu.Lock()
	s.calls = append(s.calls, name)
	s.mu.Unlock()
}

// Calls lists the Host methods the plugin reached, in order.
func (s *Session) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// SurfaceNodes implements plugin.Host.
func (s *Session) SurfaceNodes(context.Context) ([]abi.Node, error) {
	s.record("SurfaceNodes")
	return s.Nodes, nil
}

// Message implements plugin.Host.
func (s *Session) Message(_ context.Context, seq int64) ([]byte, error) {
	s.record("Message")
	m, ok := s.Messages[seq]
	if !ok {
		return nil, plugin.ErrNotFound
	}
	return m, nil
}

// Event implements plugin.EventHost.
func (s *Session) Event(_ context.Context, seq int64) (*abi.EventData, error) {
	s.record("Event")
	e, ok := s.Events[seq]
	if !ok {
		return nil, plugin.ErrNotFound
	}
	return &e, nil
}

// Generations implements plugin.Host.
func (s *Session) Generations(context.Context) (abi.Generations, error) {
	s.record("Generations")
	return s.Gens, nil
}

// Header implements plugin.Host.
func (s *Session) Header(context.Context) ([]byte, error) {
	s.record("Header")
	if s.HeaderJSON == nil {
		return nil, plugin.ErrNotFound
	}
	return s.HeaderJSON, nil
}

// Measure implements plugin.Host.
func (s *Session) Measure(context.Context) (*abi.Measurement, error) {
	s.record("Measure")
	if s.Measurement == nil {
		return nil, plugin.ErrNotFound
	}
	return s.Measurement, nil
}

// Summarize implements plugin.Host.
func (s *Session) Summarize(ctx context.Context, req *abi.SummarizeRequest) (*abi.SummarizeResult, error) {
	s.record("Summarize")
	if s.Summarizer == nil {
		return nil, plugin.ErrNotGranted
	}
	return s.Summarizer(ctx, req)
}

// CountTokens implements plugin.Host.
func (s *Session) CountTokens(_ context.Context, tokenizer string, text []byte) (int, error) {
	s.record("CountTokens")
	if s.Tokenizer == nil {
		return 0, plugin.ErrNotGranted
	}
	return s.Tokenizer(tokenizer, text)
}

// RuneCounter is a Tokenizer that counts one token per rune, for tests.
func RuneCounter(_ string, text []byte) (int, error) { return utf8.RuneCount(text), nil }
