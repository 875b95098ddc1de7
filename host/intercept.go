package host

import (
	"context"
	"errors"

	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// ModelCall performs one model call: the next interceptor in the chain, or
// at its end the configured model (Config.Model's Stream).
type ModelCall func(ctx context.Context, req *llm.Request, on func(llm.Delta)) (*llm.Result, error)

// ModelInterceptor wraps the model call of an attempt (Config.ModelInterceptors).
// It may observe the call (time it, trace it), call next, or return a
// result of its own without calling next (a cache). The request is a pure
// function of the log: an interceptor must neither change req nor pass
// next a different request; one that does fails the step exactly like a
// model that modified its request. What the chain returns is recorded as
// the model's result would be: a result is settled as assistant/message
// (or assistant/attempt on failure), an error goes through the
// agent/request-error waterfall (retries, overflow recovery).
type ModelInterceptor func(ctx context.Context, req *llm.Request, on func(llm.Delta), next ModelCall) (*llm.Result, error)

// ToolCall is one tool call the model made, as a tool interceptor sees it.
type ToolCall struct {
	// ID is the call id the model gave (the tool/call event's callId).
	ID        string
	Name      string
	Arguments string // the raw JSON arguments
}

// ToolRun runs one tool call: the next interceptor in the chain, or at its
// end the tool's Run.
type ToolRun func(ctx context.Context, call ToolCall) ([]surface.Block, error)

// ToolInterceptor wraps each call of an offered tool (Config.ToolInterceptors).
// It may observe the call, call next, or return without calling next: a
// result of its own (a cache) or an error (an approval gate refusing the
// call). An error becomes an error result the model sees, with code
// TOOL_ERROR, or the error's own code when it is a *ToolRefusal. The
// call's timeout (Config.ToolTimeout) bounds the whole chain, interceptors
// included. A call to a tool that is not offered is answered TOOL_NOT_FOUND
// without running the interceptors.
type ToolInterceptor func(ctx context.Context, call ToolCall, next ToolRun) ([]surface.Block, error)

// ToolRefusal is an error a tool interceptor (or a tool) returns to have the
// call recorded with a code of its own rather than TOOL_ERROR.
type ToolRefusal struct {
	Code   string // e.g. "TOOL_DENIED"
	Reason string // the text the model sees
}

func (e *ToolRefusal) Error() string { return e.Reason }

type toolCallIDKey struct{}

// ToolCallID returns the call id of the tool call ctx belongs to: the
// context a Tool's Run and the tool interceptors receive carries it. It is
// "" for any other context.
func ToolCallID(ctx context.Context) string {
	id, _ := ctx.Value(toolCallIDKey{}).(string)
	return id
}

// errRequestModified fails a step whose request changed during dispatch.
var errRequestModified = errors.New("the request was modified during dispatch; requests are immutable")

// modelChain composes the model interceptors around the model, the first
// in the slice outermost. With interceptors, the innermost call checks that
// the request it is handed is still the one the log implies (sent); one
// that differs is not dispatched and sets *modified.
func (a *Agent) modelChain(sent *sentRequest, modified *bool) ModelCall {
	call := ModelCall(a.cfg.Model.Stream)
	if len(a.cfg.ModelInterceptors) == 0 {
		return call
	}
	model := call
	call = func(ctx context.Context, req *llm.Request, on func(llm.Delta)) (*llm.Result, error) {
		if !sent.unchanged(req) {
			*modified = true
			return nil, errRequestModified
		}
		return model(ctx, req, on)
	}
	for i := len(a.cfg.ModelInterceptors) - 1; i >= 0; i-- {
		ic, next := a.cfg.ModelInterceptors[i], call
		call = func(ctx context.Context, req *llm.Request, on func(llm.Delta)) (*llm.Result, error) {
			return ic(ctx, req, on, next)
		}
	}
	return call
}

// toolChain composes the tool interceptors around t, the first in the slice
// outermost.
func (a *Agent) toolChain(t Tool) ToolRun {
	run := ToolRun(func(ctx context.Context, c ToolCall) ([]surface.Block, error) { return t.Run(ctx, c.Arguments) })
	for i := len(a.cfg.ToolInterceptors) - 1; i >= 0; i-- {
		ic, next := a.cfg.ToolInterceptors[i], run
		run = func(ctx context.Context, c ToolCall) ([]surface.Block, error) { return ic(ctx, c, next) }
	}
	return run
}
