package host

import (
	"context"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/surface"
)

// Tool is a function the model may call. Calls and results are ordinary
// tool/call and tool/result events.
type Tool interface {
	// Schema is the tool's JSON schema object:
	// {"name": ..., "description": ..., "parameters": {...}}.
	Schema() jsontext.Value
	Name() string
	// Run executes one call with the raw JSON arguments the model produced.
	// A returned error becomes an error result the model sees. ctx ends at
	// the call's timeout (Config.ToolTimeout) or when the turn is
	// cancelled; Run should return promptly then. One that does not is
	// abandoned by the loop: it keeps running in its goroutine, and what it
	// returns is dropped. Run may therefore run concurrently with later
	// calls and must not rely on the loop waiting for it. ToolCallID(ctx)
	// is the call's id (the callId of its tool/call event).
	Run(ctx context.Context, arguments string) ([]surface.Block, error)
}

// FuncTool adapts a function to Tool.
type FuncTool struct {
	ToolName    string
	Description string
	Parameters  jsontext.Value // JSON schema of the arguments
	Fn          func(ctx context.Context, arguments string) (string, error)
}

// Name is the tool's name.
func (t *FuncTool) Name() string { return t.ToolName }

// Schema is the tool's schema object.
func (t *FuncTool) Schema() jsontext.Value {
	params := t.Parameters
	if len(params) == 0 {
		params = jsontext.Value(`{"type":"object","properties":{}}`)
	}
	b, err := surface.Data(struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  jsontext.Value `json:"parameters"`
	}{t.ToolName, t.Description, params})
	if err != nil {
		panic(fmt.Sprintf("tool %q: invalid parameters schema: %v", t.ToolName, err))
	}
	return b
}

// Run calls Fn and wraps its text.
func (t *FuncTool) Run(ctx context.Context, arguments string) ([]surface.Block, error) {
	out, err := t.Fn(ctx, arguments)
	if err != nil {
		return nil, err
	}
	return []surface.Block{surface.Text(out)}, nil
}
