package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/mcp"
	"github.com/weirhost/weir/host/mcp/mcptest"
	"github.com/weirhost/weir/surface"
)

func rawSchema(s string) json.RawMessage { return json.RawMessage(s) }

func unmarshalArgs(req *sdk.CallToolRequest, v any) error {
	return json.Unmarshal(req.Params.Arguments, v)
}

func logger(buf *mcptest.Log) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: buf, Level: hclog.Trace})
}

// stdioConfig configures the test binary as a stdio server named "t".
func stdioConfig(testing.TB) mcp.Config {
	return mcp.Config{Name: "t", Command: os.Args[0], Env: map[string]string{serverEnv: "1"}}
}

// open makes a server and closes it at the end of the test.
func open(t *testing.T, cfg mcp.Config, opts mcp.Options) *mcp.Server {
	t.Helper()
	s := mcp.New(cfg, opts)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func toolNamed(t testing.TB, tools []host.Tool, name string) host.Tool {
	t.Helper()
	for _, tl := range tools {
		if tl.Name() == name {
			return tl
		}
	}
	require.Failf(t, "no tool", "%q is not among the tools", name)
	return nil
}

func names(tools []host.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name())
	}
	return out
}

func run(t *testing.T, tl host.Tool, args string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := tl.Run(ctx, args)
	return surface.TextOf(out), err
}

// httpServer serves testServer over streamable HTTP on loopback, for
// requests that carry the bearer token.
func httpServer(t testing.TB, token string) string {
	t.Helper()
	return mcptest.ServeHTTP(t, testServer(), token)
}

func TestListAndCall(t *testing.T) {
	const secret = "s3cret-token-value"
	getenv := func(k string) string { return map[string]string{"TEST_TOKEN": secret}[k] }
	for _, tc := range []struct {
		name string
		cfg  func(testing.TB) mcp.Config
	}{
		{"stdio", stdioConfig},
		{"http", func(t testing.TB) mcp.Config {
			return mcp.Config{Name: "t", URL: httpServer(t, secret), Headers: map[string]string{"Authorization": "Bearer ${TEST_TOKEN}"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log mcptest.Log
			s := open(t, tc.cfg(t), mcp.Options{Getenv: getenv, Logger: logger(&log)})
			tools, err := s.Tools(context.Background())
			require.NoError(t, err)
			assert.ElementsMatch(t, []string{"t__echo", "t__hang", "t__crash", "t__big", "t__flood", "t__fails", "t__env", "t__grow"}, names(tools))

			echo := toolNamed(t, tools, "t__echo")
			var schema struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			}
			require.NoError(t, json.Unmarshal(echo.Schema(), &schema))
			assert.Equal(t, "t__echo", schema.Name)
			assert.Equal(t, "Say msg back.", schema.Description)
			assert.JSONEq(t, echoSchema, string(schema.Parameters), "the input schema is passed through")
			assert.True(t, echo.(*mcp.Tool).IsReadOnly())
			assert.False(t, toolNamed(t, tools, "t__crash").(*mcp.Tool).IsReadOnly())

			out, err := run(t, echo, `{"msg":"hi"}`)
			require.NoError(t, err)
			assert.Equal(t, "echo: hi", out)

			_, err = run(t, toolNamed(t, tools, "t__fails"), `{}`)
			require.EqualError(t, err, "the fails tool always fails", "an isError result is an error result")
			_, err = run(t, echo, `[1]`)
			require.ErrorContains(t, err, "not a JSON object")

			assert.NotContains(t, log.String(), secret, "the secret never reaches the log")
			if tc.name == "stdio" {
				assert.Contains(t, log.String(), "echo called", "the server's stderr goes to the host log")
			}
		})
	}
}

func TestSecretNotInErrors(t *testing.T) {
	const secret = "wrong-secret-value"
	var log mcptest.Log
	url := httpServer(t, "the-right-one")
	s := open(t, mcp.Config{Name: "t", URL: url, Headers: map[string]string{"Authorization": "Bearer ${TEST_TOKEN}"}},
		mcp.Options{Getenv: func(string) string { return secret }, Logger: logger(&log)})
	_, err := s.Tools(context.Background())
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secret)
	assert.NotContains(t, log.String(), secret)
}

func TestEnv(t *testing.T) {
	t.Setenv("HOST_ONLY", "leaked")
	cfg := stdioConfig(t)
	cfg.Env["TEST_TOKEN"] = "${TEST_TOKEN}"
	s := open(t, cfg, mcp.Options{Getenv: func(k string) string { return map[string]string{"TEST_TOKEN": "tok"}[k] }})
	tools, err := s.Tools(context.Background())
	require.NoError(t, err)
	out, err := run(t, toolNamed(t, tools, "t__env"), `{}`)
	require.NoError(t, err)
	assert.Equal(t, "token=tok host=", out, "env expands ${VAR}; the host's other variables are not inherited")
}

