package cli

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/host/mcp/mcptest"
)

// mcpTestServer serves an MCP server with a read-only tool and a writing
// one over streamable HTTP on loopback, for requests with the token.
func mcpTestServer(t *testing.T, token string) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)
	result := func(s string) sdk.ToolHandler {
		return func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return mcptest.Text(s), nil
		}
	}
	srv.AddTool(&sdk.Tool{Name: "read", Description: "Read a note.", InputSchema: schema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, result("the note says hello"))
	srv.AddTool(&sdk.Tool{Name: "write", Description: "Write a note.", InputSchema: schema}, result("written"))
	return mcptest.ServeHTTP(t, srv, token)
}

// weir run offers a configured MCP server's tools to a loopback model and
// calls them under the permission policy: the read-only tool runs, the
// writing one asks, and with no terminal to ask on it is denied. weir tools
// list shows both with their source and policy. The header's secret is
// in neither the session nor the output.
func TestRunWithMCPServer(t *testing.T) {
	t.Parallel()
	const secret = "cli-mcp-secret"
	dir := t.TempDir()
	conf := "mcp:\n  servers:\n    notes:\n      url: " + mcpTestServer(t, secret) + "\n      headers:\n        Authorization: \"Bearer ${NOTES_TOKEN}\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "weir.yaml"), []byte(conf), 0o644))
	env := []string{"NOTES_TOKEN=" + secret}

	model := llmtest.NewServer(t)
	model.Push(llmtest.Stream(llmtest.Role(),
		llmtest.ToolCall(0, "c1", "notes__read", `{"path":"a"}`),
		llmtest.ToolCall(1, "c2", "notes__write", `{"path":"a"}`),
		llmtest.Finish("tool_calls"), llmtest.Usage(20, 5, 0, 0)))
	model.Push(llmtest.TextReply(30, 3, "Read it."))
	session := filepath.Join(dir, "s.jsonl")
	r := runHostEnv(t, dir, "", env, "run", "--base-url", model.URL(), "--provider", "ollama", "--model", "m", "--session", session, "read the note")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Read it.")

	reqs := model.Requests()
	require.Len(t, reqs, 2)
	var body struct {
		Tools []struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(reqs[0].Body, &body))
	offered := map[string]string{}
	for _, tl := range body.Tools {
		offered[tl.Function.Name] = string(tl.Function.Parameters)
	}
	require.Contains(t, offered, "notes__read")
	require.Contains(t, offered, "read_file")
	assert.JSONEq(t, `{"type":"object","properties":{"path":{"type":"string"}}}`, offered["notes__write"], "the schema is the server's")

	log := readFile(t, session)
	assert.Contains(t, log, "the note says hello")
	assert.Contains(t, log, "TOOL_DENIED")
	assert.Contains(t, log, "the call of notes__write needs confirmation (the default for a tool that may write or run: ask) and no one can answer here")
	assert.NotContains(t, log, "written")
	for _, s := range []string{log, r.stdout, r.stderr} {
		assert.NotContains(t, s, secret)
	}

	r = runHostEnv(t, dir, "", env, "tools", "list", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var list []toolJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	assert.Contains(t, list, toolJSON{Name: "read_file", Source: "built-in", Policy: "allow", PolicyBy: "the default for a read-only tool"})
	assert.Contains(t, list, toolJSON{Name: "notes__read", Source: "mcp:notes", Policy: "allow", PolicyBy: "the default for a read-only tool"})
	assert.Contains(t, list, toolJSON{Name: "notes__write", Source: "mcp:notes", Policy: "ask", PolicyBy: "the default for a tool that may write or run"})
}

// Ctrl-C while an MCP server is starting (a command that never answers
// the handshake) ends the run at once with status 130, well within the
// server's configured timeout, and the session can be run again.
func TestCtrlCWhileAnMCPServerStarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	conf := "mcp:\n  servers:\n    mute:\n      command: sh\n      args: [\"-c\", \"echo > " + marker + "; exec sleep 600\"]\n      timeout: 10m\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "weir.yaml"), []byte(conf), 0o644))
	session := filepath.Join(dir, "s.jsonl")
	cmd := exec.Command(hostBin, "run", "--route", "offline", "--session", session, "hello")
	cmd.Dir = dir
	cmd.Env = hostEnv()
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(hangBound)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "the MCP server was never started; stderr: %s", stderr.String())
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := waitExit(t, cmd, hangBound)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stderr: %s", stderr.String())
	require.Equal(t, 130, ee.ExitCode(), "stderr: %s", stderr.String())
	// Not held by the server's start, whose handshake may take up to
	// mcp.DefaultStartTimeout (10 s): ended by the Ctrl-C.
	require.Less(t, time.Since(start), 5*time.Second, "the run ends soon after the Ctrl-C")
	require.Contains(t, stderr.String(), "interrupted while starting the MCP servers")

	require.NoError(t, os.Remove(filepath.Join(dir, "weir.yaml")))
	r := runHost(t, dir, "", "run", "--route", "offline", "--session", session, "again")
	require.Equal(t, 0, r.code, r.stderr)
}
