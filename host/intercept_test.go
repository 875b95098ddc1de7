package host

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// callTools replies with the given tool calls (id, name, arguments triples).
func callTools(calls ...[3]string) func(*llm.Request) (*llm.Result, error) {
	return func(*llm.Request) (*llm.Result, error) {
		var content []surface.Block
		for _, c := range calls {
			content = append(content, surface.ToolCall(c[0], c[1], c[2]))
		}
		return &llm.Result{Content: content, FinishReason: llm.FinishToolCalls}, nil
	}
}

// idTool returns its call id (from the context) and its arguments.
func idTool(name string) *FuncTool {
	return &FuncTool{ToolName: name, Fn: func(ctx context.Context, args string) (string, error) {
		return ToolCallID(ctx) + ":" + args, nil
	}}
}

func TestInterceptorOrder(t *testing.T) {
	cases := []struct {
		name  string
		model []string // labels of the model interceptors, in the slice's order
		tool  []string
		want  []string
	}{
		{name: "none", want: []string{"model", "tool", "model"}},
		{name: "one of each", model: []string{"m"}, tool: []string{"t"},
			want: []string{"m>", "model", "<m", "t>", "tool", "<t", "m>", "model", "<m"}},
		{name: "first in the slice is outermost", model: []string{"a", "b"}, tool: []string{"x", "y", "z"},
			want: []string{"a>", "b>", "model", "<b", "<a", "x>", "y>", "z>", "tool", "<z", "<y", "<x", "a>", "b>", "model", "<b", "<a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var trace []string
			tool := &FuncTool{ToolName: "echo", Fn: func(context.Context, string) (string, error) {
				trace = append(trace, "tool")
				return "ok", nil
			}}
			h := newHarness(t, "sys", func(c *Config) {
				c.Tools = []Tool{tool}
				for _, l := range tc.model {
					c.ModelInterceptors = append(c.ModelInterceptors, func(ctx context.Context, req *llm.Request, on func(llm.Delta), next ModelCall) (*llm.Result, error) {
						trace = append(trace, l+">")
						defer func() { trace = append(trace, "<"+l) }()
						return next(ctx, req, on)
					})
				}
				for _, l := range tc.tool {
					c.ToolInterceptors = append(c.ToolInterceptors, func(ctx context.Context, call ToolCall, next ToolRun) ([]surface.Block, error) {
						trace = append(trace, l+">")
						defer func() { trace = append(trace, "<"+l) }()
						return next(ctx, call)
					})
				}
			})
			h.model.then(func(req *llm.Request) (*llm.Result, error) {
				trace = append(trace, "model")
				return callTool("c1", "echo", `{}`)(req)
			}, func(req *llm.Request) (*llm.Result, error) {
				trace = append(trace, "model")
				return text("done"), nil
			})
			res := h.turn("go")
			require.Equal(t, surface.EndCompleted, res.Reason.Kind)
			require.Equal(t, tc.want, trace)
			h.checkReconstruction()
		})
	}
}

// A caching model interceptor answers the second request without calling
// the model: the answer is recorded exactly as a model's, and every
// request, cached or not, rebuilds from the log byte for byte.
func TestModelInterceptorShortCircuit(t *testing.T) {
	cached := &llm.Result{Content: []surface.Block{surface.Text("from the cache")}, FinishReason: llm.FinishStop,
		Usage: &surface.Usage{Input: 7, Output: 3}, Stream: []byte(`{"cached":true}`)}
	var seen [][]byte // the bodies of every request the chain received
	calls := 0
	h := newHarness(t, "sys", func(c *Config) {
		c.ModelInterceptors = []ModelInterceptor{func(ctx context.Context, req *llm.Request, on func(llm.Delta), next ModelCall) (*llm.Result, error) {
			body, err := llm.EncodeRequest(req)
			require.NoError(t, err)
			seen = append(seen, body)
			calls++
			if calls == 2 {
				return cached, nil
			}
			return next(ctx, req, on)
		}}
	})
	h.model.then(reply("from the model"), reply("again from the model"))
	require.Equal(t, surface.EndCompleted, h.turn("one").Reason.Kind)
	require.Equal(t, surface.EndCompleted, h.turn("two").Reason.Kind)
	require.Equal(t, surface.EndCompleted, h.turn("three").Reason.Kind)
	require.Len(t, h.model.bodies, 2, "the cached request never reached the model")

	msgs := h.events(surface.TypeAssistantMessage)
	require.Len(t, msgs, 3)
	var m surface.StepMessage
	require.NoError(t, json.Unmarshal(msgs[1].Data, &m))
	require.Equal(t, "from the cache", surface.TextOf(m.Message.Content))
	require.Equal(t, &surface.Usage{Input: 7, Output: 3}, m.Usage)
	require.JSONEq(t, `{"cached":true}`, string(m.Stream))
	require.Equal(t, surface.Source{Kind: "model", Provider: "test", Model: "m1"}, m.Message.Source)

	for i, e := range msgs {
		req, err := RequestAt(h.s.Log().Events(), e.Seq, h.s.ID())
		require.NoError(t, err)
		body, err := llm.EncodeRequest(req)
		require.NoError(t, err)
		require.Equal(t, string(seen[i]), string(body), "request %d", i)
	}
}

