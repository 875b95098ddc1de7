package mcp

import (
	"context"
	"errors"
	"sync"

	"github.com/weirhost/weir/host"
)

// Set is the servers of one configuration. It is safe for concurrent use.
type Set struct {
	servers []*Server

	mu   sync.Mutex
	subs map[int]func()
	next int
}

// NewSet makes a set of servers from their configurations, in order;
// nothing is started.
func NewSet(cfgs []Config, opts Options) *Set {
	ss := &Set{subs: map[int]func(){}}
	for _, c := range cfgs {
		ss.Add(New(c, opts))
	}
	return ss
}

// Add adds a server (one made by New or Attach) to the set.
func (ss *Set) Add(s *Server) {
	s.changed = ss.notify
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.servers = append(ss.servers, s)
}

// Servers are the set's servers, in order.
func (ss *Set) Servers() []*Server {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return append([]*Server(nil), ss.servers...)
}

// Tools are the tools of every server, in the servers' order, starting
// the servers that have not been started. A server that fails to start
// or list offers no tools; its error is among those returned, and the
// next Tools tries it again (until its breaker opens).
func (ss *Set) Tools(ctx context.Context) ([]host.Tool, error) {
	var tools []host.Tool
	var errs []error
	for _, s := range ss.Servers() {
		t, err := s.Tools(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		tools = append(tools, t...)
	}
	return tools, errors.Join(errs...)
}

// OnChange registers f to be called when a server's tool list changed
// (after it was listed again) or a server was disabled; f runs on a
// goroutine of its own and should call Tools. The returned function
// unregisters f.
func (ss *Set) OnChange(f func()) (cancel func()) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	id := ss.next
	ss.next++
	ss.subs[id] = f
	return func() {
		ss.mu.Lock()
		defer ss.mu.Unlock()
		delete(ss.subs, id)
	}
}

func (ss *Set) notify() {
	ss.mu.Lock()
	subs := make([]func(), 0, len(ss.subs))
	for _, f := range ss.subs {
		subs = append(subs, f)
	}
	ss.mu.Unlock()
	for _, f := range subs {
		f()
	}
}

// Close closes every server.
func (ss *Set) Close() error {
	var errs []error
	for _, s := range ss.Servers() {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
