package plugin

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/weirhost/weir/sdk/abi"
)

// Plugin is a loaded plugin: a compiled module, its configuration and a
// pool of instances. It is safe for concurrent use.
type Plugin struct {
	name string
	sum  [32]byte // the module's SHA-256
	rt   *Runtime
	mu   sync.Mutex
	code *code // what new instances start from; see current
	// called, on the interpreter, is closed after the first call;
	// compiled when the compilation is over (see upgrade).
	called     chan struct{}
	calledOnce sync.Once
	compiled   chan struct{}
	cfg        pluginConfig
	log        hclog.Logger
	desc       abi.Description
	pool       *pool
	stats      struct {
		calls, failures, started, replaced atomic.Uint64
	}
}

// code is a compiled module and the wazero runtime it belongs to: the
// compiler's, or the interpreter's until the compiler's is ready (see
// WithInterpreterFirst).
type code struct {
	wz     wazero.Runtime
	mod    wazero.CompiledModule
	interp bool
}

// current is the code new instances start from.
func (p *Plugin) current() *code {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.code
}

// stale reports whether in started from code that is no longer current.
func (p *Plugin) stale(in *instance) bool { return in.code != p.current() }

// upgrade waits for the compilation e of a plugin served by the
// interpreter and then makes it the plugin's code: new instances start
// from it, and the interpreter's are retired as they come back to the
// pool. A failed compilation leaves the plugin on the interpreter.
func (p *Plugin) upgrade(e *compileEntry, record string) {
	defer p.rt.upgrading.finish()
	<-e.done
	if e.err != nil {
		close(p.compiled)
		p.log.Warn("the module did not compile; its instances keep running on the interpreter", "error", e.err.Error())
		return
	}
	p.rt.markChecked(record)
	p.mu.Lock()
	p.code = &code{wz: p.rt.wz, mod: e.mod}
	p.mu.Unlock()
	close(p.compiled)
	p.pool.retire(p.stale)
	p.rt.interpRelease(p.sum)
	p.log.Debug("compiled; instances now start from the compiled module")
}

// awaitCompiled starts the compilation of a plugin loaded on the
// interpreter (if its first call has not started it yet), waits for it
// and reports whether it succeeded; false when ctx ends first.
func (p *Plugin) awaitCompiled(ctx context.Context) bool {
	if p.compiled == nil {
		return false
	}
	p.calledOnce.Do(func() { close(p.called) })
	select {
	case <-p.compiled:
		return !p.current().interp
	case <-ctx.Done():
		return false
	}
}

// ModuleSum is the SHA-256 of the plugin's module.
func (p *Plugin) ModuleSum() [32]byte { return p.sum }

// Interpreted reports whether new instances of the plugin start on
// wazero's interpreter: loaded with WithInterpreterFirst and not yet
// compiled.
func (p *Plugin) Interpreted() bool { return p.current().interp }

// Stats are a plugin's counters since load.
type Stats struct {
	Calls    uint64 // provider and lifecycle calls made through the pool
	Failures uint64 // calls that returned an error
	Started  uint64 // instances started
	Replaced uint64 // instances discarded (faults and limits)
	Idle     int    // instances idle in the pool now
}

// Name is the name the plugin was loaded under.
func (p *Plugin) Name() string { return p.name }

// Description is what the plugin said about itself at load.
func (p *Plugin) Description() abi.Description { return p.desc }

// Provides reports whether the plugin implements the provider kind.
func (p *Plugin) Provides(kind abi.Kind) bool { return p.desc.Provides(kind) }

// Stats returns the plugin's counters.
func (p *Plugin) Stats() Stats {
	return Stats{
		Calls:    p.stats.calls.Load(),
		Failures: p.stats.failures.Load(),
		Started:  p.stats.started.Load(),
		Replaced: p.stats.replaced.Load(),
		Idle:     p.pool.idleCount(),
	}
}

