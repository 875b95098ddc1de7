package mcp

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/weirhost/weir/host"
)

// Set is the servers of one configuration. It is safe for concurrent use.
type Set struct {
	servers []*Server

	mu   sync.Mutex
	subs []sub // in the order of registration
	next int
}

type sub struct {
	id int
	f  func()
}

// NewSet makes a set of servers from their configurations, in order;
// nothing is started.
func NewSet(cfgs []Config, opts Options) *Set {
	ss := &Set{}
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
// (after it was listed again) or a server was disabled; the functions
// registered run one after the other, in the order of registration, on a
// goroutine of their own, and should call Tools. The returned function
// unregisters f.
func (ss *Set) OnChange(f func()) (cancel func()) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	id := ss.next
	ss.next++
	ss.subs = append(ss.subs, sub{id, f})
	return func() {
		ss.mu.Lock()
		defer ss.mu.Unlock()
		ss.subs = slices.DeleteFunc(ss.subs, func(s sub) bool { return s.id == id })
	}
}

func (ss *Set) notify() {
	ss.mu.Lock()
	subs := slices.Clone(ss.subs)
	ss.mu.Unlock()
	for _, s := range subs {
		s.f()
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
