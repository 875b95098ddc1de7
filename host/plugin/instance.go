package plugin

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
	"github.com/weirhost/weir/host/plugin/internal/linmem"
	"github.com/weirhost/weir/sdk/abi"
)

// instance is one live module instance of a plugin. It is used by one call
// at a time.
type instance struct {
	p    *Plugin
	code *code // what it started from
	mod  api.Module
	mem  api.Memory
	// lm backs mem (see linmem): mapped outside the Go heap, grown without
	// copying, unmapped when both the module and the instance are closed.
	lm      *linmem.Memory
	fnInput api.Function
	fnCall  api.Function
	stack   [2]uint64
	inPtr   uint32 // the guest input buffer, as last returned by weir_input
	inCap   uint32 // capacity known for inPtr
	calls   int
	// summarized: the last call asked the host for a summary.
	summarized bool
	req        []byte // request encoding buffer, reused
	stdout     stdio
	stderr     stdio
}

// start instantiates the module (running _initialize), checks the ABI
// version before anything else, and sends init with the plugin config.
func (p *Plugin) start(ctx context.Context) (*instance, error) {
	in := &instance{p: p, code: p.current(), lm: linmem.New()}
	in.stdout.limit, in.stderr.limit = p.cfg.stdioLimit, p.cfg.stdioLimit
	d := p.cfg.deadline(abi.KindUnspecified)
	bctx, b := newBudget(ctx, d, p.rt.closing)
	defer b.stop()
	mc := sandbox(wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions(abi.ExportInitialize).
		WithStdout(&in.stdout).
		WithStderr(&in.stderr))
	mod, err := in.code.wz.InstantiateModule(experimental.WithMemoryAllocator(bctx, in.lm), in.code.mod, mc)
	if err != nil {
		in.lm.Discard() // no code of the module runs any more
		fail := in.failure(ctx, bctx, "start instance", err, d)
		fail.Replaced = false
		in.flush()
		return nil, fail
	}
	in.mod = mod
	in.mem = mod.Memory()
	in.fnInput = mod.ExportedFunction(abi.ExportInput)
	in.fnCall = mod.ExportedFunction(abi.ExportCall)
	version := mod.ExportedFunction(abi.ExportVersion)
	if err := version.CallWithStack(bctx, in.stack[:]); err != nil {
		fail := in.failure(ctx, bctx, "start instance", err, d)
		fail.Replaced = false
		in.close()
		return nil, fail
	}
	if b.spent() {
		// The start outlived its deadline although the budget's timer
		// had not yet stopped it (a busy machine runs timers late): it
		// fails as a start the timer stopped does, whenever the timer runs.
		in.close()
		return nil, &Error{Plugin: p.name, Op: "start instance", Class: ErrDeadline, Detail: "deadline " + d.String() + " exceeded"}
	}
	if v := uint32(in.stack[0]); v != abi.Major {
		in.close()
		return nil, &Error{Plugin: p.name, Op: "start instance", Class: ErrInvalidModule,
			Detail: "module speaks ABI version " + strconv.FormatUint(uint64(v), 10) +
				", the host speaks version " + strconv.FormatUint(uint64(abi.Major), 10)}
	}
	req := abi.InitRequest{Plugin: p.name, Config: p.cfg.config, AbiMajor: abi.Major, AbiMinor: abi.Minor}
	var res abi.InitResult
	if err, _ := in.call(ctx, nil, abi.MethodInit, req.Encode, res.Decode); err != nil {
		in.close()
		err.Replaced = false // nothing was in service yet
		return nil, err
	}
	p.stats.started.Add(1)
	return in, nil
}

// fakeEpoch is where every instance's wall clock starts: 2000-01-01 UTC.
const fakeEpoch = int64(946684800) * int64(time.Second)

