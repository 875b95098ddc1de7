package llm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// runSession drives m like the agent loop: each user input is one turn;
// tool calls are answered with a fixed result until the model stops
// calling tools. It returns every result in order.
func runSession(t *testing.T, m Model, inputs ...string) ([]*Result, []*surface.Message) {
	t.Helper()
	msgs := []*surface.Message{msg("sys", surface.RoleSystem, surface.Text("You are offline."))}
	var out []*Result
	n := 0
	next := func(p string) string { n++; return p + strconv.Itoa(n) }
	for _, in := range inputs {
		msgs = append(msgs, user(next("u"), in))
		for step := 0; ; step++ {
			require.Less(t, step, 10, "runaway tool loop")
			req := &Request{Config: surface.CallConfig{Provider: "offline", Model: "script"}, Messages: msgs,
				Tools: []jsontext.Value{jsontext.Value(`{"name":"bash","parameters":{}}`)}}
			_, err := EncodeRequest(req)
			require.NoError(t, err, "every request the session builds can be encoded")
			res, err := m.Stream(context.Background(), req, nil)
			require.NoError(t, err)
			out = append(out, res)
			msgs = append(msgs, &surface.Message{ID: next("a"), Role: surface.RoleAssistant, Content: res.Content})
			calls := res.ToolCalls()
			if len(calls) == 0 {
				break
			}
			for _, c := range calls {
				msgs = append(msgs, toolResult(next("r"), c.ID, "output of "+c.Name+" "+c.Arguments))
			}
		}
	}
	return out, msgs
}

func TestScriptedSession(t *testing.T) {
	m, err := Open("offline:testdata/example-script.json")
	require.NoError(t, err)
	results, msgs := runSession(t, m, "hello there", "what is the weather?", "please list the files", "something else")
	require.Len(t, results, 6)

	require.Equal(t, []surface.Block{surface.Text("Hello! I am the offline model. Ask me about the weather, or ask me to list files.")}, results[0].Content)
	require.Equal(t, FinishStop, results[0].FinishReason)

	w := results[1]
	require.Equal(t, FinishToolCalls, w.FinishReason)
	require.Len(t, w.Content, 2)
	require.Equal(t, reasoning("The user wants the weather. I will call the weather tool for Paris."), w.Content[0])
	require.Equal(t, "get_weather", w.Content[1].Name)
	require.Equal(t, `{"city":"Paris","unit":"celsius"}`, w.Content[1].Arguments)
	require.Regexp(t, `^call_[0-9a-f]{12}_0$`, w.Content[1].ID)

	require.Equal(t, &surface.Usage{Input: 40, Output: 12, CacheRead: 128}, results[2].Usage)
	require.Equal(t, []surface.Block{surface.Text("It is sunny in Paris, 21 °C.")}, results[2].Content)

	calls := results[3].ToolCalls()
	require.Len(t, calls, 2)
	require.Equal(t, `{"command":"ls"}`, calls[0].Arguments)
	require.Equal(t, `{"command":"pwd"}`, calls[1].Arguments)
	require.NotEqual(t, calls[0].ID, calls[1].ID)
	require.NotEqual(t, w.Content[1].ID, calls[0].ID, "ids differ across steps")
	require.Equal(t, "The folder holds the files shown above.", surface.TextOf(results[4].Content))
	require.Equal(t, "I have no scripted answer for that.", surface.TextOf(results[5].Content))

	for i, r := range results {
		requireReassembles(t, r)
		require.NotNil(t, r.Usage, "result %d has usage", i)
	}
	// Computed usage is deterministic and grows with the request.
	require.Equal(t, &surface.Usage{Input: requestSize(&Request{Messages: msgs[:2], Tools: []jsontext.Value{jsontext.Value(`{"name":"bash","parameters":{}}`)}}),
		Output: ceil4(len(surface.TextOf(results[0].Content)))}, results[0].Usage)

	// A second run from a fresh model is byte-for-byte identical.
	again, err := Open("offline:testdata/example-script.json")
	require.NoError(t, err)
	results2, _ := runSession(t, again, "hello there", "what is the weather?", "please list the files", "something else")
	require.Len(t, results2, len(results))
	for i := range results {
		require.Equal(t, string(results[i].Stream), string(results2[i].Stream), "stream %d", i)
	}
}

