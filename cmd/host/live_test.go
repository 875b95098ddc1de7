package cli

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm/llmtest"
)

// liveCmd runs the built command against the loopback server.
func liveCmd(t *testing.T, dir, url string, args ...string) *exec.Cmd {
	base := []string{"run", "--base-url", url, "--provider", "test", "--model", "test-model", "--api-key-env", "WEIR_TEST_KEY"}
	cmd := exec.Command(hostBin, append(base, args...)...)
	cmd.Dir = dir
	cmd.Env = hostEnv("WEIR_TEST_KEY=sk-live-test-secret-0123456789")
	return cmd
}

func TestRunAgainstLoopbackServer(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	srv.Push(llmtest.TextReply(20, 3, "Hello ", "from the ", "server."))
	out, err := liveCmd(t, dir, srv.URL(), "--session", file, "hi").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "assistant: Hello from the server.")
	require.Contains(t, string(out), "turn 1: completed")
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "Bearer sk-live-test-secret-0123456789", reqs[0].Header.Get("Authorization"))

	// The body the server got is exactly what "host request" rebuilds.
	r := runHost(t, dir, "", "request", file, "--at", seqOf(t, file, `"type":"assistant/message"`))
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, strings.TrimSuffix(string(reqs[0].Body), "\n")+"\n", r.stdout)
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "sk-live-test-secret", "the key never enters the log")

	// A failure is reported with its code and the session stays usable.
	srv.Push(llmtest.Unauthorized())
	out, err = liveCmd(t, dir, srv.URL(), "--session", file, "again").CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "AUTH")
	require.NotContains(t, string(out), "sk-live-test-secret")

	// A retried rate limit is logged as llm/retry; the log keeps its shapes.
	srv.Push(llmtest.RateLimited("0"), llmtest.TextReply(20, 3, "Later."))
	out, err = liveCmd(t, dir, srv.URL(), "--session", file, "once more").CombinedOutput()
	require.NoError(t, err, "%s", out)
	types := requireLogMatchesSchemas(t, file)
	require.Positive(t, types["llm/retry"])
}

// TestRunAgainstNativeAPIs runs one turn through the Anthropic and Gemini
// adapters: the key travels in the API's header, and "host request"
// prints the exact body each server received.
func TestRunAgainstNativeAPIs(t *testing.T) {
	t.Parallel()
	measured := map[string]host.Measurement{}
	for _, tc := range []struct {
		api, header string
		reply       llmtest.Reply
	}{
		// 250 input tokens of which 100 cached, and 8 output, each in
		// the API's own fields: OpenAI and Gemini count the cache inside
		// the prompt figure, Anthropic beside input_tokens.
		{"openai", "Authorization", llmtest.Stream(llmtest.Role(), llmtest.Text("Hello "), llmtest.Text("from the server."),
			llmtest.Finish("stop"), llmtest.Usage(250, 8, 100, 0))},
		{"anthropic", "X-Api-Key", llmtest.AnthropicStream(llmtest.MessageStart(150, 100, 0), llmtest.TextStart(0),
			llmtest.TextDelta(0, "Hello "), llmtest.TextDelta(0, "from the server."), llmtest.BlockStop(0),
			llmtest.MessageDelta("end_turn", 8), llmtest.MessageStop())},
		{"gemini", "X-Goog-Api-Key", llmtest.GeminiStream(llmtest.GeminiParts("", "", llmtest.GeminiTextPart("Hello ")),
			llmtest.GeminiParts("STOP", llmtest.GeminiUsage(250, 100, 8, 0), llmtest.GeminiTextPart("from the server.")))},
	} {
		t.Run(tc.api, func(t *testing.T) {
			srv := llmtest.NewServerFor(t, tc.api)
			dir := t.TempDir()
			file := filepath.Join(dir, "s.jsonl")
			srv.Push(tc.reply)
			out, err := liveCmd(t, dir, srv.URL(), "--api", tc.api, "--session", file, "hi").CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), "assistant: Hello from ")
			reqs := srv.Requests()
			require.Len(t, reqs, 1)
			require.Equal(t, "sk-live-test-secret-0123456789", strings.TrimPrefix(reqs[0].Header.Get(tc.header), "Bearer "))
			if tc.api != "openai" {
				require.Empty(t, reqs[0].Header.Get("Authorization"))
			}
			r := runHost(t, dir, "", "request", file, "--at", seqOf(t, file, `"type":"assistant/message"`))
			require.Equal(t, 0, r.code, r.stderr)
			require.Equal(t, string(reqs[0].Body)+"\n", r.stdout)
			raw, err := os.ReadFile(file)
			require.NoError(t, err)
			require.NotContains(t, string(raw), "sk-live-test-secret")
			require.Contains(t, string(raw), `"usage":{"inputTokens":150,"outputTokens":8,"cacheReadTokens":100}`)
			if tc.api != "openai" {
				require.Contains(t, string(raw), `"api":"`+tc.api+`"`, "the stream record names its API")
			}

			// The meter anchors on the provider's usage (150 uncached +
			// 100 cached input + 8 output) and reports the heuristic
			// estimate's error against it, the same whatever the API.
			in := runHost(t, dir, "", "inspect", "--json", file)
			require.Equal(t, 0, in.code, in.stderr)
			var got inspectJSON
			require.NoError(t, json.Unmarshal([]byte(in.stdout), &got))
			require.NotNil(t, got.Tokens)
			require.Equal(t, "heuristic", got.Tokens.Tokenizer)
			require.Equal(t, "usage", got.Tokens.Baseline)
			require.Equal(t, int64(258), got.Tokens.BaselineTokens)
			require.NotNil(t, got.Tokens.EstimateError)
			require.NotZero(t, *got.Tokens.EstimateError)
			m := *got.Tokens
			m.Nodes, m.LogRevision = nil, 0
			measured[tc.api] = m
		})
	}
	require.Len(t, measured, 3)
	for _, api := range []string{"anthropic", "gemini"} {
		require.Equal(t, measured["openai"].TotalTokens, measured[api].TotalTokens, api)
		require.Equal(t, *measured["openai"].EstimateError, *measured[api].EstimateError, api)
		require.Equal(t, measured["openai"].Breakdown, measured[api].Breakdown, api)
	}
}

