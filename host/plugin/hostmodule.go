package plugin

import (
	"bytes"
	"context"
	"errors"
	"math"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/weirhost/weir/host/plugin/internal/wasmparse"
	"github.com/weirhost/weir/sdk/abi"
)

var (
	i32 = wasmparse.I32
	i64 = wasmparse.I64
)

// hostImports are the signatures of the weir host functions.
var hostImports = map[string]wasmparse.FuncType{
	abi.ImportSurfaceNodes: {Params: []wasmparse.ValueType{i32, i32}, Results: []wasmparse.ValueType{i32}},
	abi.ImportMessage:      {Params: []wasmparse.ValueType{i64, i32, i32}, Results: []wasmparse.ValueType{i32}},
	abi.ImportEvent:        {Params: []wasmparse.ValueType{i64, i32, i32}, Results: []wasmparse.ValueType{i32}},
	abi.ImportGenerations:  {Params: []wasmparse.ValueType{i32, i32}, Results: []wasmparse.ValueType{i32}},
	abi.ImportHeader:       {Params: []wasmparse.ValueType{i32, i32}, Results: []wasmparse.ValueType{i32}},
	abi.ImportMeasure:      {Params: []wasmparse.ValueType{i32, i32}, Results: []wasmparse.ValueType{i32}},
	abi.ImportSummarize:    {Params: []wasmparse.ValueType{i32, i32, i32, i32}, Results: []wasmparse.ValueType{i32}},
	abi.ImportCountTokens:  {Params: []wasmparse.ValueType{i32, i32, i32, i32}, Results: []wasmparse.ValueType{i64}},
	abi.ImportLastError:    {Params: []wasmparse.ValueType{i32, i32}, Results: []wasmparse.ValueType{i32}},
}

// callKey carries the *callState of the running call in the context wazero
// passes to host functions.
type callKey struct{}

// callState is what the host functions know about the running call.
type callState struct {
	parent  context.Context // the caller's context, handed to Host methods
	host    Host
	kind    abi.Kind
	budget  *budget
	lastErr string
	memo    map[string]memoEntry
	// summarized: the call asked the host for a summary, a model call
	// the host records, so the call is not repeated (see Plugin.invoke).
	summarized bool
}

// memoEntry keeps an import's last answer for the call, so a guest retrying
// with a larger buffer gets the same bytes without the host recomputing
// them (or, for summarize, calling the model again).
type memoEntry struct {
	seq int64
	req []byte
	out []byte
}

func stateOf(ctx context.Context) *callState {
	cs, _ := ctx.Value(callKey{}).(*callState)
	return cs
}