func TestScriptedStreamsInPieces(t *testing.T) {
	s, err := ParseScript([]byte(`{"replies":[{"reasoning":"a b","text":"The quick brown fox jumps over the extraordinarily-long-hyphenated-word end.",
		"toolCalls":[{"name":"f","arguments":"{\"path\":\"/a/very/long/path/name.txt\"}"}]}]}`))
	require.NoError(t, err)
	on, deltas := collect()
	res, err := NewScripted(s).Stream(context.Background(), simpleRequest("p"), on)
	require.NoError(t, err)
	var text, args string
	var texts, argPieces int
	for _, d := range *deltas {
		switch d.Kind {
		case DeltaText:
			text += d.Text
			texts++
		case DeltaToolCall:
			args += d.Text
			argPieces++
		}
	}
	require.Equal(t, "The quick brown fox jumps over the extraordinarily-long-hyphenated-word end.", text)
	require.Greater(t, texts, 8, "text arrives in small pieces")
	require.Equal(t, `{"path":"/a/very/long/path/name.txt"}`, args)
	require.Greater(t, argPieces, 1, "arguments arrive split across chunks")
	require.Equal(t, "f", (*deltas)[len(*deltas)-argPieces].Name)
	requireReassembles(t, res)
}

func TestScriptedReplies(t *testing.T) {
	tests := []struct {
		name   string
		reply  string
		code   string
		finish FinishReason
		retry  time.Duration
		text   string
	}{
		{name: "finish length", reply: `{"text":"cut","finish":"length"}`, finish: FinishMaxTokens, text: "cut"},
		{name: "finish own word", reply: `{"text":"x","finish":"content-filter"}`, finish: FinishContentFilter, text: "x"},
		{name: "overflow", reply: `{"error":"overflow"}`, code: CodeContextOverflow},
		{name: "rate limit", reply: `{"error":"rate_limit","retryAfter":2}`, code: CodeRateLimit, retry: 2 * time.Second},
		{name: "auth", reply: `{"error":"auth"}`, code: CodeAuth},
		{name: "bad request", reply: `{"error":"bad_request"}`, code: CodeBadRequest},
		{name: "server", reply: `{"error":"server"}`, code: CodeServer},
		{name: "broken keeps the prefix", reply: `{"text":"partial answer","error":"broken"}`, code: CodeBrokenStream, text: "partial answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseScript([]byte(`{"replies":[` + tt.reply + `]}`))
			require.NoError(t, err)
			res, err := NewScripted(s).Stream(context.Background(), simpleRequest("offline"), nil)
			require.NotNil(t, res)
			requireReassembles(t, res)
			require.Equal(t, tt.text, surface.TextOf(res.Content))
			if tt.code == "" {
				require.NoError(t, err)
				require.Equal(t, tt.finish, res.FinishReason)
				return
			}
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tt.code, e.Code)
			require.Equal(t, tt.retry, e.RetryAfter)
			_, info, err := ReassembleInfo(res.Stream)
			require.NoError(t, err)
			require.Equal(t, tt.code, info.Code)
		})
	}
}

func TestScriptedMatchRepeatExhaust(t *testing.T) {
	s, err := ParseScript([]byte(`{"replies":[
		{"match":"Beta","text":"b"},
		{"text":"first"},
		{"match":"beta","text":"b2"},
		{"match":"gamma","repeat":true,"text":"g"}]}`))
	require.NoError(t, err)
	m := NewScripted(s)
	ask := func(q string) (string, error) {
		req := simpleRequest("p")
		req.Messages = append(req.Messages[:1], user("u", q))
		res, err := m.Stream(context.Background(), req, nil)
		return surface.TextOf(res.Content), err
	}
	for _, step := range []struct{ q, want string }{
		{"alpha", "first"}, {"say BETA", "b"}, {"beta again", "b2"}, {"gamma", "g"}, {"gamma", "g"},
	} {
		got, err := ask(step.q)
		require.NoError(t, err, step.q)
		require.Equal(t, step.want, got, step.q)
	}
	_, err = ask("beta")
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, CodeBadRequest, e.Code)
	require.Contains(t, err.Error(), "offline script is exhausted")
	require.Contains(t, err.Error(), `"beta"`)
	require.Equal(t, 6, m.Served())
}

