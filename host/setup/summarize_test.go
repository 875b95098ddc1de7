package setup_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/llm/llmtest"
	"github.com/weirhost/weir/host/setup"
	"github.com/weirhost/weir/surface"
)

// TestSummarizeRouteFromConfig: plugins[i].route sends compaction-basic's
// summarize calls to that route, a loopback chat-completions server, under
// its model and clamped to its maxTokens; the conversation stays on its
// own route.
func TestSummarizeRouteFromConfig(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewServer(t)
	srv.SetFallback(func(int, llmtest.Request) llmtest.Reply { return llmtest.TextReply(50, 5, "a summary") })
	cfg := config.Default()
	cfg.Models["cheap"] = &config.Route{Provider: "local", Model: "small-1", API: "openai", BaseURL: srv.URL(),
		ContextWindow: 32000, MaxTokens: 100}
	for i := range cfg.Plugins {
		if cfg.Plugins[i].Name == config.PluginCompactionBasic {
			cfg.Plugins[i].Route = "cheap"
		}
	}
	script, err := llm.ParseScript([]byte(`{"replies": [{"text": "an answer of some length to compact later", "repeat": true}]}`))
	require.NoError(t, err)
	h, err := setup.New(ctx, cfg, &setup.Options{CacheDir: cacheDir,
		Route: &setup.Route{Route: host.Route{Provider: "test", Model: "m", ContextWindow: 8192}, Model: llm.NewScripted(script)}})
	require.NoError(t, err)
	defer h.Close(ctx)
	s := host.NewSession("s", surface.New(), nil)
	defer s.Close()
	a, err := h.Agent(ctx, s, host.Config{})
	require.NoError(t, err)
	defer a.Close()
	for range 6 {
		res, err := a.Run(ctx, a.UserMessage("tell me more about the thing we discussed"))
		require.NoError(t, err)
		require.NoError(t, res.Err())
	}
	require.Empty(t, srv.Requests(), "the turns stay on the conversation's route")
	compacted, err := a.CompactNow(ctx)
	require.NoError(t, err)
	require.True(t, compacted)

	reqs := srv.Requests()
	require.NotEmpty(t, reqs, "the summary went to the summarize route")
	for _, r := range reqs {
		var body struct {
			Model     string `json:"model"`
			MaxTokens int64  `json:"max_tokens"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &body))
		require.Equal(t, "small-1", body.Model)
		require.LessOrEqual(t, body.MaxTokens, int64(100), "clamped to the route's maxTokens")
		require.Positive(t, body.MaxTokens)
	}
}