// sandbox completes an instance's module configuration. There is no WithFS,
// WithArgs or WithEnv: no files, no arguments, no environment. The wall
// clock is fake and stands still at fakeEpoch, so a plugin that prints the
// time renders the same text on every call (a prompt that changed with
// each reading would replace node 0 every step); the monotonic clock is
// fake and advances 1 ms per reading (the guest's runtime measures
// durations with it); sleeping returns at once (wazero's default); random
// bytes come from a fixed seed. An instance therefore sees the same time
// and randomness on every run, and plugins get real time only as data
// from the host.
func sandbox(mc wazero.ModuleConfig) wazero.ModuleConfig {
	var mono int64
	return mc.
		WithWalltime(func() (int64, int32) {
			return fakeEpoch / int64(time.Second), int32(fakeEpoch % int64(time.Second))
		}, sys.ClockResolution(time.Millisecond)).
		WithNanotime(func() int64 {
			mono += int64(time.Millisecond)
			return mono
		}, sys.ClockResolution(time.Millisecond)).
		WithRandSource(rand.NewChaCha8([32]byte{'w', 'e', 'i', 'r'}))
}

// call runs one dispatcher call: encode the request into the guest's input
// buffer, call weir_call, validate and copy the output frame, decode the
// Response and hand its result to dec. discard reports that the instance
// must not be used again.
func (in *instance) call(parent context.Context, host Host, method abi.Method,
	enc func([]byte) []byte, dec func([]byte) error) (err *Error, discard bool) {
	op := "call " + method.String()
	defer in.flush()
	in.req = enc(in.req[:0])
	if len(in.req) > in.p.cfg.inputLimit {
		return in.p.fail(op, ErrInputTooLarge, "request of "+strconv.Itoa(len(in.req))+
			" bytes exceeds the "+strconv.Itoa(in.p.cfg.inputLimit)+"-byte input limit", nil), false
	}
	kind := method.Kind()
	d := in.p.cfg.deadline(kind)
	bctx, b := newBudget(parent, d, in.p.rt.closing)
	defer b.stop()
	cs := &callState{parent: parent, host: host, kind: kind, budget: b}
	defer func() { in.summarized = cs.summarized }()
	bctx = context.WithValue(bctx, callKey{}, cs)

	n := uint32(len(in.req))
	if n > in.inCap {
		in.stack[0] = uint64(n)
		if err := in.fnInput.CallWithStack(bctx, in.stack[:]); err != nil {
			return in.failure(parent, bctx, op, err, d), true
		}
		ptr := api.DecodeU32(in.stack[0])
		if ptr == 0 || uint64(ptr)+uint64(n) > uint64(in.mem.Size()) {
			return in.p.fail(op, ErrMalformedOutput, "malformed output: weir_input("+strconv.Itoa(int(n))+
				") returned buffer "+strconv.Itoa(int(ptr))+" outside memory", nil).replaced(), true
		}
		in.inPtr, in.inCap = ptr, n
	}
	if n > 0 && !in.mem.Write(in.inPtr, in.req) {
		return in.p.fail(op, ErrMalformedOutput, "malformed output: input buffer lies outside memory", nil).replaced(), true
	}

	in.stack[0], in.stack[1] = uint64(method), uint64(n)
	if err := in.fnCall.CallWithStack(bctx, in.stack[:]); err != nil {
		return in.failure(parent, bctx, op, err, d), true
	}
	ptr, size := abi.UnpackOutput(in.stack[0])
	if int64(size) > int64(in.p.cfg.outputLimit) {
		return in.p.fail(op, ErrOutputTooLarge, "output of "+strconv.FormatUint(uint64(size), 10)+
			" bytes exceeds the "+strconv.Itoa(in.p.cfg.outputLimit)+"-byte output limit", nil).replaced(), true
	}
	view, ok := in.mem.Read(ptr, size)
	if !ok {
		return in.p.fail(op, ErrMalformedOutput, "malformed output: frame at "+strconv.FormatUint(uint64(ptr), 10)+
			" of "+strconv.FormatUint(uint64(size), 10)+" bytes runs past the end of memory ("+
			strconv.FormatUint(uint64(in.mem.Size()), 10)+" bytes)", nil).replaced(), true
	}
	out := bytes.Clone(view) // copy at once: guest memory is the guest's
	return in.p.parseOutput(op, out, dec)
}

