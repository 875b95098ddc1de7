package llm

import (
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// wireRoles decodes an encoded body and returns the roles of its messages
// (Anthropic, OpenAI) or contents (Gemini) and the number of call and
// result blocks it carries.
func wireRoles(t *testing.T, api API, body []byte) (roles []string, calls, results int) {
	t.Helper()
	var v struct {
		Messages []struct {
			Role      string           `json:"role"`
			Content   any              `json:"content"`
			ToolCalls []map[string]any `json:"tool_calls"`
		} `json:"messages"`
		Contents []struct {
			Role  string           `json:"role"`
			Parts []map[string]any `json:"parts"`
		} `json:"contents"`
	}
	require.NoError(t, json.Unmarshal(body, &v), "%s", body)
	switch api {
	case APIGemini:
		for _, c := range v.Contents {
			roles = append(roles, c.Role)
			for _, p := range c.Parts {
				if p["functionCall"] != nil {
					calls++
				}
				if p["functionResponse"] != nil {
					results++
				}
			}
		}
	default:
		for _, m := range v.Messages {
			roles = append(roles, m.Role)
			calls += len(m.ToolCalls)
			if m.Role == "tool" {
				results++
			}
			blocks, _ := m.Content.([]any)
			for _, b := range blocks {
				switch b.(map[string]any)["type"] {
				case "tool_use":
					calls++
				case "tool_result":
					results++
				}
			}
		}
	}
	return roles, calls, results
}

// TestPairedCallsAndResults: a call the output limit cut (no result) and a
// result whose call is gone are not sent by any API, and what remains
// keeps the roles each API accepts.
func TestPairedCallsAndResults(t *testing.T) {
	cut := surface.ToolCall("c9", "bash", `{"cmd":"l`)
	tests := []struct {
		name   string
		msgs   []*surface.Message
		roles  map[API][]string
		calls  int
		result int
	}{
		{
			name: "text and a cut call, then the next user message",
			msgs: []*surface.Message{user("u1", "list"), msg("a", surface.RoleAssistant, surface.Text("Let me look."), cut), user("u2", "go on")},
			roles: map[API][]string{
				APIAnthropic: {"user", "assistant", "user"},
				APIGemini:    {"user", "model", "user"},
				APIOpenAI:    {"user", "assistant", "user"},
			},
		},
		{
			name: "only a cut call: the assistant message is not sent",
			msgs: []*surface.Message{user("u1", "list"), msg("a", surface.RoleAssistant, cut), user("u2", "go on")},
			roles: map[API][]string{
				APIAnthropic: {"user"},
				APIGemini:    {"user"},
				APIOpenAI:    {"user", "user"},
			},
		},
		{
			name: "one of two parallel calls answered",
			msgs: []*surface.Message{
				user("u1", "list"),
				msg("a", surface.RoleAssistant, surface.ToolCall("c1", "bash", `{}`), cut),
				toolResult("r1", "c1", "ok"),
				msg("a2", surface.RoleAssistant, surface.Text("done")),
			},
			roles: map[API][]string{
				APIAnthropic: {"user", "assistant", "user", "assistant"},
				APIGemini:    {"user", "model", "user", "model"},
				APIOpenAI:    {"user", "assistant", "tool", "assistant"},
			},
			calls: 1, result: 1,
		},
		{
			name: "a result whose call is not in the request",
			msgs: []*surface.Message{toolResult("r", "gone", "ok"), user("u", "q")},
			roles: map[API][]string{
				APIAnthropic: {"user"},
				APIGemini:    {"user"},
				APIOpenAI:    {"user"},
			},
		},
		{
			name: "a result that answers a call of an older assistant message",
			msgs: []*surface.Message{
				user("u1", "x"),
				msg("a1", surface.RoleAssistant, surface.ToolCall("c1", "bash", `{}`)),
				toolResult("r1", "c1", "ok"),
				msg("a2", surface.RoleAssistant, surface.Text("and")),
				toolResult("r1b", "c1", "again"),
				user("u2", "y"),
			},
			roles: map[API][]string{
				APIAnthropic: {"user", "assistant", "user", "assistant", "user"},
				APIGemini:    {"user", "model", "user", "model", "user"},
				APIOpenAI:    {"user", "assistant", "tool", "assistant", "user"},
			},
			calls: 1, result: 1,
		},
	}
	for _, tt := range tests {
		for _, api := range []API{APIAnthropic, APIGemini, APIOpenAI} {
			t.Run(tt.name+"/"+string(api), func(t *testing.T) {
				req := &Request{Config: surface.CallConfig{Provider: "p", Model: "m"}, Messages: tt.msgs}
				before := *tt.msgs[1]
				body, err := Encode(api, req)
				require.NoError(t, err)
				roles, calls, results := wireRoles(t, api, body)
				require.Equal(t, tt.roles[api], roles, "%s", body)
				require.Equal(t, tt.calls, calls, "%s", body)
				require.Equal(t, tt.result, results, "%s", body)
				require.Equal(t, before, *tt.msgs[1], "the request's messages are not modified")
			})
		}
	}
}

// TestAnthropicBlankText: text of only whitespace is not sent as a block,
// from either role.
func TestAnthropicBlankText(t *testing.T) {
	req := &Request{Config: surface.CallConfig{Provider: "p", Model: "m"}, Messages: []*surface.Message{
		user("u1", "hi"), msg("a", surface.RoleAssistant, surface.Text(" \n\t")), user("u2", "  "), user("u3", "again"),
	}}
	body, err := EncodeAnthropic(req)
	require.NoError(t, err)
	require.NotContains(t, string(body), `" \n\t"`)
	roles, _, _ := wireRoles(t, APIAnthropic, body)
	require.Equal(t, []string{"user"}, roles, "%s", body)
}

// TestThinkingFromEffort: the config's reasoningEffort becomes Anthropic's
// thinking budget (clamped below max_tokens, left out when less than 1024
// fits) and Gemini's thinkingConfig.
func TestThinkingFromEffort(t *testing.T) {
	tests := []struct {
		effort    string
		maxTokens *int64
		anthropic string // the thinking member, "" when none is sent
		gemini    string // the generationConfig, "" when none is sent
	}{
		{"", nil, "", ""},
		{"medium", nil, `"thinking":{"type":"enabled","budget_tokens":8191}`, `"generationConfig":{"thinkingConfig":{"thinkingBudget":8192,"includeThoughts":true}}`},
		{"high", i64(64000), `"thinking":{"type":"enabled","budget_tokens":16384}`, `"generationConfig":{"maxOutputTokens":64000,"thinkingConfig":{"thinkingBudget":16384,"includeThoughts":true}}`},
		{"high", i64(4096), `"thinking":{"type":"enabled","budget_tokens":4095}`, `"generationConfig":{"maxOutputTokens":4096,"thinkingConfig":{"thinkingBudget":16384,"includeThoughts":true}}`},
		{"low", i64(1024), "", `"generationConfig":{"maxOutputTokens":1024,"thinkingConfig":{"thinkingBudget":4096,"includeThoughts":true}}`},
		{"none", nil, "", `"generationConfig":{"thinkingConfig":{"thinkingBudget":0}}`},
		{"extreme", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.effort, func(t *testing.T) {
			req := &Request{Config: surface.CallConfig{Provider: "p", Model: "m", ReasoningEffort: tt.effort, MaxTokens: tt.maxTokens},
				Messages: []*surface.Message{user("u", "q")}}
			a, err := EncodeAnthropic(req)
			require.NoError(t, err)
			g, err := EncodeGemini(req)
			require.NoError(t, err)
			if tt.anthropic == "" {
				require.NotContains(t, string(a), `"thinking"`)
			} else {
				require.Contains(t, string(a), tt.anthropic+`,"stream":true}`)
			}
			if tt.gemini == "" {
				require.NotContains(t, string(g), `generationConfig`)
			} else {
				require.Contains(t, string(g), tt.gemini+`}`)
			}
		})
	}
}

func TestKnownLimits(t *testing.T) {
	l, ok := KnownLimits("claude-sonnet-4-5")
	require.True(t, ok)
	require.Equal(t, Limits{Output: 64000, Context: 200000}, l)
	l, ok = KnownLimits("gemini-2.5-flash-lite-preview")
	require.True(t, ok, "a longer name of a known model takes its limits")
	require.Equal(t, int64(65536), l.Output)
	l, ok = KnownLimits("gpt-4o-2024-08-06")
	require.True(t, ok)
	require.Equal(t, Limits{Output: 16384, Context: 128000}, l)
	_, ok = KnownLimits("claude-sonnet-4-50")
	require.False(t, ok)
	_, ok = KnownLimits("qwen3:8b")
	require.False(t, ok)
}
