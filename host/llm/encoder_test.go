package llm

import (
	"bytes"
	"context"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/surface"
)

// TestAnthropicThinkingTemperature: with thinking on, the Messages API
// takes no temperature but 1, so a config that sets another sends
// thinking and no temperature (and the client warns); temperature 1, or
// no thinking, sends the temperature as set; encoder version 1 sent no
// thinking and every temperature.
func TestAnthropicThinkingTemperature(t *testing.T) {
	tests := []struct {
		name        string
		effort      string
		temperature *float64
		encoder     int
		want        string // the members between messages and stream
		warned      bool
	}{
		{"thinking drops 0.2", "low", f64(0.2), 0, `,"thinking":{"type":"enabled","budget_tokens":4096}`, true},
		{"thinking keeps 1", "low", f64(1), 0, `,"temperature":1,"thinking":{"type":"enabled","budget_tokens":4096}`, false},
		{"no thinking keeps 0.2", "", f64(0.2), 0, `,"temperature":0.2`, false},
		{"effort none keeps 0.2", "none", f64(0.2), 0, `,"temperature":0.2`, false},
		{"version 1 sent no thinking", "low", f64(0.2), 1, `,"temperature":0.2`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := func() *Request {
				return &Request{Config: surface.CallConfig{Provider: "p", Model: "m", MaxTokens: i64(8000), ReasoningEffort: tt.effort, Temperature: tt.temperature},
					Messages: []*surface.Message{user("u", "q")}, Encoder: tt.encoder}
			}
			body, err := EncodeAnthropic(req())
			require.NoError(t, err)
			require.Contains(t, string(body), `]`+tt.want+`,"stream":true}`)
			require.NoError(t, llmtest.ValidateAnthropic(body))

			var logs bytes.Buffer
			cl, srv := newAPIClient(t, APIAnthropic, func(c *ClientConfig) {
				c.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})
			})
			srv.Push(llmtest.AnthropicText(1, 1, "ok"))
			_, err = cl.Stream(context.Background(), req(), nil)
			require.NoError(t, err)
			require.Equal(t, string(body), string(srv.Requests()[0].Body), "the client sends the encoded body")
			if tt.warned {
				require.Contains(t, logs.String(), "temperature was left out")
				require.Contains(t, logs.String(), "temperature=0.2")
			} else {
				require.NotContains(t, logs.String(), "temperature")
			}
		})
	}
}

// TestGeminiThoughtsGoBack: a reply's thought parts go back in its model
// turn as thought parts with their signatures, in their place among the
// turn's parts, and the history stays valid; encoder version 1 sent none.
func TestGeminiThoughtsGoBack(t *testing.T) {
	cl, srv := newAPIClient(t, APIGemini, nil)
	srv.Push(llmtest.GeminiStream(
		llmtest.GeminiResponse("r1", "", "", `{"text":"plan","thought":true,"thoughtSignature":"c2lnLTE="}`, llmtest.GeminiThoughtPart(" more")),
		llmtest.GeminiResponse("r1", "STOP", llmtest.GeminiUsage(10, 0, 2, 3), `{"text":"Reading."}`, `{"functionCall":{"id":"fc1","name":"read","args":{}}}`)))
	q := []*surface.Message{user("u", "q")}
	res, err := cl.Stream(context.Background(), &Request{Config: surface.CallConfig{Provider: "p", Model: "m"}, Messages: q}, nil)
	require.NoError(t, err)
	require.Equal(t, FinishToolCalls, res.FinishReason)
	require.Equal(t, surface.BlockReasoning, res.Content[0].Type)
	require.Equal(t, jsontext.Value(`{"signature":"c2lnLTE=","signedBy":"gemini"}`), res.Content[0].Unknown, "the signature is kept on its block, with the API that made it")

	next := &Request{Config: surface.CallConfig{Provider: "p", Model: "m"}, Messages: append(q,
		msg("a", surface.RoleAssistant, res.Content...),
		msg("r", surface.RoleUser, surface.ToolResult(res.ToolCalls()[0].ID, false, surface.Text("ok"))))}
	body, err := EncodeGemini(next)
	require.NoError(t, err)
	// The streamed pieces of one thought are one part, signed as the
	// first piece was.
	require.Contains(t, string(body), `{"role":"model","parts":[{"text":"plan more","thought":true,"thoughtSignature":"c2lnLTE="},`+
		`{"text":"Reading."},{"functionCall":{"id":"fc1","name":"read","args":{}}}]}`)
	require.NoError(t, llmtest.ValidateGemini(body))

	next.Encoder = 1
	old, err := EncodeGemini(next)
	require.NoError(t, err)
	require.Contains(t, string(old), `{"role":"model","parts":[{"text":"Reading."},{"functionCall":{"id":"fc1","name":"read","args":{}}}]}`)
}

