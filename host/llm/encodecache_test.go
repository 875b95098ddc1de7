package llm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// The cache's body is EncodeRequest's, request after request, through a
// conversation that grows, loses calls to the pairing rule, has ranges
// replaced (compaction), its system prompt replaced, and switches
// provider (DeepSeek's reasoning replay), encoder version and tools.
func TestEncodeCacheMatchesEncodeRequest(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 1))
			var c EncodeCache
			msgs := []*surface.Message{msg("s", surface.RoleSystem, surface.Text("system prompt"))}
			tools := []jsontext.Value{jsontext.Value(`{"name":"f","description":"d","parameters":{"type":"object"}}`)}
			id := 0
			next := func() string { id++; return fmt.Sprintf("m%d", id) }
			provider := "deepseek"
			for step := range 200 {
				switch k := r.IntN(20); {
				case k < 6:
					msgs = append(msgs, user(next(), fmt.Sprintf("question %d \"quoted\" \n", step)))
				case k < 10:
					blocks := []surface.Block{}
					if r.IntN(2) == 0 {
						blocks = append(blocks, reasoning("thinking"))
					}
					if r.IntN(2) == 0 {
						blocks = append(blocks, surface.Text("an answer"))
					}
					for n := r.IntN(3); n > 0; n-- {
						blocks = append(blocks, surface.ToolCall(next(), "f", `{"a":1}`))
					}
					msgs = append(msgs, msg(next(), surface.RoleAssistant, blocks...))
				case k < 14:
					// A result for the latest call, or for none.
					call := "nothing"
					for i := len(msgs) - 1; i >= 0 && call == "nothing"; i-- {
						for _, b := range msgs[i].Content {
							if b.Type == surface.BlockToolCall {
								call = b.ID
							}
						}
					}
					msgs = append(msgs, toolResult(next(), call, "result"))
				case k == 14 && len(msgs) > 4:
					// Compaction: a range after node 0 becomes a checkpoint.
					from := 1 + r.IntN(len(msgs)-2)
					to := from + r.IntN(len(msgs)-from)
					msgs = append(append(msgs[:from:from], user(next(), "summary")), msgs[to:]...)
				case k == 15:
					msgs = append([]*surface.Message{msg(next(), surface.RoleSystem, surface.Text(fmt.Sprintf("prompt %d", step)))}, msgs[1:]...)
				case k == 16:
					provider = map[string]string{"deepseek": "other", "other": "deepseek"}[provider]
				case k == 17:
					tools = append(tools, jsontext.Value(fmt.Sprintf(`{"name":"g%d","parameters":{}}`, step)))
				}
				req := &Request{Config: surface.CallConfig{Provider: provider, Model: "m"}, Messages: msgs, Tools: tools}
				if r.IntN(10) == 0 {
					req.Encoder = 1
				}
				want, werr := EncodeRequest(req)
				got, gerr := c.EncodeRequest(req)
				require.Equal(t, werr, gerr, "step %d", step)
				require.Equal(t, string(want), string(got), "step %d", step)
			}
		})
	}
}

// A request the encoder refuses leaves the cache as it was, and invalid
// text is refused with or without the cache.
func TestEncodeCacheRefusals(t *testing.T) {
	var c EncodeCache
	msgs := []*surface.Message{msg("s", surface.RoleSystem, surface.Text("sys")), user("u", "hi")}
	ok := &Request{Config: surface.CallConfig{Provider: "p", Model: "m"}, Messages: msgs}
	_, err := c.EncodeRequest(ok)
	require.NoError(t, err)
	bad := &Request{Config: surface.CallConfig{Provider: "p", Model: "m"}, Messages: append(msgs[:2:2], user("x", "bad \xff"))}
	_, want := EncodeRequest(bad)
	_, got := c.EncodeRequest(bad)
	require.Error(t, want)
	require.Equal(t, want, got)
	body, err := c.EncodeRequest(ok)
	require.NoError(t, err)
	plain, err := EncodeRequest(ok)
	require.NoError(t, err)
	require.Equal(t, string(plain), string(body))
}