// An interceptor may not change the request the log implies, whether it
// changes it in place or hands the model another one: the step fails like
// one whose model modified its request, and the changed request never
// reaches the model.
func TestMutatingModelInterceptorFailsTheStep(t *testing.T) {
	cases := []struct {
		name string
		ic   ModelInterceptor
	}{
		{name: "changes the request in place",
			ic: func(ctx context.Context, req *llm.Request, on func(llm.Delta), next ModelCall) (*llm.Result, error) {
				req.Config.Model = "other"
				return next(ctx, req, on)
			}},
		{name: "hands the model another request",
			ic: func(ctx context.Context, req *llm.Request, on func(llm.Delta), next ModelCall) (*llm.Result, error) {
				other := *req
				other.Messages = append(other.Messages[:len(other.Messages):len(other.Messages)], &surface.Message{ID: "x", Role: surface.RoleUser,
					Content: []surface.Block{surface.Text("injected")}})
				return next(ctx, &other, on)
			}},
		{name: "changes the request and answers itself",
			ic: func(ctx context.Context, req *llm.Request, on func(llm.Delta), next ModelCall) (*llm.Result, error) {
				req.Messages = req.Messages[1:]
				return text("cached"), nil
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "sys", func(c *Config) { c.ModelInterceptors = []ModelInterceptor{tc.ic} })
			res := h.turn("hi")
			require.Equal(t, surface.EndError, res.Reason.Kind)
			require.Contains(t, res.Reason.Error.Message, "modified during dispatch")
			require.Empty(t, h.events(surface.TypeAssistantMessage), "nothing settled as a message")
			require.Len(t, h.events(surface.TypeAssistantAttempt), 1)
			require.Empty(t, h.model.bodies, "a changed request is not dispatched")
		})
	}
}

// An approval gate refuses calls: the tool does not run and the refusal is
// recorded as the call's error result.
func TestToolInterceptorRefusesACall(t *testing.T) {
	cases := []struct {
		name     string
		refuse   error
		code     string
		text     string
		ranTools []string
	}{
		{name: "a refusal with its own code", refuse: &ToolRefusal{Code: "TOOL_DENIED", Reason: "not approved: delete"},
			code: "TOOL_DENIED", text: "not approved: delete", ranTools: []string{"read"}},
		{name: "a plain error", refuse: errors.New("approval service down"),
			code: CodeToolError, text: "approval service down", ranTools: []string{"read"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			mk := func(name string) Tool {
				return &FuncTool{ToolName: name, Fn: func(context.Context, string) (string, error) {
					ran = append(ran, name)
					return name + " done", nil
				}}
			}
			h := newHarness(t, "sys", func(c *Config) {
				c.Tools = []Tool{mk("read"), mk("delete")}
				c.ToolInterceptors = []ToolInterceptor{func(ctx context.Context, call ToolCall, next ToolRun) ([]surface.Block, error) {
					if call.Name == "delete" {
						return nil, tc.refuse
					}
					return next(ctx, call)
				}}
			})
			h.model.then(callTools([3]string{"c1", "delete", `{}`}, [3]string{"c2", "read", `{}`}), reply("ok"))
			require.Equal(t, surface.EndCompleted, h.turn("go").Reason.Kind)
			require.Equal(t, tc.ranTools, ran)
			rs := toolResults(t, h.s.Log().Events())
			require.Len(t, rs, 2)
			require.NotNil(t, rs[0].Error)
			require.Equal(t, surface.ToolError{Name: "delete", Code: tc.code, Reason: tc.text}, *rs[0].Error)
			require.Equal(t, "c1", rs[0].Message.Source.CallID)
			require.True(t, rs[0].Message.Content[0].IsError)
			require.Nil(t, rs[1].Error)
			require.Equal(t, "read done", surface.TextOf(rs[1].Message.Content[0].Content))
			h.checkReconstruction()
		})
	}
}

