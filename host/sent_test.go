package host

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// sentRequest.same compares every field EncodeRequest can read: a field
// added to one of these types must be added to same, or a change to it
// would pass the immutability check unseen.
func TestSentRequestComparesEveryField(t *testing.T) {
	for _, c := range []struct {
		v    any
		want int
	}{
		{llm.Request{}, 6}, {surface.CallConfig{}, 6}, {surface.Message{}, 5},
		{surface.Source{}, 6}, {surface.Block{}, 9},
	} {
		typ := reflect.TypeOf(c.v)
		require.Equal(t, c.want, typ.NumField(), "%s has a field sentRequest.same does not compare", typ)
	}
}

func sentFixture() *llm.Request {
	temp, maxTok := 0.5, int64(100)
	return &llm.Request{
		Config: surface.CallConfig{Provider: "deepseek", Model: "m", Temperature: &temp, MaxTokens: &maxTok, Stop: []string{"x"}},
		Messages: []*surface.Message{
			{ID: "s", Role: surface.RoleSystem, Source: surface.Source{Kind: "plugin", Plugin: "p"}, Content: []surface.Block{surface.Text("sys")}},
			{ID: "u", Role: surface.RoleUser, Source: surface.Source{Kind: "user", Unknown: jsontext.Value(`{"x":1}`)}, Content: []surface.Block{surface.Text("hi")}},
			{ID: "a", Role: surface.RoleAssistant, Source: surface.Source{Kind: "model"}, Content: []surface.Block{
				{Type: surface.BlockReasoning, Text: "think"}, surface.ToolCall("c1", "f", `{}`)}},
			{ID: "t", Role: surface.RoleUser, Source: surface.Source{Kind: "tool", CallID: "c1"}, Unknown: jsontext.Value(`{"y":2}`),
				Content: []surface.Block{surface.ToolResult("c1", false, surface.Text("out"))}},
		},
		Tools:     []jsontext.Value{jsontext.Value(`{"name":"f","parameters":{}}`)},
		SessionID: "s1",
	}
}

// Every change a model can make to its request is seen: those that change
// the body fail the check, and a change that leaves the body as it was
// passes it, as the comparison of encoded bodies always did.
func TestSentRequestUnchanged(t *testing.T) {
	cases := []struct {
		name    string
		change  func(r *llm.Request)
		changes bool // the body changes
	}{
		{"nothing", func(*llm.Request) {}, false},
		{"equal text from other memory", func(r *llm.Request) { r.Messages[1].Content[0].Text = strings.Clone("hi") }, false},
		{"model", func(r *llm.Request) { r.Config.Model = "other" }, true},
		{"temperature in place", func(r *llm.Request) { *r.Config.Temperature = 0.9 }, true},
		{"max tokens in place", func(r *llm.Request) { *r.Config.MaxTokens = 7 }, true},
		{"stop in place", func(r *llm.Request) { r.Config.Stop[0] = "y" }, true},
		{"text", func(r *llm.Request) { r.Messages[1].Content[0].Text = "ho" }, true},
		{"reasoning", func(r *llm.Request) { r.Messages[2].Content[0].Text = "other" }, true},
		{"arguments", func(r *llm.Request) { r.Messages[2].Content[1].Arguments = `{"a":1}` }, true},
		{"nested result", func(r *llm.Request) { r.Messages[3].Content[0].Content[0].Text = "changed" }, true},
		{"a message dropped", func(r *llm.Request) { r.Messages = r.Messages[1:] }, true},
		{"a message swapped", func(r *llm.Request) {
			r.Messages[1] = &surface.Message{ID: "u", Role: surface.RoleUser, Content: []surface.Block{surface.Text("x")}}
		}, true},
		{"tool bytes in place", func(r *llm.Request) { copy(r.Tools[0][9:], "g") }, true},
		{"tools dropped", func(r *llm.Request) { r.Tools = nil }, true},
		{"session id", func(r *llm.Request) { r.SessionID = "other" }, false},
		{"source unknown in place (not sent)", func(r *llm.Request) { copy(r.Messages[1].Source.Unknown[2:], "z") }, false},
		{"encoder (the same body here)", func(r *llm.Request) { r.Encoder = 1 }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The loop records the log's request and hands the model a
			// copy of it.
			orig := sentFixture()
			body, err := llm.EncodeRequest(orig)
			require.NoError(t, err)
			snap := newSentRequest(orig, body)
			req := cloneRequest(orig)
			tc.change(req)
			require.True(t, reflect.DeepEqual(sentFixture(), orig), "the change reached the log's request")
			after, err := llm.EncodeRequest(req)
			require.NoError(t, err)
			require.Equal(t, tc.changes, string(after) != string(body), "the fixture's change")
			require.Equal(t, !tc.changes, snap.unchanged(req))
			if tc.name != "nothing" && tc.name != "equal text from other memory" {
				require.False(t, snap.same(req), "the change is seen without encoding")
			} else {
				require.True(t, snap.same(req))
			}
		})
	}
}

