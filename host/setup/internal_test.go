package setup

import (
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/config"
)

func TestIsLoopback(t *testing.T) {
	cases := []struct {
		url  string
		want bool
	}{
		{"http://localhost:11434/v1", true},
		{"http://LOCALHOST:8080/v1", true},
		{"http://api.localhost/v1", true},
		{"http://127.0.0.1:8000/v1", true},
		{"http://127.1.2.3/v1", true},
		{"http://[::1]:8080/v1", true},
		{"https://api.deepseek.com", false},
		{"http://10.0.0.5:8000/v1", false},
		{"http://0.0.0.0:8000/v1", false},
		{"http://localhost.example.com/v1", false},
		{"not a url", false},
	}
	for _, c := range cases {
		require.Equal(t, c.want, isLoopback(c.url), c.url)
	}
}

// The route's tokenizer reaches the first-party meter as an entry of its
// routes: the bytes the command line wrote before, for an unset
// configuration, and merged over the plugin's own configuration.
func TestMeterConfig(t *testing.T) {
	old, _ := json.Marshal(map[string]any{"routes": map[string]string{"offline/tour.json": "heuristic"}})
	require.Equal(t, string(old), string(meterConfig([]byte("{}"), "offline/tour.json", "heuristic")))
	require.Equal(t, string(old), string(meterConfig(nil, "offline/tour.json", "heuristic")))
	require.Equal(t, `{"counting":"guest","routes":{"acme":"cl100k","openai/gpt":"o200k"}}`,
		string(meterConfig([]byte(`{"routes": {"acme": "cl100k", "openai/gpt": "deepseek-v3"}, "counting": "guest"}`), "openai/gpt", "o200k")))
	require.Equal(t, `[1]`, string(meterConfig([]byte(`[1]`), "a/b", "o200k")), "not an object: left to fail the load")
}

func TestPluginConfig(t *testing.T) {
	cfg := config.Default()
	meter, _ := cfg.Plugin("token-meter")
	compaction, _ := cfg.Plugin("compaction-basic")
	offline := Route{Name: "offline", Route: host.Route{Provider: "offline", Model: "tour.json", ContextWindow: 8192}, Tokenizer: "o200k"}
	h := &Host{cfg: cfg, route: offline}
	require.JSONEq(t, `{"routes": {"offline/tour.json": "o200k"}}`, string(h.pluginConfig(meter)))
	require.JSONEq(t, `{"headroomTokens": 1024}`, string(h.pluginConfig(compaction)))

	// A configured compaction-basic keeps its own; a route without a
	// tokenizer leaves the meter's; a plugin of a path is not touched.
	compaction.Config = []byte(`{"headroomTokens": 99}`)
	h.route.Tokenizer = ""
	require.JSONEq(t, `{"headroomTokens": 99}`, string(h.pluginConfig(compaction)))
	require.JSONEq(t, `{}`, string(h.pluginConfig(meter)))
	h.route.Tokenizer = "o200k"
	other := meter
	other.Path = "/somewhere/meter.wasm"
	require.JSONEq(t, `{}`, string(h.pluginConfig(other)))

	// Options.PluginConfig replaces everything.
	h.opts.PluginConfig = map[string][]byte{"token-meter": []byte(`{"fallback": "cl100k"}`)}
	require.JSONEq(t, `{"fallback": "cl100k"}`, string(h.pluginConfig(meter)))
}

// A zero field of host.Config is filled from the configuration; a set one
// is kept, and a non-nil empty Data stays empty.
func TestAgentConfig(t *testing.T) {
	cfg := config.Default()
	cfg.Prompt.PerModel["offline"] = config.PromptOverride{Sections: []config.Section{{Key: "style", Text: "Be brief."}}}
	cfg.Prompt.Data = []config.Section{{Key: "team", Text: "core"}}
	day := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	h := &Host{cfg: cfg, route: Route{Name: "offline", Route: host.Route{Provider: "offline", Model: "tour.json", ContextWindow: 8192}},
		opts: Options{Workdir: "/home/me/project", Now: func() time.Time { return day }}}
	p := &Providers{Prompt: &host.SectionPrompt{}}
	c := h.agentConfig(p, host.Config{})
	require.Equal(t, h.route.Route, c.Route)
	require.Equal(t, []host.Section{{Key: "base", Text: config.DefaultSystemPrompt}, {Key: "style", Text: "Be brief."}}, c.Sections)
	require.Equal(t, map[string]string{config.DataDate: "2026-03-04", config.DataRoute: "offline", config.DataModel: "offline/tour.json",
		config.DataWorkdir: "project", "team": "core"}, c.Data)
	require.Equal(t, cfg.Sandbox.StepBudget, c.StepBudget)
	require.Equal(t, cfg.Tools.Timeout, c.ToolTimeout)
	require.Equal(t, cfg.Sandbox.HostCompactionBudget(), c.CompactionBudget)
	require.Equal(t, cfg.Retry.MaxWait, c.MaxRetryWait)
	require.Nil(t, c.Meter, "no meter: the interface stays nil")

	c = h.agentConfig(p, host.Config{Data: map[string]string{}, Sections: []host.Section{}, StepBudget: time.Second})
	require.Empty(t, c.Data)
	require.Empty(t, c.Sections)
	require.NotNil(t, c.Sections)
	require.Equal(t, time.Second, c.StepBudget)
}
