package plugin

import (
	"context"
	"sync"
)

// pool holds a plugin's idle instances and bounds its live ones. An
// instance is checked out by exactly one call at a time.
type pool struct {
	slots  chan struct{} // one token per live-or-starting instance in use
	stale  func(*instance) bool
	mu     sync.Mutex
	idle   []*instance
	closed bool
}

// newPool returns a pool of at most size live instances. An instance for
// which stale reports true (it started from code since replaced) is
// closed instead of being handed out or kept.
func newPool(size int, stale func(*instance) bool) *pool {
	return &pool{slots: make(chan struct{}, max(1, size)), stale: stale}
}

// get checks out an idle instance, or starts one with start when none is
// idle. It waits while every slot is in use.
func (pl *pool) get(ctx context.Context, start func(context.Context) (*instance, error)) (*instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case pl.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	pl.mu.Lock()
	if pl.closed {
		pl.mu.Unlock()
		<-pl.slots
		return nil, ErrClosed
	}
	for n := len(pl.idle); n > 0; n-- {
		in := pl.idle[n-1]
		pl.idle = pl.idle[:n-1]
		if pl.stale != nil && pl.stale(in) {
			in.close()
			continue
		}
		pl.mu.Unlock()
		return in, nil
	}
	pl.mu.Unlock()
	in, err := start(ctx)
	if err != nil {
		<-pl.slots
		return nil, err
	}
	return in, nil
}

// put returns an instance; a discarded one is closed.
func (pl *pool) put(in *instance, discard bool) {
	pl.mu.Lock()
	if discard || pl.closed || (pl.stale != nil && pl.stale(in)) {
		pl.mu.Unlock()
		in.close()
	} else {
		pl.idle = append(pl.idle, in)
		pl.mu.Unlock()
	}
	<-pl.slots
}

// retire closes the idle instances for which stale reports true.
func (pl *pool) retire(stale func(*instance) bool) {
	pl.mu.Lock()
	var keep, drop []*instance
	for _, in := range pl.idle {
		if stale(in) {
			drop = append(drop, in)
		} else {
			keep = append(keep, in)
		}
	}
	pl.idle = keep
	pl.mu.Unlock()
	for _, in := range drop {
		in.close()
	}
}

// idleCount is the number of idle instances.
func (pl *pool) idleCount() int {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return len(pl.idle)
}

// close closes idle instances; checked-out ones are closed when returned.
func (pl *pool) close() {
	pl.mu.Lock()
	idle := pl.idle
	pl.idle, pl.closed = nil, true
	pl.mu.Unlock()
	for _, in := range idle {
		in.close()
	}
}

// drain waits until no instance is checked out, or ctx ends: it takes
// every slot, then gives them back (a get waiting for one then finds the
// pool closed).
func (pl *pool) drain(ctx context.Context) {
	n := 0
	defer func() {
		for ; n > 0; n-- {
			<-pl.slots
		}
	}()
	for n < cap(pl.slots) {
		select {
		case pl.slots <- struct{}{}:
			n++
		case <-ctx.Done():
			return
		}
	}
}
