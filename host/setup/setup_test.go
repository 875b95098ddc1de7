package setup_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/setup"
	"github.com/weirhost/weir/surface"
)

func TestOpenRouteKey(t *testing.T) {
	cfg := config.Default()
	_, err := setup.OpenRoute(cfg, "deepseek", nil, nil)
	var missing *setup.MissingKeyError
	require.ErrorAs(t, err, &missing, "no Getenv reads no environment")
	require.Equal(t, setup.MissingKeyError{Route: "deepseek", Env: "DEEPSEEK_API_KEY"}, *missing)
	require.EqualError(t, err, `route "deepseek": no API key: $DEEPSEEK_API_KEY is empty`)

	var asked []string
	r, err := setup.OpenRoute(cfg, "deepseek", func(name string) string { asked = append(asked, name); return "sk-test" }, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"DEEPSEEK_API_KEY"}, asked)
	require.Equal(t, "deepseek-v3", r.Tokenizer)
	require.Equal(t, host.Route{Provider: "deepseek", Model: "deepseek-chat", ContextWindow: 128000, MaxTokens: 8192}, r.Route)
	require.NotNil(t, r.Model)

	// A server on this machine needs no key.
	cfg.Models["deepseek"].BaseURL = "http://127.0.0.1:8080"
	_, err = setup.OpenRoute(cfg, "deepseek", nil, nil)
	require.NoError(t, err)

	_, err = setup.OpenRoute(cfg, "nowhere", nil, nil)
	require.ErrorContains(t, err, `no route named "nowhere"`)

	// The offline route's script is built in.
	r, err = setup.OpenRoute(cfg, "offline", nil, nil)
	require.NoError(t, err)
	require.Equal(t, "offline", r.Route.Provider)
	require.Equal(t, "tour.json", r.Route.Model)
}

// The route's tokenizer prices the session through the first-party meter.
func TestRouteTokenizer(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.Model = "offline"
	for _, tok := range []string{"heuristic", "o200k"} {
		cfg.Models["offline"].Tokenizer = tok
		h, err := setup.New(ctx, cfg, &setup.Options{CacheDir: cacheDir})
		require.NoError(t, err)
		s := host.NewSession("tok", surface.New(), nil)
		a, err := h.Agent(ctx, s, host.Config{})
		require.NoError(t, err)
		_, err = a.Run(ctx, a.UserMessage("hello"))
		require.NoError(t, err)
		m, err := a.Providers.Meter.Measure(ctx, nil)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(m.Tokenizer, tok), "%s priced with %q", tok, m.Tokenizer)
		a.Close()
		require.NoError(t, h.Close(ctx))
	}
}

// Sessions run side by side on one Host: each has its own prompt adapter
// and meter, the compaction adapters are shared. Close releases what is
// still open and the Host makes nothing after it.
func TestSessionsAndClose(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	script, err := llm.ParseScript([]byte(`{"replies": [{"text": "hi", "repeat": true}]}`))
	require.NoError(t, err)
	h, err := setup.New(ctx, cfg, &setup.Options{CacheDir: cacheDir,
		Route: &setup.Route{Route: host.Route{Provider: "test", Model: "m", ContextWindow: 8192}, Model: llm.NewScripted(script)}})
	require.NoError(t, err)
	const n = 8
	agents := make([]*setup.Agent, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		s := host.NewSession(string(rune('a'+i)), surface.New(), nil)
		t.Cleanup(func() { s.Close() })
		agents[i], err = h.Agent(ctx, s, host.Config{})
		require.NoError(t, err)
		wg.Go(func() {
			res, err := agents[i].Run(ctx, agents[i].UserMessage("hello"))
			if err == nil {
				err = res.Err()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.NotSame(t, agents[0].Providers.Meter, agents[1].Providers.Meter)
	require.NotSame(t, agents[0].Providers.Prompt, agents[1].Providers.Prompt)
	require.Len(t, agents[0].Providers.Compactors, 1)
	require.Same(t, agents[0].Providers.Compactors[0], agents[1].Providers.Compactors[0])

	agents[0].Close()
	agents[0].Close() // idempotent
	require.NoError(t, h.Close(ctx))
	require.NoError(t, h.Close(ctx))
	agents[1].Close() // after the Host: nothing left to do
	_, err = h.Agent(ctx, host.NewSession("late", surface.New(), nil), host.Config{})
	require.ErrorIs(t, err, setup.ErrClosed)
}

// A plugin that fails to load fails New, naming it.
func TestNewFails(t *testing.T) {
	cfg := config.Default()
	cfg.Model = "offline"
	cfg.Plugins = append(cfg.Plugins, config.Plugin{Name: "gone", Path: filepath.Join(t.TempDir(), "gone.wasm"), Role: "compaction", Enabled: true})
	_, err := setup.New(context.Background(), cfg, &setup.Options{CacheDir: cacheDir})
	require.ErrorContains(t, err, `plugin "gone"`)
}
