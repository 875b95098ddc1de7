package host

import (
	"context"
	"fmt"

	"github.com/weirhost/weir/surface"
)

type toolCallData struct {
	Turn      int64  `json:"turn"`
	Step      int64  `json:"step"`
	CallID    string `json:"callId"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// runTools runs the step's tool calls in model order, appending tool/call
// and its tool/result for each. Cancellation records not-started results
// for the calls that never ran and ends the turn aborted.
func (a *Agent) runTools(ctx context.Context, turn, step int64, calls []surface.Block) (*surface.EndReason, error) {
	for i, c := range calls {
		if ctx.Err() != nil {
			for _, rest := range calls[i:] {
				if err := a.toolResult(turn, step, rest, nil, &surface.ToolError{Name: rest.Name, Code: surface.CodeToolNotStarted,
					Reason: "the turn was cancelled before this call started"}, nil); err != nil {
					return nil, err
				}
			}
			return aborted(ctx), nil
		}
		ev, err := a.s.append(surface.TypeToolCall, toolCallData{turn, step, c.ID, c.Name, c.Arguments}, surface.Op{}, nil)
		if err != nil {
			return nil, err
		}
		// The call is durable before the tool runs: crash repair then knows
		// its outcome is unknown rather than not started.
		if err := a.s.Flush(); err != nil {
			return nil, err
		}
		var out []surface.Block
		var terr *surface.ToolError
		if t, ok := a.toolsBy[c.Name]; !ok {
			terr = &surface.ToolError{Name: c.Name, Code: "TOOL_NOT_FOUND", Reason: fmt.Sprintf("no tool named %q is available", c.Name)}
		} else if out, err = runTool(ctx, t, c.Arguments); err != nil {
			terr = &surface.ToolError{Name: c.Name, Code: "TOOL_ERROR", Reason: err.Error()}
		}
		if err := a.toolResult(turn, step, c, out, terr, []int64{ev.Seq}); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// runTool runs one call, turning a panic into an error result.
func runTool(ctx context.Context, t Tool, args string) (out []surface.Block, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tool %q panicked: %v", t.Name(), r)
		}
	}()
	return t.Run(ctx, args)
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