func TestRunCancelledMidStreamThenResumed(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	slow := llmtest.Stream(llmtest.Role(), llmtest.Text("Partial "), llmtest.Text("answer "), llmtest.Text("never finished"), llmtest.Finish("stop"))
	slow.Gap = 2 * time.Second
	srv.Push(slow)

	cmd := liveCmd(t, dir, srv.URL(), "--session", file, "tell me a long story")
	stderr := interruptAfter(t, cmd, "Partial", 30*time.Second)
	require.Contains(t, stderr, "aborted")
	r := runHost(t, dir, "", "replay", file)
	require.Equal(t, 0, r.code, "the interrupted session replays: %s", r.stderr)

	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"interrupted":true`)
	require.Contains(t, string(raw), `"kind":"aborted"`)

	// The session resumes: the next run logs a resume header and completes.
	srv.Push(llmtest.TextReply(30, 2, "Resumed."))
	out, err := liveCmd(t, dir, srv.URL(), "--session", file, "continue").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "Resumed.")
	raw, err = os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"reason":"resume"`)
	// The resumed request carries the interrupted prefix the user saw.
	last := srv.Requests()[len(srv.Requests())-1]
	require.Contains(t, string(last.Body), "Partial")
	requireLogMatchesSchemas(t, file)
}

// seqOf returns the seq (as text) of the first line of file containing sub.
func seqOf(t *testing.T, file, sub string) string {
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, sub) {
			i := strings.Index(line, `"seq":`)
			j := strings.Index(line[i:], ",")
			return line[i+6 : i+j]
		}
	}
	t.Fatalf("no line with %s", sub)
	return ""
}

// waitExit waits for cmd, failing the test (and killing cmd) if it has not
// exited within limit: a generous guard, not a measure of speed.
// interruptAfter starts cmd, sends SIGINT once its standard output shows
// text, and requires it to exit with status 130 within limit. It returns
// the command's standard error.
func interruptAfter(t *testing.T, cmd *exec.Cmd, text string, limit time.Duration) string {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	br := bufio.NewReader(stdout)
	seen := ""
	for !strings.Contains(seen, text) {
		b, err := br.ReadByte()
		require.NoError(t, err, "stdout so far: %q", seen)
		seen += string(b)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	go func() { br.WriteTo(io.Discard) }() // drain the rest so the process can exit
	err = waitExit(t, cmd, limit)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stderr: %s", stderr.String())
	require.Equal(t, 130, ee.ExitCode(), "an interrupted run exits 130; stderr: %s", stderr.String())
	return stderr.String()
}

func waitExit(t *testing.T, cmd *exec.Cmd, limit time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s did not exit within %s", cmd.Args, limit)
		return nil
	}
}
