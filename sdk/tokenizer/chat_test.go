package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

type chatCase struct {
	Messages []struct {
		Role      string  `json:"role"`
		Content   *string `json:"content"`
		ToolCalls []struct {
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Gen  bool   `json:"gen"`
	Text string `json:"text"`
	IDs  []int  `json:"ids"`
}

func TestChatTemplateOracle(t *testing.T) {
	f, err := os.Open("testdata/oracle/chat.jsonl")
	require.NoError(t, err)
	defer f.Close()
	tok := DeepSeekV3()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var c chatCase
		require.NoError(t, json.Unmarshal(sc.Bytes(), &c))
		var msgs []Message
		for _, m := range c.Messages {
			msg := Message{Role: m.Role}
			if m.Content != nil {
				msg.Content = *m.Content
			}
			for _, tc := range m.ToolCalls {
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{Type: tc.Type, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
			msgs = append(msgs, msg)
		}
		require.Equal(t, c.Text, RenderChat(msgs, c.Gen), "case %d", n)
		prefix := []byte("before")
		got := AppendChat(prefix[:len(prefix):len(prefix)], msgs, c.Gen)
		require.Equal(t, "before"+c.Text, string(got), "case %d: AppendChat", n)
		require.Equal(t, c.IDs, tok.EncodeChat(msgs, c.Gen), "case %d", n)
		require.Equal(t, len(c.IDs), tok.CountChat(msgs, c.Gen), "case %d", n)
		n++
	}
	require.NoError(t, sc.Err())
	require.GreaterOrEqual(t, n, 10)
}

func TestMessageOverhead(t *testing.T) {
	tok := DeepSeekV3()
	content := "Some content, with 123 numbers and 中文."
	tests := []struct {
		role string
		msgs []Message
		want int
	}{
		{"user", []Message{{Role: "user", Content: content}}, 1},
		{"assistant", []Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: content}}, 2},
		{"tool", []Message{{Role: "tool", Content: "a"}, {Role: "tool", Content: content}}, 2},
		{"system", []Message{{Role: "system", Content: content}}, 0},
		{"other", []Message{{Role: "developer", Content: content}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.role, func(t *testing.T) {
			require.Equal(t, tc.want, MessageOverhead(tc.role))
			// Adding the message to a conversation costs its content plus
			// exactly the overhead (the contents here do not merge across
			// the markers).
			before := tok.CountChat(tc.msgs[:len(tc.msgs)-1], false)
			after := tok.CountChat(tc.msgs, false)
			last := tc.msgs[len(tc.msgs)-1]
			extra := 0
			if tc.role == "tool" {
				extra = 1 // the "\n" before a second tool result
			}
			if tc.role == "other" {
				require.Equal(t, before, after)
				return
			}
			require.Equal(t, tok.Count(last.Content)+tc.want+extra, after-before)
		})
	}
	require.Equal(t, 1+tok.Count(content), tok.CountMessage(Message{Role: "user", Content: content}))
	require.Equal(t, 2+tok.Count(content), tok.CountMessage(Message{Role: "assistant", Content: content}))
	// The first tool result also opens and closes the outputs block.
	require.Equal(t, 4+tok.Count(content), tok.CountMessage(Message{Role: "tool", Content: content}))
	require.Equal(t, tok.Count(content), tok.CountMessage(Message{Role: "system", Content: content}))
	call := Message{Role: "assistant", ToolCalls: []ToolCall{{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}
	// <｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>
	// get_weather\n```json\n{...}\n```<｜tool▁call▁end｜>: the text between
	// markers encodes on its own.
	want := 5 + tok.Count("function") + tok.Count("get_weather\n```json\n{\"city\":\"Paris\"}\n```")
	require.Equal(t, want, tok.CountMessage(call))
	require.Equal(t, ChatBaseOverhead, tok.CountChat(nil, false))
	require.Equal(t, ChatBaseOverhead+1, tok.CountChat(nil, true))
}