// RenderPrompt calls prompt.render.
func (p *Plugin) RenderPrompt(ctx context.Context, host Host, req *abi.RenderRequest) (string, error) {
	var res abi.RenderResult
	err := p.invoke(ctx, host, abi.MethodPromptRender, req.Encode, res.Decode)
	return res.Prompt, err
}

// PreStep calls compaction.prestep.
func (p *Plugin) PreStep(ctx context.Context, host Host, req *abi.CompactionRequest) (*abi.CompactionResult, error) {
	return p.compaction(ctx, host, abi.MethodCompactionPreStep, req)
}

// Manual calls compaction.manual.
func (p *Plugin) Manual(ctx context.Context, host Host, req *abi.CompactionRequest) (*abi.CompactionResult, error) {
	return p.compaction(ctx, host, abi.MethodCompactionManual, req)
}

// Overflow calls compaction.overflow.
func (p *Plugin) Overflow(ctx context.Context, host Host, req *abi.CompactionRequest) (*abi.CompactionResult, error) {
	return p.compaction(ctx, host, abi.MethodCompactionOverflow, req)
}

// Region calls compaction.region (ABI minor 2), which a plugin provides
// only when its description lists it (Implements); a plugin that does not
// gets an ErrUnsupported error without a call.
func (p *Plugin) Region(ctx context.Context, host Host, req *abi.CompactionRequest) (*abi.CompactionResult, error) {
	if !p.Implements(abi.MethodCompactionRegion) {
		p.stats.failures.Add(1)
		return nil, p.fail("call "+abi.MethodCompactionRegion.String(), ErrUnsupported,
			"plugin does not implement compaction.region (its describe lists no such method)", nil)
	}
	return p.compaction(ctx, host, abi.MethodCompactionRegion, req)
}

// Implements reports whether the plugin declared the optional method m
// (abi.Description.Methods) and provides its kind.
func (p *Plugin) Implements(m abi.Method) bool {
	return p.desc.Provides(m.Kind()) && p.desc.Implements(m)
}

