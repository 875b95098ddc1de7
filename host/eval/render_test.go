package eval_test

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/eval"
	"github.com/weirhost/weir/host/eval/evaltest"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

// The counting text the replay renders straight from a request equals the
// text read back from the request's encoded body, for every request of
// several sessions: the demo session, a live run (tool calls with text
// beside them, compactions), a generated session (a prompt change, a tool
// change, manual and pressure compactions), and requests built here with
// what those lack (reasoning under DeepSeek's replay rule and without it,
// images, several text blocks, unanswered calls, MCP-style tools).
func TestRenderEqualsWire(t *testing.T) {
	for name, reqs := range sessionRequests(t) {
		t.Run(name, func(t *testing.T) {
			require.NotEmpty(t, reqs)
			var r eval.Renderer
			for i, req := range reqs {
				got, want, err := r.Render(req)
				require.NoError(t, err, "request %d", i+1)
				require.Equal(t, want, got, "request %d", i+1)
			}
		})
	}
}

// The replay's encoder of consecutive prompts, which encodes only what
// follows the prefix a prompt shares with the previous one, gives the ids
// the tokenizer gives each whole prompt: for the prompts of the sessions
// of TestRenderEqualsWire in order, and for texts that share a prefix
// ending inside a marker, hold a marker's text in a message, lose their
// tail, change at the start, or are not valid UTF-8.
func TestPrefixEncoderEqualsEncode(t *testing.T) {
	bpe := tokenizer.DeepSeekV3()
	var texts []string
	sessions := sessionRequests(t)
	for _, name := range []string{"demo", "live", "generated", "built deepseek"} {
		var r eval.Renderer
		for _, req := range sessions[name] {
			got, _, err := r.Render(req)
			require.NoError(t, err)
			texts = append(texts, got[2])
		}
	}
	base := "<｜begin▁of▁sentence｜>You are terse.<｜User｜>Say <｜User｜> twice.<｜Assistant｜>"
	texts = append(texts,
		base, base+"<｜User｜> again<｜end▁of▁sentence｜>", base+"<｜Us", base+"<｜User｜>", base[:len(base)-3]+"x",
		"no markers at all", "<｜User｜>"+base, base+"\xff\xfe bad bytes<｜User｜>", base+"<｜User｜>ok",
		base+"<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>12345678<｜tool▁output▁end｜>", base+"<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>12345679")
	enc, encoded := eval.PrefixEncoder(bpe)
	total := 0
	for i, text := range texts {
		require.Equal(t, bpe.Encode(text), enc(text), "text %d", i)
		total += len(text)
	}
	require.Less(t, encoded(), total/4, "the shared prefixes are not encoded again")
	t.Logf("%d prompts, %d bytes, %d of them encoded", len(texts), total, encoded())
}

// sessionRequests is every request of the sessions TestRenderEqualsWire
// and TestPrefixEncoderEqualsEncode read, by session.
func sessionRequests(t *testing.T) map[string][]*llm.Request {
	rt := runtime(t)
	sessions := map[string][]*llm.Request{}
	fromLog := func(name, id string, events []surface.Event) {
		reqs, order, err := host.Requests(events, id)
		require.NoError(t, err)
		for _, seq := range order {
			sessions[name] = append(sessions[name], reqs[seq])
		}
	}
	id, events := loadEvents(t, demo)
	fromLog("demo", id, events)
	id, events, _ = live(t, evaltest.FirstParty(t, rt, "base", liveRoute, `{"headroomTokens": 1024, "thresholdRatio": 0.4}`), 12)
	fromLog("live", id, events)
	id, events = evaltest.Session(t, rt, 60)
	fromLog("generated", id, events)
	for _, provider := range []string{llm.ProviderDeepSeek, "openai"} {
		sessions["built "+provider] = builtRequests(provider)
	}
	return sessions
}

// builtRequests is a conversation that grows one exchange per request.
func builtRequests(provider string) []*llm.Request {
	cfg := surface.CallConfig{Provider: provider, Model: "m"}
	msg := func(role string, blocks ...surface.Block) *surface.Message {
		return &surface.Message{Role: role, Content: blocks}
	}
	reasoning := func(s string) surface.Block { return surface.Block{Type: surface.BlockReasoning, Text: s} }
	call := func(id, args string) surface.Block {
		return surface.Block{Type: surface.BlockToolCall, ID: id, Name: "lookup", Arguments: args}
	}
	result := func(id, text string) surface.Block {
		return surface.Block{Type: surface.BlockToolResult, ToolCallID: id, Content: []surface.Block{surface.Text(text)}}
	}
	image := surface.Block{Type: "image", Unknown: jsontext.Value(`{"type":"image","data":"AAAA","mediaType":"image/png"}`)}
	steps := [][]*surface.Message{
		{msg(surface.RoleSystem, surface.Text("You are terse."), surface.Text("Answer in English.")),
			msg(surface.RoleUser, surface.Text("Look two things up."), surface.Text("Then say which is older."))},
		{msg(surface.RoleAssistant, reasoning("I need both."), surface.Text("Looking both up."), call("c1", `{"q":"a"}`), call("c2", `{"q":"b"}`)),
			msg(surface.RoleUser, result("c1", "a: 1901"), result("c2", "b: 1899"))},
		// Reasoning only, in a span with calls: DeepSeek's rule sends it
		// with empty content; other providers leave it out.
		{msg(surface.RoleAssistant, reasoning("Compare the years.")),
			msg(surface.RoleAssistant, reasoning("b is older."), surface.Text("b is older."), surface.Text("By two years."))},
		{msg(surface.RoleUser, surface.Text("What is in this picture?"), image, surface.Text("And this one?"), image)},
		{msg(surface.RoleAssistant, surface.Text("Two pictures of a cat.")),
			msg(surface.RoleUser, image)},
		// A call cut by the output limit is not sent, nor a result that
		// answers no call.
		{msg(surface.RoleAssistant, surface.Text("Another cat."), call("c3", `{"q":`)),
			msg(surface.RoleUser, result("c9", "stray"), surface.Text("Thanks."))},
		{msg(surface.RoleAssistant, call("c4", `{"q":"c"}`)),
			msg(surface.RoleUser, result("c4", ""))},
		{msg(surface.RoleSystem, surface.Text("Prompt update: be polite.")),
			msg(surface.RoleUser, surface.Text("Bye."))},
	}
	tools := [][]jsontext.Value{
		{jsontext.Value(`{"name":"lookup","description":"Look up.","parameters":{"type":"object"}}`)},
		{jsontext.Value(`{"name":"lookup","description":"Look up.","inputSchema":{"type":"object"}}`),
			jsontext.Value(`{"type":"function","function":{"name":"other","parameters":{}}}`)},
	}
	var out []*llm.Request
	var hist []*surface.Message
	for i, s := range steps {
		hist = append(hist, s...)
		out = append(out, &llm.Request{Config: cfg, Messages: append([]*surface.Message(nil), hist...), Tools: tools[i*2/len(steps)]})
	}
	out = append(out, &llm.Request{Config: cfg, Messages: hist})
	return out
}