// Tools get their call id from the context; interceptors get it in the
// ToolCall, and a short-circuited result is recorded like the tool's.
func TestToolCallIDs(t *testing.T) {
	var seen []ToolCall
	h := newHarness(t, "sys", func(c *Config) {
		c.Tools = []Tool{idTool("echo")}
		c.ToolInterceptors = []ToolInterceptor{func(ctx context.Context, call ToolCall, next ToolRun) ([]surface.Block, error) {
			require.Equal(t, call.ID, ToolCallID(ctx))
			seen = append(seen, call)
			if call.Arguments == `"cached"` {
				return []surface.Block{surface.Text("cached result")}, nil
			}
			return next(ctx, call)
		}}
	})
	require.Empty(t, ToolCallID(context.Background()))
	h.model.then(callTools([3]string{"call-a", "echo", `1`}, [3]string{"call-b", "echo", `"cached"`}, [3]string{"call-c", "echo", `3`}), reply("ok"))
	require.Equal(t, surface.EndCompleted, h.turn("go").Reason.Kind)
	require.Equal(t, []ToolCall{{"call-a", "echo", `1`}, {"call-b", "echo", `"cached"`}, {"call-c", "echo", `3`}}, seen)
	var texts []string
	for _, r := range toolResults(t, h.s.Log().Events()) {
		texts = append(texts, surface.TextOf(r.Message.Content[0].Content))
	}
	require.Equal(t, []string{"call-a:1", "cached result", "call-c:3"}, texts)
}

// The call's timeout bounds the interceptors too: one that blocks past it,
// ignoring its context, is abandoned like a slow tool.
func TestToolTimeoutBoundsInterceptors(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	h := newHarness(t, "sys", func(c *Config) {
		c.Tools = []Tool{idTool("echo")}
		c.ToolTimeout = 20 * time.Millisecond
		c.ToolInterceptors = []ToolInterceptor{func(ctx context.Context, call ToolCall, next ToolRun) ([]surface.Block, error) {
			<-release // an approval that never comes
			return next(ctx, call)
		}}
	})
	h.model.then(callTool("c1", "echo", `{}`), reply("ok"))
	within(t, "the turn", func() { h.turn("go") })
	rs := toolResults(t, h.s.Log().Events())
	require.Len(t, rs, 1)
	require.NotNil(t, rs[0].Error)
	require.Equal(t, CodeToolTimeout, rs[0].Error.Code)
}

// With ParallelTools the calls run side by side, and the log does not
// depend on the order they finish in: every tool/call first, in call
// order, then the tool/results in call order.
func TestParallelToolsCommitInCallOrder(t *testing.T) {
	cases := []struct {
		name     string
		parallel int
		calls    int
	}{
		{name: "as many slots as calls", parallel: 3, calls: 3},
		{name: "more slots than calls", parallel: 8, calls: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Call i returns only after call i+1 has returned: they finish in
			// reverse order, which needs them all running at once.
			finished := make([]chan struct{}, tc.calls+1)
			for i := range finished {
				finished[i] = make(chan struct{})
			}
			close(finished[tc.calls])
			var mu sync.Mutex
			var order []string
			tool := &FuncTool{ToolName: "step", Fn: func(ctx context.Context, args string) (string, error) {
				var i int
				if _, err := fmt.Sscan(args, &i); err != nil {
					return "", err
				}
				<-finished[i+1]
				mu.Lock()
				order = append(order, ToolCallID(ctx))
				mu.Unlock()
				close(finished[i])
				return fmt.Sprint("result ", i), nil
			}}
			h := newHarness(t, "sys", func(c *Config) {
				c.Tools = []Tool{tool}
				c.ParallelTools = tc.parallel
			})
			var calls [][3]string
			var ids, wantOrder, wantTexts []string
			for i := range tc.calls {
				id := fmt.Sprint("c", i)
				calls = append(calls, [3]string{id, "step", fmt.Sprint(i)})
				ids = append(ids, id)
				wantOrder = append([]string{id}, wantOrder...)
				wantTexts = append(wantTexts, fmt.Sprint("result ", i))
			}
			h.model.then(callTools(calls...), reply("ok"))
			within(t, "the turn", func() { require.Equal(t, surface.EndCompleted, h.turn("go").Reason.Kind) })
			require.Equal(t, wantOrder, order, "the calls finished in reverse order")

			var types, callIDs, resultIDs, texts []string
			for _, e := range h.s.Log().Events() {
				switch e.Type {
				case surface.TypeToolCall:
					var d ToolCallData
					require.NoError(t, json.Unmarshal(e.Data, &d))
					callIDs = append(callIDs, d.CallID)
					types = append(types, "call")
				case surface.TypeToolResult:
					var m surface.StepMessage
					require.NoError(t, json.Unmarshal(e.Data, &m))
					resultIDs = append(resultIDs, m.Message.Source.CallID)
					texts = append(texts, surface.TextOf(m.Message.Content[0].Content))
					types = append(types, "result")
				}
			}
			var wantTypes []string
			for range tc.calls {
				wantTypes = append(wantTypes, "call")
			}
			for range tc.calls {
				wantTypes = append(wantTypes, "result")
			}
			require.Equal(t, wantTypes, types)
			require.Equal(t, ids, callIDs)
			require.Equal(t, ids, resultIDs)
			require.Equal(t, wantTexts, texts)
			h.checkReconstruction()
		})
	}
}

