package llm

import (
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

func TestEncodeRequestExact(t *testing.T) {
	tests := []struct {
		name string
		req  *Request
		want string
	}{
		{
			name: "system and user",
			req: &Request{
				Config:   surface.CallConfig{Provider: "openai", Model: "gpt-x"},
				Messages: []*surface.Message{msg("s", surface.RoleSystem, surface.Text("Be brief.")), user("u", "Hi \"there\"\n<ok>")},
			},
			want: `{"model":"gpt-x","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi \"there\"\n<ok>"}],"stream":true,"stream_options":{"include_usage":true}}`,
		},
		{
			name: "config fields in order",
			req: &Request{
				Config: surface.CallConfig{Provider: "deepseek", Model: "deepseek-chat", ReasoningEffort: "high",
					Temperature: f64(0.7), MaxTokens: i64(4096), Stop: []string{"END", "\n\n"}},
				Messages: []*surface.Message{user("u", "x")},
			},
			want: `{"model":"deepseek-chat","messages":[{"role":"user","content":"x"}],"max_tokens":4096,"temperature":0.7,"stop":["END","\n\n"],"reasoning_effort":"high","stream":true,"stream_options":{"include_usage":true}}`,
		},
		{
			name: "empty stop list is not sent",
			req: &Request{
				Config:   surface.CallConfig{Provider: "openai", Model: "m", Stop: []string{}, Temperature: f64(0)},
				Messages: []*surface.Message{user("u", "x")},
			},
			want: `{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`,
		},
		{
			name: "tool round trip",
			req: &Request{
				Config: surface.CallConfig{Provider: "openai", Model: "m"},
				Messages: []*surface.Message{
					user("u", "list"),
					msg("a", surface.RoleAssistant, reasoning("think"), surface.ToolCall("c1", "bash", `{"cmd":"ls"}`), surface.ToolCall("c2", "bash", `{}`)),
					toolResult("r1", "c1", "a.txt"),
					msg("r2", surface.RoleUser, surface.ToolResult("c2", true, surface.Text("failed"), surface.Text("twice"))),
					msg("a2", surface.RoleAssistant, surface.Text("Done.")),
				},
			},
			want: `{"model":"m","messages":[{"role":"user","content":"list"},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"cmd\":\"ls\"}"}},{"id":"c2","type":"function","function":{"name":"bash","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"c1","content":"a.txt"},{"role":"tool","tool_call_id":"c2","content":"failed\n\ntwice"},` +
				`{"role":"assistant","content":"Done."}],"stream":true,"stream_options":{"include_usage":true}}`,
		},
		{
			name: "images and skipped blocks",
			req: &Request{
				Config: surface.CallConfig{Provider: "openai", Model: "m"},
				Messages: []*surface.Message{
					msg("u", surface.RoleUser, surface.Text("what is this?"),
						surface.Block{Type: "image", Unknown: jsontext.Value(`{"type":"image","data":"AAAA","mediaType":"image/png"}`)},
						surface.Block{Type: "image", Unknown: jsontext.Value(`{"type":"image","url":"https://x/y.jpg"}`)}),
					msg("f", surface.RoleUser, surface.Block{Type: "file", Unknown: jsontext.Value(`{"type":"file","path":"a"}`)}),
					msg("a", surface.RoleAssistant, reasoning("only thinking")),
				},
			},
			want: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},` +
				`{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"image_url","image_url":{"url":"https://x/y.jpg"}}]}],` +
				`"stream":true,"stream_options":{"include_usage":true}}`,
		},
		{
			name: "tool schema forms",
			req: &Request{
				Config:   surface.CallConfig{Provider: "openai", Model: "m"},
				Messages: []*surface.Message{user("u", "x")},
				Tools: []jsontext.Value{
					jsontext.Value(`{"type":"function","function":{"name":"a","parameters":{}}}`),
					jsontext.Value(`{ "name": "b", "description": "B", "parameters": {"type":"object"} }`),
					jsontext.Value(`{"name":"c","description":"C","inputSchema":{"type":"object"}}`),
				},
			},
			want: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[` +
				`{"type":"function","function":{"name":"a","parameters":{}}},` +
				`{"type":"function","function":{"name":"b","description":"B","parameters":{"type":"object"}}},` +
				`{"type":"function","function":{"name":"c","description":"C","parameters":{"type":"object"}}}],` +
				`"stream":true,"stream_options":{"include_usage":true}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EncodeRequest(tt.req)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
			require.True(t, jsontext.Value(got).IsValid())
		})
	}
}

// wireAssistant returns the reasoning_content of each assistant wire
// message ("-" when absent).
func wireReasoning(t *testing.T, body []byte) []string {
	t.Helper()
	var w struct {
		Messages []map[string]jsontext.Value `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(body, &w))
	var out []string
	for _, m := range w.Messages {
		if string(m["role"]) != `"assistant"` {
			continue
		}
		rc, ok := m["reasoning_content"]
		if !ok {
			out = append(out, "-")
			continue
		}
		var s string
		require.NoError(t, json.Unmarshal(rc, &s))
		out = append(out, s)
	}
	return out
}

