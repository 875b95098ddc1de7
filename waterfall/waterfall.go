package waterfall

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Handler receives the value produced by the handlers before it (or the
// initial value) and returns the value for the handlers after it. It must
// treat in as read-only and return a replacement rather than change it.
type Handler[T any] func(ctx context.Context, in T) (T, error)

// Policy decides what a failed handler does to the run.
type Policy uint8

const (
	// Abort stops the run and returns the failure as Run's error.
	Abort Policy = iota
	// Skip drops the failed handler's output, continues with the value it
	// received and records the failure in Run's report.
	Skip
)

func (p Policy) String() string {
	switch p {
	case Abort:
		return "abort"
	case Skip:
		return "skip"
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// Config holds the settings of a chain. The zero Config means: no name, no
// deadline, Abort, no cloning.
type Config[T any] struct {
	// Name identifies the chain in errors, e.g. "agent/pre-step".
	Name string
	// Timeout is the deadline of each handler call. Zero or negative means
	// none: handlers then run inline. The Timeout option overrides it.
	Timeout time.Duration
	// Policy applies to handler failures. The OnFailure option overrides it.
	Policy Policy
	// Clone, when set, is called on the current value before each handler,
	// which receives the copy. See the package documentation.
	Clone func(T) T
}

// Option adjusts one handler's registration.
type Option func(*settings)

type settings struct {
	priority   int
	timeout    time.Duration
	hasTimeout bool
	policy     Policy
	hasPolicy  bool
}

// Priority places the handler in the chain: lower numbers run first, equal
// numbers run in registration order. The default is 0.
func Priority(p int) Option {
	return func(s *settings) { s.priority = p }
}

// Timeout overrides the chain's per-handler deadline for this handler. Zero or
// negative removes the deadline, so the handler runs inline.
func Timeout(d time.Duration) Option {
	return func(s *settings) { s.timeout, s.hasTimeout = d, true }
}

// OnFailure overrides the chain's failure policy for this handler.
func OnFailure(p Policy) Option {
	return func(s *settings) { s.policy, s.hasPolicy = p, true }
}

// ErrDuplicate is wrapped by the error Add returns for a name that is
// already registered in the chain.
var ErrDuplicate = errors.New("name already registered")

// Chain is an ordered list of handlers over values of type T. The zero Chain
// is ready to use with the zero Config. A Chain must not be copied after
// first use.
type Chain[T any] struct {
	cfg  Config[T]
	mu   sync.Mutex // serialises Add and Remove
	seq  uint64     // registration counter, guarded by mu
	list atomic.Pointer[[]entry[T]]
}

// entry is one registered handler with its settings resolved against the
// chain's Config. Published slices of entries are never modified.
type entry[T any] struct {
	name     string
	fn       Handler[T]
	priority int
	seq      uint64
	timeout  time.Duration
	policy   Policy
}

// New returns an empty chain with the given settings.
func New[T any](cfg Config[T]) *Chain[T] {
	return &Chain[T]{cfg: cfg}
}

// Add registers fn under name and returns a function that removes this
// registration (calling it again, or after the name was removed and
// registered anew, does nothing). It fails when name is empty or taken, when
// fn is nil, or when the resulting policy is unknown.
func (c *Chain[T]) Add(name string, fn Handler[T], opts ...Option) (remove func(), err error) {
	s := settings{timeout: c.cfg.Timeout, policy: c.cfg.Policy}
	for _, o := range opts {
		o(&s)
	}
	switch {
	case name == "":
		return nil, c.errorf("add handler: name is empty")
	case fn == nil:
		return nil, c.errorf("add handler %q: handler func is nil", name)
	case s.policy != Abort && s.policy != Skip:
		return nil, c.errorf("add handler %q: unknown failure policy %v", name, s.policy)
	}
	if s.timeout < 0 {
		s.timeout = 0
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.snapshot()
	for i := range old {
		if old[i].name == name {
			return nil, c.errorf("add handler %q: %w", name, ErrDuplicate)
		}
	}
	c.seq++
	e := entry[T]{name: name, fn: fn, priority: s.priority, seq: c.seq, timeout: s.timeout, policy: s.policy}
	// Insert after every entry with priority <= e's: equal priorities keep
	// registration order.
	at := sort.Search(len(old), func(i int) bool { return old[i].priority > e.priority })
	next := make([]entry[T], 0, len(old)+1)
	next = append(next, old[:at]...)
	next = append(next, e)
	next = append(next, old[at:]...)
	c.list.Store(&next)

	id := e.seq
	return func() { c.removeWhere(func(x *entry[T]) bool { return x.seq == id }) }, nil
}

// Remove unregisters the handler called name and reports whether it was
// registered.
func (c *Chain[T]) Remove(name string) bool {
	return c.removeWhere(func(x *entry[T]) bool { return x.name == name })
}

// Names returns the registered handler names in run order.
func (c *Chain[T]) Names() []string {
	list := c.snapshot()
	names := make([]string, len(list))
	for i := range list {
		names[i] = list[i].name
	}
	return names
}

func (c *Chain[T]) snapshot() []entry[T] {
	if p := c.list.Load(); p != nil {
		return *p
	}
	return nil
}

func (c *Chain[T]) removeWhere(match func(*entry[T]) bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.snapshot()
	for i := range old {
		if match(&old[i]) {
			next := make([]entry[T], 0, len(old)-1)
			next = append(next, old[:i]...)
			next = append(next, old[i+1:]...)
			c.list.Store(&next)
			return true
		}
	}
	return false
}

// Run folds initial through the handlers registered when it starts and
// returns the final value, the failures skipped under the Skip policy (nil
// when there were none) and an error.
//
// The error is a *Failure when a handler failed under the Abort policy, or
// wraps ctx.Err() when the context ended. In both cases the value returned is
// the last value the chain reached before stopping (the initial value if no
// handler succeeded). Callers must re-check ctx after Run returns.
func (c *Chain[T]) Run(ctx context.Context, initial T) (T, []Failure, error) {
	cur := initial
	var failures []Failure
	p := c.list.Load()
	if p == nil {
		return cur, nil, nil
	}
	list := *p
	for i := range list {
		e := &list[i]
		if ctx.Err() != nil {
			return cur, failures, c.cancelled(ctx, "before handler", e.name)
		}
		in := cur
		if c.cfg.Clone != nil {
			in = c.cfg.Clone(cur)
		}
		var out T
		var err error
		if e.timeout > 0 {
			out, err = guarded(ctx, e.fn, e.timeout, in)
		} else {
			out, err = call(ctx, e.fn, in)
		}
		if err == nil {
			cur = out
			continue
		}
		if ctx.Err() != nil {
			return cur, failures, c.cancelled(ctx, "while running handler", e.name)
		}
		f := Failure{Chain: c.cfg.Name, Handler: e.name, Err: err}
		if e.policy == Skip {
			failures = append(failures, f)
			continue
		}
		return cur, failures, &f
	}
	return cur, failures, nil
}

// call runs fn on the current goroutine, turning a panic into a *PanicError.
func call[T any](ctx context.Context, fn Handler[T], in T) (out T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = newPanicError(r)
		}
	}()
	return fn(ctx, in)
}

type result[T any] struct {
	v   T
	err error
}

// guarded runs fn on its own goroutine with a context that expires after d,
// and stops waiting when that context is done. The goroutine of a handler
// that overruns is abandoned: it delivers into a buffered channel nobody
// reads, so it never blocks and its result is never used.
func guarded[T any](ctx context.Context, fn Handler[T], d time.Duration, in T) (T, error) {
	hctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	done := make(chan result[T], 1)
	go func() {
		v, err := call(hctx, fn, in)
		done <- result[T]{v, err}
	}()
	var r result[T]
	select {
	case r = <-done:
	case <-hctx.Done():
		// Prefer a result that is already there over declaring a timeout.
		select {
		case r = <-done:
		default:
			r.err = hctx.Err()
		}
	}
	if r.err != nil && ctx.Err() == nil && errors.Is(hctx.Err(), context.DeadlineExceeded) {
		r.err = fmt.Errorf("exceeded its %v deadline: %w", d, r.err)
	}
	return r.v, r.err
}

func (c *Chain[T]) cancelled(ctx context.Context, where, name string) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause != nil && cause != err {
		return c.errorf("cancelled %s %q: %w: %w", where, name, err, cause)
	}
	return c.errorf("cancelled %s %q: %w", where, name, err)
}

func (c *Chain[T]) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{chainLabel(c.cfg.Name)}, args...)...)
}

func chainLabel(name string) string {
	if name == "" {
		return "waterfall"
	}
	return fmt.Sprintf("waterfall %q", name)
}