// The model is handed the body the loop encoded (RequestBody), a copy of
// it, and it is the body rebuilt from the log.
func TestRequestBodyIsTheSentBody(t *testing.T) {
	var got [][]byte
	h := newHarness(t, "sys", func(c *Config) {
		c.ModelInterceptors = []ModelInterceptor{func(ctx context.Context, req *llm.Request, on func(llm.Delta), next ModelCall) (*llm.Result, error) {
			b := RequestBody(ctx)
			// RequestBodyEqual compares with the same body in place.
			equal, ok := RequestBodyEqual(ctx, b)
			require.True(t, ok)
			require.True(t, equal)
			equal, ok = RequestBodyEqual(ctx, append(bytes.Clone(b), ' '))
			require.True(t, ok)
			require.False(t, equal)
			got = append(got, b)
			b[0] = 'X' // a copy: the check below still passes
			return next(ctx, req, on)
		}}
	})
	h.turn("one")
	h.turn("two")
	require.Len(t, got, 2)
	for i, b := range got {
		b[0] = '{'
		require.Equal(t, string(h.model.bodies[i]), string(b), "request %d", i)
	}
	h.checkReconstruction()
	require.Nil(t, RequestBody(context.Background()))
	_, ok := RequestBodyEqual(context.Background(), got[0])
	require.False(t, ok)
}

// TestCloneRequestIsDeepAndSeparate holds cloneRequest to a copy equal to
// the request field by field (nil and empty block lists kept apart) whose
// messages and blocks, nested content included, a consumer can change or
// append to without reaching the log's messages or another copied message.
func TestCloneRequestIsDeepAndSeparate(t *testing.T) {
	orig := []*surface.Message{
		{ID: "m0", Role: surface.RoleUser, Content: []surface.Block{surface.Text("hello")}},
		{ID: "m1", Role: surface.RoleAssistant, Content: []surface.Block{
			{Type: surface.BlockReasoning, Text: "think"}, surface.ToolCall("c1", "read", `{"p":1}`)}},
		{ID: "m2", Role: surface.RoleUser, Content: []surface.Block{
			surface.ToolResult("c1", false, surface.Text("a"), surface.Text("b")), surface.ToolResult("c2", true)}},
		{ID: "m3", Role: surface.RoleAssistant, Content: []surface.Block{}},
		{ID: "m4", Role: surface.RoleAssistant},
	}
	req := &llm.Request{Config: surface.CallConfig{Provider: "p", Model: "m"}, Messages: orig, SessionID: "s"}
	want := make([]surface.Message, len(orig))
	for i, m := range orig {
		want[i] = *cloneMessage(m)
	}
	c := cloneRequest(req)
	require.Len(t, c.Messages, len(orig))
	for i, m := range c.Messages {
		require.NotSame(t, orig[i], m)
		require.True(t, reflect.DeepEqual(&want[i], m), "message %d: %+v, want %+v", i, m, want[i])
	}
	require.Nil(t, c.Messages[4].Content)
	require.NotNil(t, c.Messages[3].Content)
	require.NotNil(t, c.Messages[2].Content[1].Content)

	// Change every copied block in place, then append to every list.
	var change func(bs []surface.Block) []surface.Block
	change = func(bs []surface.Block) []surface.Block {
		for i := range bs {
			bs[i].Text += "!"
			bs[i].Content = change(bs[i].Content)
		}
		return append(bs, surface.Text("appended"))
	}
	for _, m := range c.Messages {
		m.Content = change(m.Content)
	}
	for i, m := range orig {
		require.True(t, reflect.DeepEqual(&want[i], m), "the log's message %d changed: %+v", i, m)
	}
	// Each copy changed as a copy of its own (surface.CloneBlocks') would:
	// no other message's change or append reached it.
	for i, m := range c.Messages {
		own := cloneMessage(orig[i])
		own.Content = change(own.Content)
		require.True(t, reflect.DeepEqual(own, m), "message %d: %+v, want %+v", i, m, own)
	}
	require.Equal(t, "a!", c.Messages[2].Content[0].Content[0].Text)
	require.Equal(t, "a", orig[2].Content[0].Content[0].Text)
}

// BenchmarkCloneRequest copies a request of 160 messages (user text,
// assistant reasoning, text and a tool call, tool results with nested
// text), as each attempt copies the log's request for the model.
//
//	go test ./host -run '^$' -bench CloneRequest -benchmem
func BenchmarkCloneRequest(b *testing.B) {
	var msgs []*surface.Message
	for i := range 40 {
		id := strings.Repeat("x", i%7)
		msgs = append(msgs,
			&surface.Message{ID: "u" + id, Role: surface.RoleUser, Content: []surface.Block{surface.Text("question " + id)}},
			&surface.Message{ID: "a" + id, Role: surface.RoleAssistant, Content: []surface.Block{
				{Type: surface.BlockReasoning, Text: "thinking"}, surface.Text("answer"), surface.ToolCall("c"+id, "read", `{"path":"f"}`)}},
			&surface.Message{ID: "t" + id, Role: surface.RoleUser, Content: []surface.Block{
				surface.ToolResult("c"+id, false, surface.Text("line one"), surface.Text("line two"))}},
			&surface.Message{ID: "b" + id, Role: surface.RoleAssistant, Content: []surface.Block{surface.Text("done")}},
		)
	}
	req := &llm.Request{Config: surface.CallConfig{Provider: "p", Model: "m"}, Messages: msgs, SessionID: "s"}
	b.ReportAllocs()
	for b.Loop() {
		cloneRequest(req)
	}
}