// TestEncoderVersions: a request names the encoder version that writes
// it; 0 is this build's, and a version this build has not is refused by
// every encoder, naming the versions it has.
func TestEncoderVersions(t *testing.T) {
	for _, api := range APIs {
		for _, v := range []int{-1, EncoderVersion + 1} {
			_, err := Encode(api, &Request{Config: surface.CallConfig{Model: "m"}, Messages: []*surface.Message{user("u", "q")}, Encoder: v})
			require.ErrorContains(t, err, "is not one this build has (1 to 2)", "%s %d", api, v)
		}
		for _, v := range []int{0, 1, EncoderVersion} {
			_, err := Encode(api, &Request{Config: surface.CallConfig{Model: "m"}, Messages: []*surface.Message{user("u", "q")}, Encoder: v})
			require.NoError(t, err, "%s %d", api, v)
		}
	}
}

// TestSignaturesGoBackToTheirAPI: a signature goes back only to the API
// that made it (its block's signedBy), so a session whose route moves
// between Anthropic and Gemini stays sendable: Anthropic leaves out
// reasoning Gemini signed, as it does unsigned reasoning (and, the tool
// loop's assistant message then starting without thinking, sends that
// request without thinking), and Gemini sends Anthropic's thinking as an
// unsigned thought. A block logged
// before signedBy existed keeps its signature for either.
func TestSignaturesGoBackToTheirAPI(t *testing.T) {
	reasoning := func(unknown string) surface.Block {
		return surface.Block{Type: surface.BlockReasoning, Text: "plan", Unknown: jsontext.Value(unknown)}
	}
	tests := []struct {
		name              string
		unknown           string
		anthropic, gemini string // the reasoning as sent, "" when left out
	}{
		{"anthropic's", `{"signature":"sig-a","signedBy":"anthropic"}`,
			`{"type":"thinking","thinking":"plan","signature":"sig-a"}`, `{"text":"plan","thought":true}`},
		{"gemini's", `{"signature":"sig-g","signedBy":"gemini"}`,
			"", `{"text":"plan","thought":true,"thoughtSignature":"sig-g"}`},
		{"older log", `{"signature":"sig"}`,
			`{"type":"thinking","thinking":"plan","signature":"sig"}`, `{"text":"plan","thought":true,"thoughtSignature":"sig"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &Request{Config: surface.CallConfig{Provider: "p", Model: "m", MaxTokens: i64(4000), ReasoningEffort: "low"}, Messages: []*surface.Message{
				user("u", "q"),
				msg("a", surface.RoleAssistant, reasoning(tt.unknown), surface.ToolCall("t", "echo", `{}`)),
				toolResult("r", "t", "ok"),
			}}
			a, err := EncodeAnthropic(req)
			require.NoError(t, err)
			require.NoError(t, llmtest.ValidateAnthropic(a))
			g, err := EncodeGemini(req)
			require.NoError(t, err)
			require.NoError(t, llmtest.ValidateGemini(g))
			if tt.anthropic == "" {
				// The tool loop's assistant message starts with no
				// thinking, so the request goes out without thinking.
				require.Contains(t, string(a), `{"role":"assistant","content":[{"type":"tool_use"`)
				require.NotContains(t, string(a), `"thinking":{"type":"enabled"`)
			} else {
				require.Contains(t, string(a), `{"role":"assistant","content":[`+tt.anthropic+`,{"type":"tool_use"`)
				require.Contains(t, string(a), `"thinking":{"type":"enabled","budget_tokens":3999}`)
			}
			require.Contains(t, string(g), `{"role":"model","parts":[`+tt.gemini+`,{"functionCall"`)
		})
	}
}