func instantiateHostModule(ctx context.Context, wz wazero.Runtime) error {
	b := wz.NewHostModuleBuilder(abi.ImportModule)
	export := func(name string, fn api.GoModuleFunc) {
		sig := hostImports[name]
		b.NewFunctionBuilder().WithGoModuleFunction(fn, apiTypes(sig.Params), apiTypes(sig.Results)).Export(name)
	}
	export(abi.ImportSurfaceNodes, func(ctx context.Context, m api.Module, stack []uint64) {
		stack[0] = api.EncodeI32(answer(ctx, m, abi.ImportSurfaceNodes, stack[0], stack[1], nil,
			func(cs *callState, dst []byte) ([]byte, error) {
				nodes, err := cs.host.SurfaceNodes(cs.parent)
				if err != nil {
					return nil, err
				}
				list := abi.NodeList{Nodes: nodes}
				return list.Encode(dst), nil
			}))
	})
	export(abi.ImportMessage, func(ctx context.Context, m api.Module, stack []uint64) {
		seq := int64(stack[0])
		stack[0] = api.EncodeI32(answer(ctx, m, abi.ImportMessage, stack[1], stack[2], &seq,
			func(cs *callState, dst []byte) ([]byte, error) {
				// The host's bytes, memoised and copied into the guest
				// as they are (Host.Message: the caller's, read only).
				return cs.host.Message(cs.parent, seq)
			}))
	})
	export(abi.ImportEvent, func(ctx context.Context, m api.Module, stack []uint64) {
		seq := int64(stack[0])
		stack[0] = api.EncodeI32(answer(ctx, m, abi.ImportEvent, stack[1], stack[2], &seq,
			func(cs *callState, dst []byte) ([]byte, error) {
				es, ok := cs.host.(EventHost)
				if !ok {
					return nil, ErrNotGranted
				}
				e, err := es.Event(cs.parent, seq)
				if err != nil {
					return nil, err
				}
				if e == nil {
					return nil, ErrNotFound
				}
				return e.Encode(dst), nil
			}))
	})
	export(abi.ImportGenerations, func(ctx context.Context, m api.Module, stack []uint64) {
		stack[0] = api.EncodeI32(answer(ctx, m, abi.ImportGenerations, stack[0], stack[1], nil,
			func(cs *callState, dst []byte) ([]byte, error) {
				g, err := cs.host.Generations(cs.parent)
				if err != nil {
					return nil, err
				}
				return g.Encode(dst), nil
			}))
	})
	export(abi.ImportHeader, func(ctx context.Context, m api.Module, stack []uint64) {
		stack[0] = api.EncodeI32(answer(ctx, m, abi.ImportHeader, stack[0], stack[1], nil,
			func(cs *callState, dst []byte) ([]byte, error) {
				h, err := cs.host.Header(cs.parent)
				return append(dst, h...), err
			}))
	})
	export(abi.ImportMeasure, func(ctx context.Context, m api.Module, stack []uint64) {
		stack[0] = api.EncodeI32(answer(ctx, m, abi.ImportMeasure, stack[0], stack[1], nil,
			func(cs *callState, dst []byte) ([]byte, error) {
				ms, err := cs.host.Measure(cs.parent)
				if err != nil {
					return nil, err
				}
				if ms == nil {
					return nil, ErrNotFound
				}
				return ms.Encode(dst), nil
			}))
	})
	export(abi.ImportSummarize, func(ctx context.Context, m api.Module, stack []uint64) {
		cs := stateOf(ctx)
		view, ok := m.Memory().Read(api.DecodeU32(stack[0]), api.DecodeU32(stack[1]))
		if cs != nil && !ok {
			cs.lastErr = "summarize: request is out of bounds"
			stack[0] = api.EncodeI32(abi.HostBadArgument)
			return
		}
		stack[0] = api.EncodeI32(answer(ctx, m, abi.ImportSummarize, stack[2], stack[3], view,
			func(cs *callState, dst []byte) ([]byte, error) {
				var req abi.SummarizeRequest
				if err := req.Decode(bytes.Clone(view)); err != nil {
					return nil, errBadRequest{err}
				}
				cs.summarized = true
				cs.budget.pause()
				res, err := cs.host.Summarize(cs.parent, &req)
				cs.budget.resume()
				if err != nil {
					return nil, err
				}
				if res == nil {
					return nil, errors.New("summarizer returned no result")
				}
				return res.Encode(dst), nil
			}))
	})
	export(abi.ImportCountTokens, func(ctx context.Context, m api.Module, stack []uint64) {
		stack[0] = api.EncodeI64(countTokens(ctx, m, stack))
	})
	export(abi.ImportLastError, func(ctx context.Context, m api.Module, stack []uint64) {
		cs := stateOf(ctx)
		if cs == nil {
			stack[0] = api.EncodeI32(0)
			return
		}
		msg := cs.lastErr
		stack[0] = api.EncodeI32(write(m, api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), []byte(msg)))
	})
	_, err := b.Instantiate(ctx)
	return err
}

// errBadRequest marks a guest request that did not decode.
type errBadRequest struct{ err error }

func (e errBadRequest) Error() string { return e.err.Error() }

// answer runs one (buf, limit) query: grant check, memoised production,
// and the write into guest memory. key distinguishes memo entries: a seq
// (message) or request bytes (summarize).
func answer(ctx context.Context, m api.Module, imp string, bufArg, limitArg uint64, key any,
	produce func(cs *callState, dst []byte) ([]byte, error)) int32 {
	cs := stateOf(ctx)
	if cs == nil {
		return abi.HostNotGranted
	}
	buf, limit := api.DecodeU32(bufArg), api.DecodeU32(limitArg)
	if !abi.Granted(cs.kind, imp) || cs.host == nil {
		cs.lastErr = imp + " is not granted to " + cs.kindText() + " calls"
		return abi.HostNotGranted
	}
	if uint64(buf)+uint64(limit) > uint64(m.Memory().Size()) {
		cs.lastErr = imp + ": buffer is out of bounds"
		return abi.HostBadArgument
	}
	e, hit := cs.memo[imp]
	if hit {
		switch k := key.(type) {
		case *int64:
			hit = e.seq == *k
		case []byte:
			hit = bytes.Equal(e.req, k)
		}
	}
	if !hit {
		out, err := produce(cs, nil)
		if err != nil {
			return cs.status(imp, err)
		}
		if len(out) > math.MaxInt32 {
			cs.lastErr = imp + ": result is too large"
			return abi.HostFailed
		}
		e = memoEntry{out: out}
		switch k := key.(type) {
		case *int64:
			e.seq = *k
		case []byte:
			e.req = bytes.Clone(k)
		}
		if cs.memo == nil {
			cs.memo = map[string]memoEntry{}
		}
		cs.memo[imp] = e
	}
	return write(m, buf, limit, e.out)
}

