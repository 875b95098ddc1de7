package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirhost/weir/surface"
)

// DefaultToolTimeout bounds a tool call when Config.ToolTimeout is 0.
const DefaultToolTimeout = 60 * time.Second

// Tool error codes the loop records besides the crash-repair ones.
const (
	// CodeToolNotFound: the model called a tool that is not offered.
	CodeToolNotFound = "TOOL_NOT_FOUND"
	// CodeToolError: the tool returned an error (or panicked).
	CodeToolError = "TOOL_ERROR"
	// CodeToolTimeout: the call ran past its timeout and was stopped or
	// abandoned; its outcome is unknown.
	CodeToolTimeout = "TOOL_TIMEOUT"
)

// toolGrace is how long a call past its deadline, or cancelled, may still
// take to return before the loop abandons it: long enough for a tool that
// honours its context to wind down (so that it does not overlap the next
// call), short enough that an interrupt ends the turn promptly.
var toolGrace = 200 * time.Millisecond

// runTools runs the step's tool calls in model order, appending tool/call
// and its tool/result for each. A call runs under its timeout (see
// Config.ToolTimeout). Cancellation while a call runs records that call's
// outcome as unknown (its tool/call is durable, as crash repair would
// find it), then not-started results for the calls that never ran, and
// ends the turn aborted.
func (a *Agent) runTools(ctx context.Context, turn, step int64, calls []surface.Block) (*surface.EndReason, error) {
	if a.cfg.ParallelTools > 1 && len(calls) > 1 {
		return a.runToolsParallel(ctx, turn, step, calls)
	}
	for i, c := range calls {
		if ctx.Err() != nil {
			for _, rest := range calls[i:] {
				if err := a.toolResult(turn, step, rest, nil, notStarted(rest), nil); err != nil {
					return nil, err
				}
			}
			return aborted(ctx), nil
		}
		ev, err := a.s.append(surface.TypeToolCall, ToolCallData{turn, step, c.ID, c.Name, c.Arguments}, surface.Op{}, nil)
		if err != nil {
			return nil, err
		}
		// The call is durable before the tool runs: crash repair then knows
		// its outcome is unknown rather than not started.
		if err := a.s.Flush(); err != nil {
			return nil, err
		}
		out, terr := a.callTool(ctx, c)
		if err := a.toolResult(turn, step, c, out, terr, []int64{ev.Seq}); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// dispatchTool runs one call of the step's tools (or answers
// TOOL_NOT_FOUND); callTool traces it.
func (a *Agent) dispatchTool(ctx context.Context, c surface.Block) ([]surface.Block, *surface.ToolError) {
	t, ok := a.cur.toolsBy[c.Name]
	if !ok {
		return nil, &surface.ToolError{Name: c.Name, Code: CodeToolNotFound, Reason: fmt.Sprintf("no tool named %q is available", c.Name)}
	}
	return a.runTool(ctx, t, ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
}

// notStarted is the result of a call the turn's cancellation kept from
// starting.
func notStarted(c surface.Block) *surface.ToolError {
	return &surface.ToolError{Name: c.Name, Code: surface.CodeToolNotStarted,
		Reason: "the turn was cancelled before this call started; it had no effect and may be retried"}
}

// runToolsParallel runs the step's calls with up to Config.ParallelTools
// of them at a time, started in model order. The log stays deterministic:
// every tool/call is appended (and made durable) before the first call
// starts, then the tool/results in call order, each as soon as it and the
// calls before it are done, whatever order the calls finish in. Each call
// runs under its own timeout; cancellation records the running calls'
// outcomes as unknown and not-started results for the calls that had not
// started, and ends the turn aborted.
func (a *Agent) runToolsParallel(ctx context.Context, turn, step int64, calls []surface.Block) (*surface.EndReason, error) {
	if ctx.Err() != nil {
		for _, c := range calls {
			if err := a.toolResult(turn, step, c, nil, notStarted(c), nil); err != nil {
				return nil, err
			}
		}
		return aborted(ctx), nil
	}
	seqs := make([]int64, len(calls))
	for i, c := range calls {
		ev, err := a.s.append(surface.TypeToolCall, ToolCallData{turn, step, c.ID, c.Name, c.Arguments}, surface.Op{}, nil)
		if err != nil {
			return nil, err
		}
		seqs[i] = ev.Seq
	}
	if err := a.s.Flush(); err != nil {
		return nil, err
	}
	type outcome struct {
		out        []surface.Block
		terr       *surface.ToolError
		notStarted bool
	}
	results := make([]outcome, len(calls))
	done := make([]chan struct{}, len(calls))
	for i := range done {
		done[i] = make(chan struct{})
	}
	slots := make(chan struct{}, a.cfg.ParallelTools)
	go func() {
		for i, c := range calls {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				results[i] = outcome{terr: notStarted(c), notStarted: true}
				close(done[i])
				continue
			}
			go func() {
				defer func() {
					<-slots
					close(done[i])
				}()
				out, terr := a.callTool(ctx, c)
				results[i] = outcome{out: out, terr: terr}
			}()
		}
	}()
	cancelled := false
	for i, c := range calls {
		<-done[i]
		r := results[i]
		cancelled = cancelled || r.notStarted
		if err := a.toolResult(turn, step, c, r.out, r.terr, []int64{seqs[i]}); err != nil {
			// Wait for the calls still running: none outlives runTools
			// (beyond what runTool itself abandons).
			for _, d := range done[i+1:] {
				<-d
			}
			return nil, err
		}
	}
	if cancelled {
		return aborted(ctx), nil
	}
	return nil, nil
}

// toolTimeout is the timeout of the named tool and the key that sets it.
func (a *Agent) toolTimeout(name string) (time.Duration, string) {
	if d, ok := a.cfg.ToolTimeouts[name]; ok {
		return d, "tools.timeouts." + name
	}
	return a.cfg.ToolTimeout, "tools.timeout"
}

var errToolTimeout = errors.New("tool timeout")

type toolRun struct {
	out []surface.Block
	err error
}

// runTool runs one call under its timeout, turning a panic into an error
// result. The tool runs in its own goroutine so that the loop can give up
// on one that ignores its context: past the deadline or on cancellation
// it waits toolGrace for the tool to return, then abandons it.
func (a *Agent) runTool(ctx context.Context, t Tool, call ToolCall) ([]surface.Block, *surface.ToolError) {
	limit, key := a.toolTimeout(t.Name())
	rctx, cancel := ctx, context.CancelFunc(func() {})
	if limit > 0 {
		rctx, cancel = context.WithTimeoutCause(ctx, limit, errToolTimeout)
	}
	defer cancel()
	rctx = context.WithValue(rctx, toolCallIDKey{}, call.ID)
	run := a.toolChain(t)
	done := make(chan toolRun, 1)
	go func() {
		var r toolRun
		defer func() {
			if p := recover(); p != nil {
				r = toolRun{err: fmt.Errorf("tool %q panicked: %v", t.Name(), p)}
			}
			done <- r
		}()
		r.out, r.err = run(rctx, call)
	}()
	var r toolRun
	finished := true
	select {
	case r = <-done:
	case <-rctx.Done():
		grace := time.NewTimer(toolGrace)
		select {
		case r = <-done:
		case <-grace.C:
			finished = false
		}
		grace.Stop()
	}
	if finished && r.err == nil {
		return r.out, nil // done, even if just past the deadline
	}
	stopped := "was stopped"
	if !finished {
		stopped = "was abandoned while still running"
	}
	switch {
	case ctx.Err() != nil:
		if !finished {
			a.log.Warn("tool call abandoned on cancellation", "tool", t.Name())
		}
		return nil, &surface.ToolError{Name: t.Name(), Code: surface.CodeToolOutcomeUnknown, Reason: fmt.Sprintf(
			"the turn was cancelled (%v) while this call was running, and the call %s; its outcome is unknown: retry only idempotent work, or verify first",
			context.Cause(ctx), stopped)}
	case finished && !errors.Is(context.Cause(rctx), errToolTimeout):
		var refusal *ToolRefusal
		if errors.As(r.err, &refusal) && refusal.Code != "" {
			return nil, &surface.ToolError{Name: t.Name(), Code: refusal.Code, Reason: refusal.Reason}
		}
		return nil, &surface.ToolError{Name: t.Name(), Code: CodeToolError, Reason: r.err.Error()}
	default:
		if !finished {
			a.log.Warn("tool call abandoned past its timeout", "tool", t.Name(), "timeout", limit, "key", key)
		}
		return nil, &surface.ToolError{Name: t.Name(), Code: CodeToolTimeout, Reason: fmt.Sprintf(
			"the call ran past its timeout of %s (%s) and %s; its outcome is unknown: retry only idempotent work, or verify first",
			limit, key, stopped)}
	}
}

func (a *Agent) toolResult(turn, step int64, call surface.Block, out []surface.Block, terr *surface.ToolError, sources []int64) error {
	if terr != nil {
		out = []surface.Block{surface.Text(terr.Reason)}
	}
	if out == nil {
		out = []surface.Block{}
	}
	msg := surface.Message{ID: a.s.newID(), Role: surface.RoleUser, Source: surface.Source{Kind: "tool", CallID: call.ID},
		Content: []surface.Block{surface.ToolResult(call.ID, terr != nil, out...)}}
	_, err := a.s.append(surface.TypeToolResult, surface.StepMessage{Turn: turn, Step: step, Message: msg, Error: terr}, surface.Append, sources)
	return err
}