func (p *Plugin) compaction(ctx context.Context, host Host, method abi.Method, req *abi.CompactionRequest) (*abi.CompactionResult, error) {
	res := new(abi.CompactionResult)
	err := p.invoke(ctx, host, method, req.Encode, func(b []byte) error {
		if err := res.Decode(b); err != nil {
			return err
		}
		if len(res.State) > p.cfg.stateLimit {
			return &limitError{what: "state", size: len(res.State), limit: p.cfg.stateLimit}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Observe calls meter.observe and returns the new state blob.
func (p *Plugin) Observe(ctx context.Context, host Host, req *abi.ObserveRequest) ([]byte, error) {
	var res abi.ObserveResult
	err := p.invoke(ctx, host, abi.MethodMeterObserve, req.Encode, func(b []byte) error {
		if err := res.Decode(b); err != nil {
			return err
		}
		if len(res.State) > p.cfg.stateLimit {
			return &limitError{what: "state", size: len(res.State), limit: p.cfg.stateLimit}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res.State, nil
}

// Fold calls meter.observe and returns the whole result: with a request
// that set StateOptional, the plugin may keep the state (StateKept) and
// send no blob. A request naming a state the instance does not hold by key
// alone fails with ErrStateUnknown.
func (p *Plugin) Fold(ctx context.Context, host Host, req *abi.ObserveRequest) (*abi.ObserveResult, error) {
	res := new(abi.ObserveResult)
	err := p.invoke(ctx, host, abi.MethodMeterObserve, req.Encode, func(b []byte) error {
		if err := res.Decode(b); err != nil {
			return err
		}
		if len(res.State) > p.cfg.stateLimit {
			return &limitError{what: "state", size: len(res.State), limit: p.cfg.stateLimit}
		}
		if res.StateKept && !req.StateOptional {
			return errors.New("the plugin kept its state although the request did not allow it")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Measure calls meter.measure.
func (p *Plugin) Measure(ctx context.Context, host Host, req *abi.MeasureRequest) (*abi.Measurement, error) {
	res := new(abi.Measurement)
	if err := p.invoke(ctx, host, abi.MethodMeterMeasure, req.Encode, res.Decode); err != nil {
		return nil, err
	}
	return res, nil
}

// Call runs any method with an encoded request and returns the encoded
// result. It serves methods newer than this package's typed API.
func (p *Plugin) Call(ctx context.Context, host Host, method abi.Method, req []byte) ([]byte, error) {
	var out []byte
	err := p.invoke(ctx, host, method, func(b []byte) []byte { return append(b, req...) },
		func(b []byte) error { out = b; return nil })
	return out, err
}

// invoke checks out an instance, runs the call and returns the instance to
// the pool or discards it.
func (p *Plugin) invoke(ctx context.Context, host Host, method abi.Method, enc func([]byte) []byte, dec func([]byte) error) error {
	op := "call " + method.String()
	if k := method.Kind(); k != abi.KindUnspecified && !p.desc.Provides(k) {
		p.stats.failures.Add(1)
		return p.fail(op, ErrUnsupported, "plugin does not provide "+k.String(), nil)
	}
	p.stats.calls.Add(1)
	in, err := p.pool.get(ctx, p.start)
	if err != nil && errors.Is(err, ErrDeadline) && p.current().interp {
		// A start past its deadline on the interpreter waits for the
		// compiled module, as a call does (below).
		if p.awaitCompiled(ctx) {
			in, err = p.pool.get(ctx, p.start)
		}
	}
	if err != nil {
		return p.noInstance(op, err)
	}
	in.calls++
	fail, discard := in.call(ctx, host, method, enc, dec)
	if fail != nil && errors.Is(fail, ErrDeadline) && in.code.interp && !in.summarized {
		// The deadlines are set for compiled code; the interpreter runs
		// several times slower. The call runs again on the compiled
		// module once it is ready, as it would have without the
		// interpreter: a call is a function of its request, and a new
		// instance gives the result any instance gives.
		p.log.Debug("deadline on the interpreter; the call waits for the compiled module", "method", method.String())
		if p.awaitCompiled(ctx) {
			p.stats.replaced.Add(1)
			p.pool.put(in, true)
			if in, err = p.pool.get(ctx, p.start); err != nil {
				return p.noInstance(op, err)
			}
			in.calls++
			fail, discard = in.call(ctx, host, method, enc, dec)
		}
	}
	if !discard {
		if why := in.overLimits(); why != "" {
			p.log.Debug("retiring instance", "reason", why)
			discard = true
		}
	}
	if discard {
		p.stats.replaced.Add(1)
	}
	p.pool.put(in, discard)
	if p.called != nil {
		p.calledOnce.Do(func() { close(p.called) })
	}
	if fail != nil {
		p.stats.failures.Add(1)
		p.log.Debug("call failed", "method", method.String(), "error", fail.Error())
		return fail
	}
	return nil
}

// noInstance is the error of a call that got no instance from the pool.
func (p *Plugin) noInstance(op string, err error) error {
	p.stats.failures.Add(1)
	var pe *Error
	switch {
	case errors.As(err, &pe):
		return relabel(pe, op)
	case errors.Is(err, ErrClosed):
		return p.fail(op, ErrClosed, "plugin is closed", nil)
	default:
		return p.fail(op, ErrCancelled, "cancelled while waiting for an instance: "+err.Error(), err)
	}
}

func (p *Plugin) fail(op string, class error, detail string, err error) *Error {
	return &Error{Plugin: p.name, Op: op, Class: class, Detail: detail, Err: err}
}

func (e *Error) replaced() *Error {
	e.Replaced = true
	return e
}

// Close closes the plugin's instances. Calls in flight finish first; later
// calls fail with ErrClosed.
func (p *Plugin) Close(ctx context.Context) error {
	p.pool.close()
	p.rt.mu.Lock()
	delete(p.rt.plugins, p)
	p.rt.mu.Unlock()
	return nil
}