// ParallelTools bounds the calls running at once.
func TestParallelToolsBound(t *testing.T) {
	var mu sync.Mutex
	active, most := 0, 0
	tool := &FuncTool{ToolName: "work", Fn: func(context.Context, string) (string, error) {
		mu.Lock()
		active++
		most = max(most, active)
		mu.Unlock()
		runtime.Gosched()
		mu.Lock()
		active--
		mu.Unlock()
		return "ok", nil
	}}
	h := newHarness(t, "sys", func(c *Config) {
		c.Tools = []Tool{tool}
		c.ParallelTools = 2
	})
	var calls [][3]string
	for i := range 6 {
		calls = append(calls, [3]string{fmt.Sprint("c", i), "work", `{}`})
	}
	h.model.then(callTools(calls...), reply("ok"))
	require.Equal(t, surface.EndCompleted, h.turn("go").Reason.Kind)
	require.LessOrEqual(t, most, 2)
	require.Len(t, toolResults(t, h.s.Log().Events()), 6)
}

// Cancellation and timeouts behave as with sequential calls: running calls
// end outcome-unknown, calls that had not started end not-started, a call
// past its timeout ends TOOL_TIMEOUT, and the others are unaffected.
func TestParallelToolsCancellationAndTimeout(t *testing.T) {
	t.Run("cancellation", func(t *testing.T) {
		started := make(chan struct{}, 2)
		tool := &FuncTool{ToolName: "wait", Fn: func(ctx context.Context, _ string) (string, error) {
			started <- struct{}{}
			<-ctx.Done()
			return "", ctx.Err()
		}}
		h := newHarness(t, "sys", func(c *Config) {
			c.Tools = []Tool{tool}
			c.ParallelTools = 2
		})
		h.model.then(callTools([3]string{"c1", "wait", `{}`}, [3]string{"c2", "wait", `{}`}, [3]string{"c3", "wait", `{}`}))
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-started
			<-started
			cancel()
		}()
		var res *TurnResult
		within(t, "the turn", func() {
			var err error
			res, err = h.a.Run(ctx, h.a.UserMessage("go"))
			require.NoError(t, err)
		})
		require.Equal(t, surface.EndAborted, res.Reason.Kind)
		var codes []string
		for _, r := range toolResults(t, h.s.Log().Events()) {
			codes = append(codes, r.Message.Source.CallID+" "+r.Error.Code)
		}
		require.Equal(t, []string{"c1 " + surface.CodeToolOutcomeUnknown, "c2 " + surface.CodeToolOutcomeUnknown, "c3 " + surface.CodeToolNotStarted}, codes)
	})
	t.Run("timeout", func(t *testing.T) {
		h := newHarness(t, "sys", func(c *Config) {
			c.Tools = []Tool{blockingTool(t, "slow", nil), idTool("fast")}
			c.ParallelTools = 2
			c.ToolTimeouts = map[string]time.Duration{"slow": 20 * time.Millisecond}
		})
		h.model.then(callTools([3]string{"c1", "slow", `{}`}, [3]string{"c2", "fast", `{}`}), reply("ok"))
		within(t, "the turn", func() { require.Equal(t, surface.EndCompleted, h.turn("go").Reason.Kind) })
		rs := toolResults(t, h.s.Log().Events())
		require.Len(t, rs, 2)
		require.Equal(t, CodeToolTimeout, rs[0].Error.Code)
		require.Nil(t, rs[1].Error)
		require.Equal(t, "c2:{}", surface.TextOf(rs[1].Message.Content[0].Content))
	})
}
