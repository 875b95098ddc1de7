package provider

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/hashicorp/go-hclog"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

// Defaults of the adapter options.
const (
	// DefaultFailureLimit is the number of failures within
	// DefaultFailureWindow steps after which an adapter stops calling its
	// plugin for the session.
	DefaultFailureLimit = 3
	// DefaultFailureWindow is the breaker's window, in steps of the
	// session.
	DefaultFailureWindow = 10
	// DefaultObserveBatch is the most event JSON, in bytes, one
	// meter.observe call carries (a single larger event goes alone). With
	// MaxObserveEvents it keeps a call of a meter that folds a few
	// thousand events a second well inside the 1 s meter deadline.
	DefaultObserveBatch = 128 << 10
	// MaxObserveEvents is the most events one meter.observe call carries.
	MaxObserveEvents = 512
)

// Configuration keys of the breaker (host/config).
const (
	KeyFailureLimit  = "sandbox.breaker.failures"
	KeyFailureWindow = "sandbox.breaker.windowSteps"
)

// ErrDisabled is the error of an adapter that stopped calling its plugin
// for the session after repeated failures. It also matches
// host.ErrNotGranted: a disabled meter reads as no meter.
var ErrDisabled error = disabledError{}

type disabledError struct{}

func (disabledError) Error() string {
	return "plugin disabled for this session after repeated failures"
}

func (disabledError) Is(target error) bool {
	return target == host.ErrNotGranted || target == host.ErrPluginDisabled
}

type options struct {
	log        hclog.Logger
	counters   map[string]tokenizer.Counter
	failures   int
	window     int64
	stateLimit int
	batch      int
	cache      StateCache
	// fingerprint of the plugin for cache entries (Plugin.Meter sets it).
	fingerprint []byte
	// summarize is the route of a compaction plugin's summarize calls
	// (zero: the compaction's route).
	summarize host.Route
}

// WithSummarizeRoute sends a compaction plugin's summarize calls to route
// r, clamped to it (its provider, model and caps), instead of the
// session's route; the compaction request still describes the session's
// route. The agent needs a model for r (host.Config.SummaryModels).
func WithSummarizeRoute(r host.Route) Option { return func(o *options) { o.summarize = r } }

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

// WithFailureLimit sets how many failures within the breaker's window stop
// the plugin for a session (default DefaultFailureLimit); n < 0 never
// stops it.
func WithFailureLimit(n int) Option { return func(o *options) { o.failures = n } }

// WithFailureWindow sets the breaker's window in steps of the session
// (default DefaultFailureWindow): the plugin is stopped when its latest
// failures, as many as the limit, fall within that many steps.
func WithFailureWindow(steps int) Option { return func(o *options) { o.window = int64(steps) } }

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
		window:     DefaultFailureWindow,
		stateLimit: plugin.DefaultStateLimit,
		batch:      DefaultObserveBatch,
	}
	for _, f := range opts {
		f(&o)
	}
	if o.failures == 0 {
		o.failures = DefaultFailureLimit
	}
	if o.window <= 0 {
		o.window = DefaultFailureWindow
	}
	return o
}

// deepSeek is the DeepSeek V3 tokenizer, decoded on first use.
type deepSeek struct{}

func (deepSeek) Name() string          { return "deepseek-v3" }
func (deepSeek) Count(text string) int { return tokenizer.DeepSeekV3().Count(text) }

// breaker disables a plugin for a session once it failed limit times
// within window consecutive steps of the session (by default 3 failures
// within 10 steps), so a plugin that fails now and then, not only one
// that fails every time, is stopped. Its clock is the session's step/start
// events, and on the first call of a session it replays the session's
// plugin/failure events of its plugin: a failure the log holds counts as
// if it happened in this process (excused ones excepted), and a recorded
// disabling stays. The breaker's state is therefore the same in every
// process that resumes the session.
type breaker struct {
	limit  int
	window int64
	plugin string
	kind   host.ProposerKind
	fails  []int64 // the step clock of the latest failures, at most limit
	open   bool
	// notice is the error to return on the next call when replaying the
	// log opened the breaker without a recorded disabling.
	notice error

	next     int64 // seq of the first event not yet scanned
	steps    int64 // step/start events before next
	replayed bool
}

func newBreaker(o *options, plugin string, kind host.ProposerKind) breaker {
	return breaker{limit: o.failures, window: o.window, plugin: plugin, kind: kind}
}

// sync advances the clock over the session's events (the whole log, in
// order); the first sync replays the log's failures of the plugin.
func (b *breaker) sync(evs []surface.Event, o *options, session string) {
	if len(evs) == 0 {
		b.replayed = true
		return
	}
	first := evs[0].Seq
	for i := max(b.next-first, 0); i < int64(len(evs)); i++ {
		e := &evs[i]
		switch {
		case e.Type == surface.TypeStepStart:
			b.steps++
		case !b.replayed && e.Type == surface.TypePluginFailure:
			b.replay(e)
		}
	}
	b.next = first + int64(len(evs))
	if !b.replayed {
		b.replayed = true
		if !b.open && b.limit > 0 && b.tripped() {
			b.open = true
			b.notice = b.disabled(errors.New("failures recorded in the session log"), o, session)
		}
	}
}

func (b *breaker) replay(e *surface.Event) {
	var f host.PluginFailure
	if json.Unmarshal(e.Data, &f) != nil || f.Plugin != b.plugin || f.Kind != string(b.kind) {
		return
	}
	switch {
	case f.Disabled && b.limit >= 0:
		b.open = true
	case !f.Excused:
		b.record(b.steps)
	}
}

func (b *breaker) record(step int64) {
	b.fails = append(b.fails, step)
	if len(b.fails) > max(b.limit, 1) {
		b.fails = b.fails[1:]
	}
}

// tripped reports limit failures within window steps.
func (b *breaker) tripped() bool {
	n := len(b.fails)
	return n >= b.limit && b.fails[n-1]-b.fails[n-b.limit] < b.window
}

// fail records a failure now. When it opens the breaker it returns err
// extended with the notice, logging it once; otherwise err.
func (b *breaker) fail(err error, o *options, session string) error {
	return b.failAt(b.steps, err, o, session)
}

// failAt records a failure at a step of the clock.
func (b *breaker) failAt(step int64, err error, o *options, session string) error {
	if b.open || b.limit < 0 || errors.Is(err, errNotCounted) {
		return err
	}
	b.record(step)
	if !b.tripped() {
		return err
	}
	b.open = true
	return b.disabled(err, o, session)
}

func (b *breaker) disabled(err error, o *options, session string) error {
	o.log.Warn("plugin disabled for this session after repeated failures; the session goes on without it",
		"plugin", b.plugin, "session", session, "failures", len(b.fails), "steps", b.window, "error", err)
	return fmt.Errorf("%w; plugin %q is disabled for session %s: %d failures within %d steps (%s, %s) (%w)",
		err, b.plugin, session, b.limit, b.window, KeyFailureLimit, KeyFailureWindow, ErrDisabled)
}

// takeNotice returns, once, the notice of a breaker the log replay opened.
func (b *breaker) takeNotice() error {
	err := b.notice
	b.notice = nil
	return err
}

// errNotCounted marks failures that are not the plugin's fault (the caller
// cancelled, the plugin was closed); the host records them as excused.
var errNotCounted = host.ErrExcused

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
