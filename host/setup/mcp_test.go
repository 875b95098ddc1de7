package setup_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/mcp/mcptest"
	"github.com/weirhost/weir/host/policy"
	"github.com/weirhost/weir/host/setup"
	"github.com/weirhost/weir/surface"
)

// mcpServer serves an MCP server over streamable HTTP on loopback, for
// requests that carry the bearer token.
func mcpServer(t *testing.T, token string) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ServerOptions{Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}}})
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)
	text := mcptest.Text
	srv.AddTool(&sdk.Tool{Name: "read", Description: "Read.", InputSchema: schema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("contents"), nil })
	srv.AddTool(&sdk.Tool{Name: "write", Description: "Write.", InputSchema: schema},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("written"), nil })
	srv.AddTool(&sdk.Tool{Name: "erase", Description: "Erase.", InputSchema: schema},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("erased"), nil })
	srv.AddTool(&sdk.Tool{Name: "grow", Description: "Add a tool.", InputSchema: schema},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			srv.AddTool(&sdk.Tool{Name: "late", Description: "Added later.", InputSchema: schema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
				func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					return text("late result"), nil
				})
			return text("grown"), nil
		})
	return mcptest.ServeHTTP(t, srv, token)
}

// A configured MCP server's tools are offered and called through a real
// agent, under the permission policy; a list change mid-session is a
// logged header change whose requests rebuild byte for byte; the header's
// secret is in neither the session log nor the host log.
func TestMCPAgent(t *testing.T) {
	ctx := context.Background()
	const secret = "mcp-secret-token"
	cfg := config.Default()
	for i := range cfg.Plugins {
		cfg.Plugins[i].Enabled = false
	}
	cfg.MCP.Servers["srv"] = &config.MCPServer{URL: mcpServer(t, secret), Headers: map[string]string{"Authorization": "Bearer ${SRV_TOKEN}"},
		Timeout: 10 * time.Second, MaxResultKiB: 256, Failures: 3}
	cfg.Tools.Policy = map[string]string{"srv__erase": "deny"}

	script, err := llm.ParseScript([]byte(`{"replies": [
	  {"toolCalls": [{"id": "c1", "name": "srv__read", "arguments": {"path": "a"}},
	                 {"id": "c2", "name": "srv__write", "arguments": {"path": "a"}},
	                 {"id": "c3", "name": "srv__erase", "arguments": {"path": "a"}},
	                 {"id": "c4", "name": "srv__grow", "arguments": {}}]},
	  {"text": "first done"},
	  {"toolCalls": [{"id": "c5", "name": "srv__late", "arguments": {}}]},
	  {"text": "second done"}
	]}`))
	require.NoError(t, err)
	var log mcptest.Log
	var asked []string
	h, err := setup.New(ctx, cfg, &setup.Options{
		Route:  &setup.Route{Route: host.Route{Provider: "test", Model: "m", ContextWindow: 8192}, Model: llm.NewScripted(script)},
		Getenv: func(k string) string { return map[string]string{"SRV_TOKEN": secret}[k] },
		Logger: hclog.New(&hclog.LoggerOptions{Output: &log, Level: hclog.Trace}),
		Ask: func(_ context.Context, call host.ToolCall, d policy.Decision) (bool, error) {
			asked = append(asked, call.Name+": "+d.By)
			return true, nil
		},
	})
	require.NoError(t, err)
	defer h.Close(ctx)

	s := host.NewSession("mcp", surface.New(), nil)
	defer s.Close()
	var sent [][]byte
	capture := func(ctx context.Context, req *llm.Request, on func(llm.Delta), next host.ModelCall) (*llm.Result, error) {
		b, err := llm.EncodeRequest(req)
		require.NoError(t, err)
		sent = append(sent, b)
		return next(ctx, req, on)
	}
	a, err := h.Agent(ctx, s, host.Config{ModelInterceptors: []host.ModelInterceptor{capture}})
	require.NoError(t, err)
	defer a.Close()
	changed := make(chan struct{}, 4)
	defer h.MCP().OnChange(func() { changed <- struct{}{} })() // after the agent's: it has the new list then

	res, err := a.Run(ctx, a.UserMessage("go"))
	require.NoError(t, err)
	require.NoError(t, res.Err())
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		require.FailNow(t, "the server's list change was not reported")
	}
	res, err = a.Run(ctx, a.UserMessage("again"))
	require.NoError(t, err)
	require.NoError(t, res.Err())

	assert.Equal(t, []string{"srv__write: the default for a tool that may write or run", "srv__grow: the default for a tool that may write or run"},
		asked, "the tools without readOnlyHint are asked about, the read-only ones and the denied one are not")
	results := map[string]string{}
	var headers []surface.Event
	var all strings.Builder
	for _, e := range s.Log().Events() {
		all.Write(e.Data)
		switch e.Type {
		case surface.TypeToolResult:
			var d struct {
				Message struct {
					Source struct {
						CallID string `json:"callId"`
					} `json:"source"`
				} `json:"message"`
			}
			require.NoError(t, json.Unmarshal(e.Data, &d))
			results[d.Message.Source.CallID] = string(e.Data)
		case surface.TypeRequestHeader:
			headers = append(headers, e)
		}
	}
	assert.Contains(t, results["c1"], "contents")
	assert.Contains(t, results["c2"], "written")
	assert.Contains(t, results["c3"], "TOOL_DENIED")
	assert.Contains(t, results["c3"], "denied by the permission policy (tools.policy.srv__erase: deny)")
	assert.NotContains(t, results["c3"], "erased")
	assert.Contains(t, results["c5"], "late result")
	require.Len(t, headers, 2, "the initial header and the change")
	assert.NotContains(t, string(headers[0].Data), "srv__late")
	assert.Contains(t, string(headers[1].Data), "srv__late")
	assert.Contains(t, log.String(), "tool call denied")

	reqs, order, err := host.Requests(s.Log().Events(), s.ID())
	require.NoError(t, err)
	require.Len(t, order, len(sent))
	for i, seq := range order {
		b, err := llm.EncodeRequest(reqs[seq])
		require.NoError(t, err)
		assert.Equal(t, string(sent[i]), string(b), "request %d rebuilds from the log", i)
	}
	assert.NotContains(t, all.String(), secret)
	assert.NotContains(t, log.String(), secret)
}