// parseOutput decodes an output frame copied out of the guest and hands
// its result to dec. It treats out as untrusted.
func (p *Plugin) parseOutput(op string, out []byte, dec func([]byte) error) (err *Error, discard bool) {
	var resp abi.Response
	if err := resp.Decode(out); err != nil {
		return p.fail(op, ErrMalformedOutput, "malformed output: "+err.Error(), err).replaced(), true
	}
	switch resp.Status {
	case abi.StatusOK:
	case abi.StatusPluginError:
		return p.fail(op, ErrPluginFailed, "plugin error: "+resp.Error, nil), false
	case abi.StatusBadRequest:
		return p.fail(op, ErrRejected, "plugin rejected the request: "+resp.Error, nil), false
	case abi.StatusUnsupported:
		return p.fail(op, ErrUnsupported, "unsupported: "+resp.Error, nil), false
	case abi.StatusStateUnknown:
		return p.fail(op, ErrStateUnknown, "state unknown: "+resp.Error, nil), false
	case abi.StatusPanic:
		return p.fail(op, ErrPanic, "panic: "+resp.Error, nil).replaced(), true
	default:
		return p.fail(op, ErrMalformedOutput, "malformed output: unknown status "+
			strconv.FormatUint(uint64(resp.Status), 10), nil).replaced(), true
	}
	if err := dec(resp.Result); err != nil {
		var lim *limitError
		if errors.As(err, &lim) {
			return p.fail(op, ErrOutputTooLarge, lim.Error(), nil), false
		}
		return p.fail(op, ErrMalformedOutput, "malformed output: "+err.Error(), err).replaced(), true
	}
	return nil, false
}

// limitError is returned by result decoders for a result over a limit.
type limitError struct {
	what        string
	size, limit int
}

func (e *limitError) Error() string {
	return e.what + " of " + strconv.Itoa(e.size) + " bytes exceeds the " + strconv.Itoa(e.limit) + "-byte limit"
}

// failure classifies an error of a guest function call.
func (in *instance) failure(parent, bctx context.Context, op string, err error, d time.Duration) *Error {
	e := &Error{Plugin: in.p.name, Op: op, Err: err, Replaced: true}
	var exit *sys.ExitError
	switch {
	case errors.Is(context.Cause(bctx), errDeadline):
		e.Class, e.Detail = ErrDeadline, "deadline "+d.String()+" exceeded"
	case errors.Is(context.Cause(bctx), errRuntimeClosed):
		e.Class, e.Detail = ErrClosed, "the runtime closed during the call"
	case parent.Err() != nil:
		e.Class, e.Detail = ErrCancelled, "cancelled: "+context.Cause(parent).Error()
	case errors.As(err, &exit):
		e.Class, e.Detail = ErrTrap, "guest exited with code "+strconv.FormatUint(uint64(exit.ExitCode()), 10)
	default:
		msg, _, _ := strings.Cut(err.Error(), "\n")
		e.Class, e.Detail = ErrTrap, "trap: "+msg
	}
	if x := in.stderr.excerpt(); x != "" && e.Class == ErrTrap {
		e.Detail += " (guest stderr: " + x + ")"
	}
	return e
}

func (in *instance) flush() {
	in.stdout.flush(in.p.log, "stdout")
	in.stderr.flush(in.p.log, "stderr")
}

// overLimits reports why a healthy instance should still be retired.
func (in *instance) overLimits() string {
	if in.calls >= in.p.cfg.maxCalls {
		return "served " + strconv.Itoa(in.calls) + " calls"
	}
	if size := uint64(in.mem.Size()); size > in.p.cfg.softMemoryLimit {
		return "memory grew to " + strconv.FormatUint(size, 10) + " bytes, over the soft limit of " +
			strconv.FormatUint(in.p.cfg.softMemoryLimit, 10)
	}
	return ""
}

// close closes the module and releases its memory; the instance runs no
// guest code after it.
func (in *instance) close() {
	if in.mod != nil {
		_ = in.mod.Close(context.Background())
	}
	in.lm.Release()
}
