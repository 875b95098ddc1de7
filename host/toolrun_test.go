package host

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

// blockingTool blocks until the test ends, ignoring its context: the loop
// must give up on it by itself.
func blockingTool(t *testing.T, name string, started chan<- struct{}) *FuncTool {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return &FuncTool{ToolName: name, Fn: func(context.Context, string) (string, error) {
		if started != nil {
			started <- struct{}{}
		}
		<-release
		return "too late", nil
	}}
}

// politeTool waits for its context and returns its error.
var politeTool = &FuncTool{ToolName: "polite", Fn: func(ctx context.Context, _ string) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}}

func toolResults(t *testing.T, evs []surface.Event) []surface.StepMessage {
	var out []surface.StepMessage
	for _, e := range evs {
		if e.Type == surface.TypeToolResult {
			var m surface.StepMessage
			require.NoError(t, json.Unmarshal(e.Data, &m))
			out = append(out, m)
		}
	}
	return out
}

// within fails the test, rather than hanging it, when fn does not return.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return", what)
	}
}

func TestToolTimeoutStopsACall(t *testing.T) {
	cases := []struct {
		name     string
		tool     func(t *testing.T) Tool
		timeout  time.Duration
		per      map[string]time.Duration
		code     string
		contains []string
		text     string
	}{
		{name: "a tool ignoring its context is abandoned", tool: func(t *testing.T) Tool { return blockingTool(t, "slow", nil) },
			timeout: 20 * time.Millisecond, code: CodeToolTimeout,
			contains: []string{"timeout of 20ms (tools.timeout)", "abandoned while still running", "outcome is unknown"}},
		{name: "a per-tool override wins", tool: func(t *testing.T) Tool { return blockingTool(t, "slow", nil) },
			timeout: time.Hour, per: map[string]time.Duration{"slow": 20 * time.Millisecond}, code: CodeToolTimeout,
			contains: []string{"timeout of 20ms (tools.timeouts.slow)"}},
		{name: "a tool honouring its context is stopped", tool: func(*testing.T) Tool { return politeTool },
			timeout: 20 * time.Millisecond, code: CodeToolTimeout,
			contains: []string{"timeout of 20ms (tools.timeout) and was stopped"}},
		{name: "a call within its timeout succeeds", tool: func(*testing.T) Tool { return echoTool },
			timeout: 20 * time.Millisecond, text: `echo {"x":1}`},
		{name: "an error is a tool error", tool: func(*testing.T) Tool {
			return &FuncTool{ToolName: "bad", Fn: func(context.Context, string) (string, error) { return "", context.DeadlineExceeded }}
		}, code: CodeToolError, contains: []string{"context deadline exceeded"}},
		{name: "a panic is a tool error", tool: func(*testing.T) Tool {
			return &FuncTool{ToolName: "boom", Fn: func(context.Context, string) (string, error) { panic("kaboom") }}
		}, code: CodeToolError, contains: []string{`tool "boom" panicked: kaboom`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tl := c.tool(t)
			h := newHarness(t, "sys", func(cfg *Config) {
				cfg.Tools = []Tool{tl}
				cfg.ToolTimeout, cfg.ToolTimeouts = c.timeout, c.per
			})
			h.model.then(callTool("c1", tl.Name(), `{"x":1}`), reply("done"))
			var res *TurnResult
			within(t, "the turn", func() { res = h.turn("go") })
			require.Equal(t, surface.EndCompleted, res.Reason.Kind, "the loop moves on after the call")
			rs := toolResults(t, h.s.Log().Events())
			require.Len(t, rs, 1)
			got := surface.TextOf(rs[0].Message.Content[0].Content)
			if c.code == "" {
				require.Nil(t, rs[0].Error)
				require.Equal(t, c.text, got)
				return
			}
			require.NotNil(t, rs[0].Error)
			require.Equal(t, c.code, rs[0].Error.Code)
			require.Equal(t, tl.Name(), rs[0].Error.Name)
			for _, s := range c.contains {
				require.Contains(t, got, s)
			}
			require.Len(t, h.model.reqs, 2, "the model saw the error result")
		})
	}
}

