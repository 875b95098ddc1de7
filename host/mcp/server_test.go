package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverEnv makes the test binary a stdio MCP server: TestMain serves
// instead of running the tests when it is set.
const serverEnv = "WEIR_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "malformed" {
		malformedServer()
		os.Exit(0)
	}
	if os.Getenv(serverEnv) != "" {
		if err := testServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// echoSchema is the echo tool's input schema, as the server gives it.
const echoSchema = `{"type":"object","properties":{"msg":{"type":"string","description":"what to say back"}},"required":["msg"],"additionalProperties":false}`

// text is a result of one text block.
func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func msgOf(req *sdk.CallToolRequest) string {
	var a struct {
		Msg string `json:"msg"`
	}
	_ = unmarshalArgs(req, &a)
	return a.Msg
}

// testServer is a real MCP server with a tool per behaviour under test.
func testServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "weir-test", Version: "1"}, &sdk.ServerOptions{Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}}})
	add := func(name string, readOnly bool, h sdk.ToolHandler) {
		s.AddTool(&sdk.Tool{Name: name, Description: "the " + name + " tool",
			InputSchema: rawSchema(`{"type":"object","properties":{"msg":{"type":"string"}}}`),
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: readOnly}}, h)
	}
	s.AddTool(&sdk.Tool{Name: "echo", Description: "Say msg back.", InputSchema: rawSchema(echoSchema),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if os.Getenv(serverEnv) != "" {
				fmt.Fprintln(os.Stderr, "echo called")
			}
			return text("echo: " + msgOf(req)), nil
		})
	add("hang", true, func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		select {} // ignores its context: only the host's bounds end it
	})
	add("crash", false, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		fmt.Fprintln(os.Stderr, "crashing now")
		os.Exit(3)
		return nil, nil
	})
	add("big", true, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text(strings.Repeat("b", 3000)), nil
	})
	add("flood", true, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text(strings.Repeat("f", 4<<20)), nil
	})
	add("fails", true, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		r := text("the fails tool always fails")
		r.IsError = true
		return r, nil
	})
	add("env", true, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text("token=" + os.Getenv("TEST_TOKEN") + " host=" + os.Getenv("HOST_ONLY")), nil
	})
	add("grow", false, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		s.AddTool(&sdk.Tool{Name: "late.tool", Description: "added later", InputSchema: rawSchema(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("late"), nil })
		return text("grown"), nil
	})
	return s
}

// malformedServer speaks just enough JSON-RPC by hand to initialize and
// list one tool, then answers every call with a result whose content is
// not a list: what no SDK server would send.
func malformedServer() {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || len(req.ID) == 0 {
			continue // a notification
		}
		var result string
		switch req.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"bad","version":"1"}}`
		case "tools/list":
			result = `{"tools":[{"name":"broken","inputSchema":{"type":"object"}}]}`
		case "tools/call":
			result = `{"content":"not a list","isError":"maybe"}`
		default:
			result = `{}`
		}
		fmt.Printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n", req.ID, result)
	}
}