// write copies data into guest memory at buf when it fits in limit and
// returns len(data) either way (the guest retries with a larger buffer).
func write(m api.Module, buf, limit uint32, data []byte) int32 {
	if uint64(len(data)) > uint64(limit) {
		return int32(len(data))
	}
	if len(data) > 0 && !m.Memory().Write(buf, data) {
		return abi.HostBadArgument
	}
	return int32(len(data))
}

func countTokens(ctx context.Context, m api.Module, stack []uint64) int64 {
	cs := stateOf(ctx)
	if cs == nil {
		return int64(abi.HostNotGranted)
	}
	if !abi.Granted(cs.kind, abi.ImportCountTokens) || cs.host == nil {
		cs.lastErr = "count_tokens is not granted to " + cs.kindText() + " calls"
		return int64(abi.HostNotGranted)
	}
	name, ok1 := m.Memory().Read(api.DecodeU32(stack[0]), api.DecodeU32(stack[1]))
	text, ok2 := m.Memory().Read(api.DecodeU32(stack[2]), api.DecodeU32(stack[3]))
	if !ok1 || !ok2 {
		cs.lastErr = "count_tokens: argument is out of bounds"
		return int64(abi.HostBadArgument)
	}
	n, err := cs.host.CountTokens(cs.parent, string(name), text)
	if err != nil {
		return int64(cs.status(abi.ImportCountTokens, err))
	}
	return int64(n)
}

// status maps a Host error to an import status, keeping its text for
// last_error.
func (cs *callState) status(imp string, err error) int32 {
	cs.lastErr = imp + ": " + err.Error()
	var bad errBadRequest
	switch {
	case errors.Is(err, ErrNotGranted):
		return abi.HostNotGranted
	case errors.Is(err, ErrNotFound):
		return abi.HostNotFound
	case errors.As(err, &bad):
		return abi.HostBadArgument
	case cs.parent.Err() != nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return abi.HostCancelled
	}
	return abi.HostFailed
}

func (cs *callState) kindText() string {
	if cs.kind == abi.KindUnspecified {
		return "lifecycle"
	}
	return cs.kind.String()
}

func apiTypes(vs []wasmparse.ValueType) []api.ValueType {
	out := make([]api.ValueType, len(vs))
	for i, v := range vs {
		out[i] = api.ValueType(v)
	}
	return out
}

// budget is a call's deadline. It can be paused while the host works on the
// guest's behalf (summarize), so slow model calls do not eat the guest's
// compute time. cancel fires with errDeadline when the budget runs out, and
// with errRuntimeClosed when the runtime closes: Runtime.Close waits for
// the calls it ends before closing wazero, which must not close a module
// under a running call.
type budget struct {
	cancel   context.CancelCauseFunc
	timer    *time.Timer
	unclosed func() bool // stops the cancel at the runtime's close
	left     time.Duration
	started  time.Time
	fired    bool
}

var (
	errDeadline      = errors.New("plugin call deadline")
	errRuntimeClosed = errors.New("plugin runtime closed")
)

// newBudget starts a budget of d under parent that also ends when closing
// does.
func newBudget(parent context.Context, d time.Duration, closing context.Context) (context.Context, *budget) {
	ctx, cancel := context.WithCancelCause(parent)
	b := &budget{cancel: cancel, left: d, started: time.Now()}
	b.timer = time.AfterFunc(d, func() { cancel(errDeadline) })
	b.unclosed = context.AfterFunc(closing, func() { cancel(errRuntimeClosed) })
	return ctx, b
}

func (b *budget) pause() {
	if b == nil || b.fired {
		return
	}
	if !b.timer.Stop() {
		b.fired = true
		return
	}
	b.left -= time.Since(b.started)
}

func (b *budget) resume() {
	if b == nil || b.fired {
		return
	}
	b.started = time.Now()
	if b.left <= 0 {
		b.fired = true
		b.cancel(errDeadline)
		return
	}
	b.timer.Reset(b.left)
}

// spent reports whether the budget ran out, whether or not its timer has
// fired yet.
func (b *budget) spent() bool {
	return b.fired || b.left-time.Since(b.started) <= 0
}

func (b *budget) stop() {
	b.timer.Stop()
	b.unclosed()
	b.cancel(nil)
}

func parseTypes(vs []api.ValueType) []wasmparse.ValueType {
	out := make([]wasmparse.ValueType, len(vs))
	for i, v := range vs {
		out[i] = wasmparse.ValueType(v)
	}
	return out
}