func TestCancelWhileAToolBlocksEndsTheTurnAndResumes(t *testing.T) {
	for _, tc := range []struct {
		name string
		tool func(t *testing.T, started chan struct{}) Tool
		how  string
	}{
		{"a tool ignoring its context", func(t *testing.T, started chan struct{}) Tool {
			return blockingTool(t, "slow", started)
		}, "abandoned while still running"},
		{"a tool honouring its context", func(t *testing.T, started chan struct{}) Tool {
			return &FuncTool{ToolName: "slow", Fn: func(ctx context.Context, _ string) (string, error) {
				started <- struct{}{}
				<-ctx.Done()
				return "", ctx.Err()
			}}
		}, "was stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			s, err := OpenFile(path)
			require.NoError(t, err)
			started := make(chan struct{}, 1)
			model := (&funcModel{}).then(func(*llm.Request) (*llm.Result, error) {
				return &llm.Result{Content: []surface.Block{
					surface.ToolCall("c1", "slow", `{}`), surface.ToolCall("c2", "slow", `{}`),
				}, FinishReason: llm.FinishToolCalls}, nil
			})
			cfg := Config{Route: Route{Provider: "test", Model: "m1", ContextWindow: 1000}, Model: model,
				Tools: []Tool{tc.tool(t, started)}, ToolTimeout: time.Hour}
			a, err := NewAgent(s, cfg)
			require.NoError(t, err)

			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				<-started
				cancel()
			}()
			var res *TurnResult
			within(t, "the cancelled turn", func() {
				res, err = a.Run(ctx, a.UserMessage("go"))
			})
			require.NoError(t, err)
			require.Equal(t, surface.EndAborted, res.Reason.Kind)

			evs := s.Log().Events()
			var callSeq int64 = -1
			for _, e := range evs {
				if e.Type == surface.TypeToolCall {
					callSeq = e.Seq
				}
			}
			rs := toolResults(t, evs)
			require.Len(t, rs, 2)
			require.Equal(t, surface.CodeToolOutcomeUnknown, rs[0].Error.Code, "the running call's outcome is unknown")
			require.Contains(t, rs[0].Error.Reason, tc.how)
			require.Equal(t, surface.CodeToolNotStarted, rs[1].Error.Code, "the second call never started")
			for _, e := range evs {
				if e.Type == surface.TypeToolResult && e.Seq > callSeq {
					require.Equal(t, []int64{callSeq}, e.Sources, "the unknown outcome cites its tool/call")
					break
				}
			}
			require.Equal(t, surface.TypeTurnEnd, evs[len(evs)-1].Type)
			require.NoError(t, s.Close())

			// The stored log is valid, and a new loop resumes it: repair has
			// nothing to close and the next turn runs.
			ld, err := jsonl.Load(path)
			require.NoError(t, err)
			require.Equal(t, len(evs), ld.Log.Len())
			s, err = OpenFile(path)
			require.NoError(t, err)
			defer s.Close()
			model.then(reply("resumed"))
			before := s.Log().Len()
			a, err = NewAgent(s, cfg)
			require.NoError(t, err)
			require.Equal(t, before, s.Log().Len(), "the aborted turn is closed: repair appends nothing")
			res, err = a.Run(context.Background(), a.UserMessage("again"))
			require.NoError(t, err)
			require.Equal(t, surface.EndCompleted, res.Reason.Kind)
			var answered []string
			for _, m := range model.reqs[len(model.reqs)-1].Messages {
				for _, b := range m.Content {
					if b.Type == surface.BlockToolResult {
						answered = append(answered, b.ToolCallID)
					}
				}
			}
			require.Equal(t, []string{"c1", "c2"}, answered, "the next request carries both results")
		})
	}
}