func TestEncodeDeepSeekReasoning(t *testing.T) {
	history := []*surface.Message{
		msg("s", surface.RoleSystem, surface.Text("sys")),
		user("u1", "plain question"),
		msg("a1", surface.RoleAssistant, reasoning("r1"), surface.Text("plain answer")),
		user("u2", "use a tool"),
		msg("a2", surface.RoleAssistant, reasoning("r2"), surface.ToolCall("c1", "bash", "{}")),
		toolResult("t1", "c1", "ok"),
		msg("a3", surface.RoleAssistant, surface.ToolCall("c2", "bash", "{}")),
		toolResult("t2", "c2", "ok"),
		msg("a4", surface.RoleAssistant, reasoning("r4a"), reasoning("r4b"), surface.Text("final")),
		user("u3", "thanks"),
		msg("a5", surface.RoleAssistant, reasoning("r5"), surface.Text("welcome")),
	}
	tests := []struct {
		name     string
		provider string
		msgs     []*surface.Message
		want     []string
	}{
		{"deepseek keeps tool spans forever", "deepseek", history, []string{"-", "r2", "", "r4ar4b", "-"}},
		{"deepseek within an open tool sub-turn", "deepseek", history[:8], []string{"-", "r2", ""}},
		{"deepseek without tools", "deepseek", history[:3], []string{"-"}},
		{"other providers never", "openai", history, []string{"-", "-", "-", "-", "-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := EncodeRequest(&Request{Config: surface.CallConfig{Provider: tt.provider, Model: "m"}, Messages: tt.msgs})
			require.NoError(t, err)
			require.Equal(t, tt.want, wireReasoning(t, body))
		})
	}
}

func TestEncodeDeterministic(t *testing.T) {
	req := bigRequest(200, "deepseek")
	a, err := EncodeRequest(req)
	require.NoError(t, err)
	// Rebuild the request from its JSON form, as the host does from a log.
	raw, err := json.Marshal(req.Messages)
	require.NoError(t, err)
	var msgs []*surface.Message
	require.NoError(t, json.Unmarshal(raw, &msgs))
	copyReq := &Request{Config: req.Config, Messages: msgs, Tools: req.Tools, SessionID: "other"}
	for range 3 {
		b, err := EncodeRequest(copyReq)
		require.NoError(t, err)
		require.Equal(t, string(a), string(b))
	}
}

func TestEncodeErrors(t *testing.T) {
	cfg := surface.CallConfig{Provider: "openai", Model: "m"}
	tests := []struct {
		name string
		req  *Request
		want string
	}{
		{"nil request", nil, "nil request"},
		{"no model", &Request{Messages: []*surface.Message{user("u", "x")}}, "names no model"},
		{"nothing to send", &Request{Config: cfg, Messages: []*surface.Message{msg("a", surface.RoleAssistant)}}, "no message to send"},
		{"nil message", &Request{Config: cfg, Messages: []*surface.Message{nil}}, "message 0 is nil"},
		{"bad role", &Request{Config: cfg, Messages: []*surface.Message{msg("x", "robot", surface.Text("x"))}}, `message 0 (id "x"): role "robot"`},
		{"call without id", &Request{Config: cfg, Messages: []*surface.Message{user("u", "x"), msg("a", surface.RoleAssistant, surface.ToolCall("", "bash", "{}"))}}, `message 1 (id "a"): tool-call block 0 needs an id`},
		{"image without data", &Request{Config: cfg, Messages: []*surface.Message{msg("u", surface.RoleUser, surface.Block{Type: "image", Unknown: jsontext.Value(`{"type":"image"}`)})}}, "image block 0: it has neither url nor data"},
		{"tool not object", &Request{Config: cfg, Messages: []*surface.Message{user("u", "x")}, Tools: []jsontext.Value{jsontext.Value(`[1]`)}}, "tool 0: a tool schema must be a JSON object"},
		{"tool without name", &Request{Config: cfg, Messages: []*surface.Message{user("u", "x")}, Tools: []jsontext.Value{jsontext.Value(`{"parameters":{}}`)}}, "tool 0: the schema has no name"},
		{"NaN temperature", &Request{Config: surface.CallConfig{Model: "m", Temperature: f64(nan())}, Messages: []*surface.Message{user("u", "x")}}, "temperature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := EncodeRequest(tt.req)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func nan() float64 {
	z := 0.0
	return z / z
}

// bigRequest is a history of n messages cycling through user text,
// assistant reasoning + tool calls, tool results and assistant text.
func bigRequest(n int, provider string) *Request {
	msgs := []*surface.Message{msg("sys", surface.RoleSystem, surface.Text(strings.Repeat("You are a careful coding agent. ", 40)))}
	for i := 0; len(msgs) < n; i++ {
		id := func(p string) string { return p + "-" + itoa(i) }
		msgs = append(msgs,
			user(id("u"), "Please look at file number "+itoa(i)+" and fix the failing test in it."),
			msg(id("a"), surface.RoleAssistant, reasoning("I should read the file first. "+strings.Repeat("Thinking. ", 10)),
				surface.ToolCall(id("call"), "read_file", `{"path":"src/file`+itoa(i)+`.go"}`)),
			toolResult(id("r"), id("call"), strings.Repeat("package main\n\nfunc main() {}\n", 20)),
			msg(id("b"), surface.RoleAssistant, surface.Text("The file looks fine; the test expects a different value. "+strings.Repeat("Explanation. ", 8))),
		)
	}
	msgs = msgs[:n]
	return &Request{
		Config:    surface.CallConfig{Provider: provider, Model: "deepseek-chat", MaxTokens: i64(8192)},
		Messages:  msgs,
		Tools:     []jsontext.Value{jsontext.Value(`{"type":"function","function":{"name":"read_file","description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}`)},
		SessionID: "s1",
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