func TestListChanged(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(testing.TB) mcp.Config
	}{
		{"stdio", stdioConfig},
		{"http", func(t testing.TB) mcp.Config {
			return mcp.Config{Name: "t", URL: httpServer(t, "x"), Headers: map[string]string{"Authorization": "Bearer x"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := mcp.NewSet([]mcp.Config{tc.cfg(t)}, mcp.Options{})
			t.Cleanup(func() { _ = set.Close() })
			changed := make(chan struct{}, 4)
			defer set.OnChange(func() { changed <- struct{}{} })()
			tools, err := set.Tools(context.Background())
			require.NoError(t, err)
			require.NotContains(t, names(tools), "t__late_tool")
			_, err = run(t, toolNamed(t, tools, "t__grow"), `{}`)
			require.NoError(t, err)
			select {
			case <-changed:
			case <-time.After(20 * time.Second):
				require.FailNow(t, "no list change was reported")
			}
			tools, err = set.Tools(context.Background())
			require.NoError(t, err)
			late := toolNamed(t, tools, "t__late_tool")
			out, err := run(t, late, `{}`)
			require.NoError(t, err)
			assert.Equal(t, "late", out, "the offered name maps back to the server's late.tool")
		})
	}
}

func TestHangingServerTimesOut(t *testing.T) {
	cfg := stdioConfig(t)
	cfg.Timeout = 300 * time.Millisecond
	s := open(t, cfg, mcp.Options{})
	tools, err := s.Tools(context.Background())
	require.NoError(t, err)
	_, err = run(t, toolNamed(t, tools, "t__hang"), `{}`)
	require.ErrorContains(t, err, "did not answer within 300ms (mcp.servers.t.timeout)")
	out, err := run(t, toolNamed(t, tools, "t__echo"), `{"msg":"again"}`)
	require.NoError(t, err, "the server is restarted")
	assert.Equal(t, "echo: again", out)

	// The agent's own deadline (tools.timeout) ends the call too.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = toolNamed(t, tools, "t__hang").Run(ctx, `{}`)
	require.ErrorContains(t, err, "tools.timeout")
}

func TestCancelledCall(t *testing.T) {
	s := open(t, stdioConfig(t), mcp.Options{})
	tools, err := s.Tools(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = toolNamed(t, tools, "t__hang").Run(ctx, `{}`)
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, s.Disabled())
}

func TestCrashingServerBreaker(t *testing.T) {
	cfg := stdioConfig(t)
	cfg.Failures = 2
	var log mcptest.Log
	set := mcp.NewSet([]mcp.Config{cfg}, mcp.Options{Logger: logger(&log)})
	t.Cleanup(func() { _ = set.Close() })
	changed := make(chan struct{}, 4)
	defer set.OnChange(func() { changed <- struct{}{} })()
	tools, err := set.Tools(context.Background())
	require.NoError(t, err)
	crash, echo := toolNamed(t, tools, "t__crash"), toolNamed(t, tools, "t__echo")

	_, err = run(t, crash, `{}`)
	require.ErrorContains(t, err, `mcp server "t": tool "crash" failed`)
	out, err := run(t, echo, `{"msg":"back"}`)
	require.NoError(t, err, "a crashed server is started again")
	assert.Equal(t, "echo: back", out)
	assert.Contains(t, log.String(), "crashing now")

	_, err = run(t, crash, `{}`)
	require.Error(t, err)
	_, err = run(t, crash, `{}`)
	require.Error(t, err)
	require.ErrorContains(t, set.Servers()[0].Disabled(), "disabled after 2 consecutive failures (the breaker, mcp.servers.t.failures)")
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the breaker did not report a list change")
	}
	_, err = run(t, echo, `{"msg":"x"}`)
	require.ErrorContains(t, err, "disabled")
	tools, err = set.Tools(context.Background())
	assert.Empty(t, tools, "a disabled server offers no tools")
	require.ErrorContains(t, err, "disabled")
}

func TestResultCap(t *testing.T) {
	cfg := stdioConfig(t)
	cfg.MaxResult = 1000
	s := open(t, cfg, mcp.Options{})
	tools, err := s.Tools(context.Background())
	require.NoError(t, err)
	out, err := run(t, toolNamed(t, tools, "t__big"), `{}`)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("b", 1000)+"\n[result cut: 1000 of 3000 bytes shown (mcp.servers.t.maxResultKiB)]", out)

	_, err = run(t, toolNamed(t, tools, "t__flood"), `{}`)
	require.Error(t, err, "a message past the frame limit breaks the connection")
	out, err = run(t, toolNamed(t, tools, "t__echo"), `{"msg":"ok"}`)
	require.NoError(t, err, "the flooding server is started again")
	assert.Equal(t, "echo: ok", out)
}

func TestAttach(t *testing.T) {
	ct, st := sdk.NewInMemoryTransports()
	srv := testServer()
	ss, err := srv.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "embedder", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })

	s := mcp.Attach("emb", cs, mcp.Config{}, mcp.Options{})
	tools, err := s.Tools(context.Background())
	require.NoError(t, err)
	out, err := run(t, toolNamed(t, tools, "emb__echo"), `{"msg":"in memory"}`)
	require.NoError(t, err)
	assert.Equal(t, "echo: in memory", out)
	require.NoError(t, s.Close())
	require.NoError(t, cs.Ping(context.Background(), nil), "closing an attached server leaves its session to its owner")
}

func TestNameProblem(t *testing.T) {
	for name, ok := range map[string]bool{"github": true, "my_srv-2": true, "": false, "a.b": false, "a__b": false, strings.Repeat("x", 33): false} {
		assert.Equal(t, ok, mcp.NameProblem(name) == "", name)
	}
}

func TestMalformedResult(t *testing.T) {
	cfg := mcp.Config{Name: "bad", Command: os.Args[0], Env: map[string]string{serverEnv: "malformed"}, Failures: 2}
	s := open(t, cfg, mcp.Options{})
	tools, err := s.Tools(context.Background())
	require.NoError(t, err)
	broken := toolNamed(t, tools, "bad__broken")
	_, err = run(t, broken, `{}`)
	require.ErrorContains(t, err, `mcp server "bad": tool "broken" failed`)
	require.NoError(t, s.Disabled(), "one failure is below the breaker's count")
	_, err = run(t, broken, `{}`)
	require.Error(t, err, "the server was started again and fails the same way")
	require.ErrorContains(t, s.Disabled(), "disabled after 2 consecutive failures")
}
