package provider

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/tokenizer"
)

// Defaults of the adapter options.
const (
	// DefaultFailureLimit is the number of consecutive failures after which
	// an adapter stops calling its plugin for the session.
	DefaultFailureLimit = 3
	// DefaultObserveBatch is the most event JSON, in bytes, one
	// meter.observe call carries (a single larger event goes alone). With
	// MaxObserveEvents it keeps a call of a meter that folds a few
	// thousand events a second well inside the 1 s meter deadline.
	DefaultObserveBatch = 128 << 10
	// MaxObserveEvents is the most events one meter.observe call carries.
	MaxObserveEvents = 512
)

// ErrDisabled is the error of an adapter that stopped calling its plugin
// for the session after repeated failures. It also matches
// host.ErrNotGranted: a disabled meter reads as no meter.
var ErrDisabled error = disabledError{}

type disabledError struct{}

func (disabledError) Error() string {
	return "plugin disabled for this session after repeated failures"
}

func (disabledError) Is(target error) bool { return target == host.ErrNotGranted }

type options struct {
	log        hclog.Logger
	counters   map[string]tokenizer.Counter
	failures   int
	stateLimit int
	batch      int
}

// Option configures an adapter.
type Option func(*options)

// WithLogger sets the logger of the breaker's notice (a warning naming the
// plugin, the session and the last failure).
func WithLogger(l hclog.Logger) Option { return func(o *options) { o.log = l } }

// WithTokenizers adds tokenizers the count_tokens import may name (the
// defaults are "deepseek-v3" and "heuristic"); a name given here replaces
// a default of the same name.
func WithTokenizers(counters map[string]tokenizer.Counter) Option {
	return func(o *options) { maps.Copy(o.counters, counters) }
}

// WithFailureLimit sets how many consecutive failures stop the plugin for
// a session (default DefaultFailureLimit); n < 0 never stops it.
func WithFailureLimit(n int) Option { return func(o *options) { o.failures = n } }

// WithStateLimit caps the state blob kept per session, in bytes (default
// plugin.DefaultStateLimit); a larger blob is a failure.
func WithStateLimit(n int) Option { return func(o *options) { o.stateLimit = n } }

// WithObserveBatch caps the event JSON one meter.observe call carries, in
// bytes (default DefaultObserveBatch); a call also carries at most
// MaxObserveEvents events.
func WithObserveBatch(n int) Option { return func(o *options) { o.batch = n } }

func newOptions(opts []Option) options {
	o := options{
		log:        hclog.NewNullLogger(),
		counters:   map[string]tokenizer.Counter{"deepseek-v3": deepSeek{}, "heuristic": tokenizer.Heuristic},
		failures:   DefaultFailureLimit,
		stateLimit: plugin.DefaultStateLimit,
		batch:      DefaultObserveBatch,
	}
	for _, f := range opts {
		f(&o)
	}
	if o.failures == 0 {
		o.failures = DefaultFailureLimit
	}
	return o
}

// deepSeek is the DeepSeek V3 tokenizer, decoded on first use.
type deepSeek struct{}

func (deepSeek) Name() string          { return "deepseek-v3" }
func (deepSeek) Count(text string) int { return tokenizer.DeepSeekV3().Count(text) }

// breaker counts consecutive failures of one plugin in one session and
// opens at the limit.
type breaker struct {
	limit int
	fails int
	open  bool
}

// fail records a failure. When it opens the breaker it returns err
// extended with the notice, logging it once; otherwise err.
func (b *breaker) fail(err error, o *options, plugin, session string) error {
	if b.open || b.limit < 0 || errors.Is(err, errNotCounted) {
		return err
	}
	b.fails++
	if b.fails < b.limit {
		return err
	}
	b.open = true
	o.log.Warn("plugin disabled for this session after consecutive failures; the session goes on without it",
		"plugin", plugin, "session", session, "failures", b.fails, "error", err)
	return fmt.Errorf("%w; plugin %q is disabled for session %s after %d consecutive failures (%w)",
		err, plugin, session, b.fails, ErrDisabled)
}

func (b *breaker) ok() { b.fails = 0 }

// errNotCounted marks failures that are not the plugin's fault (the caller
// cancelled, the plugin was closed).
var errNotCounted = errors.New("not counted")

// classify returns err marked when the breaker should not count it.
func classify(err error) error {
	if errors.Is(err, plugin.ErrCancelled) || errors.Is(err, plugin.ErrClosed) {
		return notCounted{err}
	}
	return err
}

type notCounted struct{ error }

func (e notCounted) Unwrap() []error { return []error{e.error, errNotCounted} }

func sessionName(id string) string {
	if id == "" {
		return `""`
	}
	return id
}

func knownTokenizers(m map[string]tokenizer.Counter) string {
	names := slices.Sorted(maps.Keys(m))
	return strings.Join(names, ", ")
}