func TestScriptedMatchIgnoresToolResults(t *testing.T) {
	s, err := ParseScript([]byte(`{"replies":[{"match":"deploy","text":"yes"}]}`))
	require.NoError(t, err)
	req := simpleRequest("p")
	req.Messages = []*surface.Message{user("u", "please deploy"), msg("a", surface.RoleAssistant, surface.ToolCall("c", "x", "{}")), toolResult("r", "c", "out")}
	res, err := NewScripted(s).Stream(context.Background(), req, nil)
	require.NoError(t, err)
	require.Equal(t, "yes", surface.TextOf(res.Content))
}

func TestScriptedDelayAndCancel(t *testing.T) {
	s, err := ParseScript([]byte(`{"delayMs":5,"replies":[{"text":"one two three four five six"}]}`))
	require.NoError(t, err)
	res, err := NewScripted(s).Stream(context.Background(), simpleRequest("p"), nil)
	require.NoError(t, err)
	_, info, err := ReassembleInfo(res.Stream)
	require.NoError(t, err)
	require.True(t, info.Done)
	require.Contains(t, string(res.Stream), `"done":`+strconv.Itoa(5*(info.Chunks+1)), "recorded times follow the delay")

	ctx, cancel := context.WithCancel(context.Background())
	res, err = NewScripted(s).Stream(ctx, simpleRequest("p"), func(d Delta) {
		if d.Kind == DeltaText {
			cancel()
		}
	})
	require.ErrorIs(t, err, ErrCancelled)
	require.Equal(t, "one ", surface.TextOf(res.Content))
	requireReassembles(t, res)
}

func TestParseScriptErrors(t *testing.T) {
	tests := []struct{ script, want string }{
		{`{"replies":[]}`, `"replies" is empty`},
		{`{"replies":[{}]}`, "reply 0: it has no text"},
		{`{"replies":[{"text":"x","finish":"done"}]}`, `reply 0: finish "done"`},
		{`{"replies":[{"error":"boom"}]}`, `reply 0: error "boom"`},
		{`{"replies":[{"text":"x"},{"toolCalls":[{"arguments":{}}]}]}`, "reply 1: tool call 0 has no name"},
		{`{"replies":[{"toolCalls":[{"name":"f","arguments":[1]}]}]}`, "arguments must be a JSON object or a string"},
		{`{"replies":[{"text":"x","colour":"red"}]}`, "colour"},
		{`{"delayMs":-1,"replies":[{"text":"x"}]}`, "delayMs -1 is negative"},
		{`{"replies":[{"error":"rate_limit","retryAfter":-2}]}`, "retryAfter -2 is negative"},
	}
	for _, tt := range tests {
		_, err := ParseScript([]byte(tt.script))
		require.ErrorContains(t, err, tt.want, tt.script)
	}
}

func TestOpen(t *testing.T) {
	_, err := Open("deepseek:deepseek-chat")
	require.ErrorContains(t, err, "only offline:<path-to-script>")
	_, err = Open("offline:")
	require.ErrorContains(t, err, "names no script file")
	_, err = Open("offline:testdata/missing.json")
	require.True(t, errors.Is(err, os.ErrNotExist))
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"replies":[{}]}`), 0o600))
	_, err = Open("offline:" + bad)
	require.ErrorContains(t, err, "reply 0")
	require.ErrorContains(t, err, bad)
}

func TestPieces(t *testing.T) {
	require.Equal(t, []string{"Hello ", "big ", "world"}, pieces("Hello big world", 24))
	require.Equal(t, []string{"abcd", "ef ", "x"}, pieces("abcdef x", 4))
	require.Equal(t, []string{"  ", "a"}, pieces("  a", 24))
	require.Nil(t, pieces("", 4))
	require.Equal(t, []string{"éé", "é"}, splitBytes("ééé", 4))
}
