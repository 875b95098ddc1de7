package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/llm"
)

// wasmBytes is the smallest valid WebAssembly module: magic and version.
const wasmBytes = "\x00asm\x01\x00\x00\x00"

// setup writes files (path → content) into a fresh working directory and
// returns it; "weir.yaml" is the configuration file.
func setup(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

func load(t *testing.T, dir string, env []string, flags ...config.Flag) (*config.Config, *config.Sources, error) {
	t.Helper()
	if env == nil {
		env = []string{}
	}
	return config.Load(config.Options{Dir: dir, UserConfigDir: filepath.Join(dir, "no-user-config"), Env: env, Flags: flags})
}

func TestDefaultsLoadClean(t *testing.T) {
	cfg, src, err := load(t, t.TempDir(), nil)
	require.NoError(t, err)
	require.Equal(t, config.Default(), cfg)
	require.Empty(t, src.File)
	require.Len(t, src.Searched, 2)
	for _, e := range src.Entries() {
		require.Equal(t, config.FromDefault, e.Source.Kind, e.Key)
	}
	e, ok := src.Entry("models.deepseek.contextWindow")
	require.True(t, ok)
	require.Equal(t, int64(128000), e.Value)
	e, _ = src.Entry("sandbox.callTimeout.compaction")
	require.Equal(t, "2m0s", e.Value)

	r, err := cfg.HostRoute("deepseek")
	require.NoError(t, err)
	require.Equal(t, host.Route{Provider: "deepseek", Model: "deepseek-chat", ContextWindow: 128000, MaxTokens: 8192}, r)
	withEffort, _, err := load(t, t.TempDir(), []string{"WEIR_MODELS__DEEPSEEK__REASONING_EFFORT=medium"})
	require.NoError(t, err)
	r, err = withEffort.HostRoute("deepseek")
	require.NoError(t, err)
	require.Equal(t, "medium", r.ReasoningEffort)
	_, err = cfg.HostRoute("nope")
	require.ErrorContains(t, err, `no route named "nope"`)
	require.Equal(t, []string{"system-prompt", "compaction-basic", "token-meter"},
		[]string{cfg.Plugins[0].Name, cfg.Plugins[1].Name, cfg.Plugins[2].Name})
	require.Equal(t, 120*time.Second, cfg.Sandbox.Timeout(config.RoleCompaction))
	require.Equal(t, config.CompactionBudget{MaxSummarizeCalls: 8, MaxSummarizeTokens: 200_000, WallClock: 180 * time.Second}, cfg.Sandbox.Compaction)
	require.Equal(t, config.Breaker{Failures: 3, WindowSteps: 10}, cfg.Sandbox.Breaker)
	require.Equal(t, 30*time.Second, cfg.Retry.MaxWait)
}

// TestClientConfig checks that a route's attempt bounds reach its llm
// client configuration, defaults and a file's values alike.
func TestClientConfig(t *testing.T) {
	dir := setup(t, map[string]string{"weir.yaml": "models:\n  local:\n    provider: p\n    model: m\n    baseURL: http://127.0.0.1:1/v1\n" +
		"    contextWindow: 1000\n    timeout: 90s\n    idleTimeout: 15s\n    maxResponseMiB: 2\n" +
		"  claude:\n    provider: anthropic\n    api: anthropic\n    model: claude-sonnet-4-5\n    baseURL: https://api.anthropic.com\n" +
		"    apiKeyEnv: ANTHROPIC_API_KEY\n    contextWindow: 200000\n    maxTokens: 8192\n" +
		"  gemini:\n    provider: google\n    api: gemini\n    model: gemini-2.5-flash\n    baseURL: https://generativelanguage.googleapis.com/v1beta\n" +
		"    apiKeyEnv: GEMINI_API_KEY\n    contextWindow: 1048576\n"})
	cfg, _, err := load(t, dir, nil)
	require.NoError(t, err)
	tests := []struct {
		route string
		want  llm.ClientConfig
	}{
		{"local", llm.ClientConfig{API: llm.APIOpenAI, BaseURL: "http://127.0.0.1:1/v1", APIKey: "k", Route: "local", Timeout: 90 * time.Second,
			IdleTimeout: 15 * time.Second, MaxResponseBytes: 2 << 20}},
		{"deepseek", llm.ClientConfig{API: llm.APIOpenAI, BaseURL: "https://api.deepseek.com", APIKey: "k", Route: "deepseek", Timeout: llm.DefaultTimeout,
			IdleTimeout: llm.DefaultIdleTimeout, MaxResponseBytes: llm.DefaultMaxResponseBytes}},
		{"claude", llm.ClientConfig{API: llm.APIAnthropic, BaseURL: "https://api.anthropic.com", APIKey: "k", Route: "claude", Timeout: llm.DefaultTimeout,
			IdleTimeout: llm.DefaultIdleTimeout, MaxResponseBytes: llm.DefaultMaxResponseBytes}},
		{"gemini", llm.ClientConfig{API: llm.APIGemini, BaseURL: "https://generativelanguage.googleapis.com/v1beta", APIKey: "k", Route: "gemini",
			Timeout: llm.DefaultTimeout, IdleTimeout: llm.DefaultIdleTimeout, MaxResponseBytes: llm.DefaultMaxResponseBytes}},
	}
	for _, tt := range tests {
		t.Run(tt.route, func(t *testing.T) {
			got, err := cfg.ClientConfig(tt.route, "k", nil)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	_, err = cfg.ClientConfig("nope", "", nil)
	require.ErrorContains(t, err, `no route named "nope"`)
	// Routes on the native-slot APIs are priced by the heuristic meter
	// unless they say otherwise: no exact tokenizer ships for them.
	require.Equal(t, "heuristic", cfg.Models["claude"].Tokenizer)
	require.Equal(t, "heuristic", cfg.Models["gemini"].Tokenizer)
}

// TestPrecedence sets keys in more and more sources and checks the value
// and the source Sources reports.
func TestPrecedence(t *testing.T) {
	const file = `
log:
  level: info
models:
  deepseek:
    maxTokens: 4096
`
	cases := []struct {
		name   string
		file   string
		env    []string
		flags  []config.Flag
		key    string
		value  any
		source config.Source // Name "FILE" stands for the file's path
	}{
		{"default", "", nil, nil, "log.level", "warn", config.Source{Kind: config.FromDefault}},
		{"file over default", file, nil, nil, "log.level", "info", config.Source{Kind: config.FromFile, Name: "FILE"}},
		{"env over file", file, []string{"WEIR_LOG_LEVEL=debug"}, nil, "log.level", "debug",
			config.Source{Kind: config.FromEnv, Name: "WEIR_LOG_LEVEL"}},
		{"flag over env", file, []string{"WEIR_LOG_LEVEL=debug"}, []config.Flag{{Name: "log-level", Key: "log.level", Value: "error"}},
			"log.level", "error", config.Source{Kind: config.FromFlag, Name: "log-level"}},
		{"untouched sibling stays default", file, []string{"WEIR_LOG_LEVEL=debug"}, nil, "log.format", "text",
			config.Source{Kind: config.FromDefault}},
		{"file field inside a default route", file, nil, nil, "models.deepseek.maxTokens", int64(4096),
			config.Source{Kind: config.FromFile, Name: "FILE"}},
		{"its other fields stay default", file, nil, nil, "models.deepseek.contextWindow", int64(128000),
			config.Source{Kind: config.FromDefault}},
		{"nested env name", file, []string{"WEIR_MODELS__DEEPSEEK__MAXTOKENS=2048"}, nil, "models.deepseek.maxTokens", int64(2048),
			config.Source{Kind: config.FromEnv, Name: "WEIR_MODELS__DEEPSEEK__MAXTOKENS"}},
		{"route flag over env", file, []string{"WEIR_MODELS__DEEPSEEK__MAXTOKENS=2048"},
			[]config.Flag{{Name: "max-tokens", Key: "route.maxTokens", Value: int64(1000)}},
			"models.deepseek.maxTokens", int64(1000), config.Source{Kind: config.FromFlag, Name: "max-tokens"}},
		{"route flag follows the selected route", "", []string{"WEIR_MODEL=offline"},
			[]config.Flag{{Name: "max-tokens", Key: "route.maxTokens", Value: "512"}},
			"models.offline.maxTokens", int64(512), config.Source{Kind: config.FromFlag, Name: "max-tokens"}},
		{"env model", "model: offline\n", []string{"WEIR_MODEL=deepseek"}, nil, "model", "deepseek",
			config.Source{Kind: config.FromEnv, Name: "WEIR_MODEL"}},
		{"duration from env", "", []string{"WEIR_SANDBOX__CALLTIMEOUT__COMPACTION=90s"}, nil, "sandbox.callTimeout.compaction", "1m30s",
			config.Source{Kind: config.FromEnv, Name: "WEIR_SANDBOX__CALLTIMEOUT__COMPACTION"}},
		{"plugin field by name from env", "", []string{"WEIR_PLUGINS__TOKEN_METER__ENABLED=false"}, nil, "plugins[2].enabled", false,
			config.Source{Kind: config.FromEnv, Name: "WEIR_PLUGINS__TOKEN_METER__ENABLED"}},
		{"plugin field from flag", "", nil, []config.Flag{{Name: "no-compaction", Key: "plugins.compaction-basic.enabled", Value: false}},
			"plugins[1].enabled", false, config.Source{Kind: config.FromFlag, Name: "no-compaction"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{}
			if c.file != "" {
				files["weir.yaml"] = c.file
			}
			dir := setup(t, files)
			_, src, err := load(t, dir, c.env, c.flags...)
			require.NoError(t, err)
			e, ok := src.Entry(c.key)
			require.True(t, ok, c.key)
			require.Equal(t, c.value, e.Value)
			want := c.source
			if want.Name == "FILE" {
				want.Name = filepath.Join(dir, "weir.yaml")
			}
			require.Equal(t, want, e.Source)
			got, ok := src.Of(c.key)
			require.True(t, ok)
			require.Equal(t, want, got)
		})
	}
}

func TestEnvNames(t *testing.T) {
	cases := []struct {
		env   string
		key   string
		value any
	}{
		{"WEIR_LOG_LEVEL=debug", "log.level", "debug"},
		{"WEIR_LOG__LEVEL=debug", "log.level", "debug"},
		{"WEIR_log_format=json", "log.format", "json"},
		{"WEIR_SESSIONS_DIR=/tmp/s", "sessions.dir", "/tmp/s"},
		{"WEIR_SANDBOX_MEMORYLIMITMIB=128", "sandbox.memoryLimitMiB", int64(128)},
		{"WEIR_SANDBOX_MEMORY_LIMIT_MIB=128", "sandbox.memoryLimitMiB", int64(128)},
		{"WEIR_SANDBOX__STEP_BUDGET=5m", "sandbox.stepBudget", "5m0s"},
		{"WEIR_SANDBOX__COMPACTION__MAX_SUMMARIZE_CALLS=2", "sandbox.compaction.maxSummarizeCalls", int64(2)},
		{"WEIR_SANDBOX__COMPACTION__WALLCLOCK=10m", "sandbox.compaction.wallClock", "10m0s"},
		{"WEIR_SANDBOX__BREAKER__WINDOW_STEPS=20", "sandbox.breaker.windowSteps", int64(20)},
		{"WEIR_RETRY_MAXWAIT=2m", "retry.maxWait", "2m0s"},
		{"WEIR_MODELS__DEEPSEEK__BASEURL=http://localhost:8080", "models.deepseek.baseURL", "http://localhost:8080"},
		{"WEIR_MODELS__DEEPSEEK__CONTEXT_WINDOW=64000", "models.deepseek.contextWindow", int64(64000)},
		{"WEIR_MODELS_OFFLINE__SYSTEM_PROMPT_UPDATE=in-history", "models.offline.systemPromptUpdate", "in-history"},
		{"WEIR_PLUGINS__COMPACTION_BASIC__CONFIG={\"thresholdRatio\":0.7}", "plugins[1].config", `{"thresholdRatio":0.7}`},
	}
	for _, c := range cases {
		t.Run(c.env, func(t *testing.T) {
			_, src, err := load(t, t.TempDir(), []string{c.env, "WEIR_LONG=1", "WEIR_WAZERO_CACHE=/x", "HOME=/h"})
			require.NoError(t, err)
			e, ok := src.Entry(c.key)
			require.True(t, ok)
			if v, isJSON := e.Value.(interface{ String() string }); isJSON && c.key == "plugins[1].config" {
				require.Equal(t, c.value, v.String())
			} else {
				require.Equal(t, c.value, e.Value)
			}
			require.Equal(t, config.FromEnv, e.Source.Kind)
			require.Equal(t, strings.SplitN(c.env, "=", 2)[0], e.Source.Name)
		})
	}
	t.Run("a new route from the environment", func(t *testing.T) {
		cfg, _, err := load(t, t.TempDir(), []string{"WEIR_MODELS__LOCAL__PROVIDER=ollama", "WEIR_MODELS__LOCAL__MODEL=qwen3",
			"WEIR_MODELS__LOCAL__BASEURL=http://localhost:11434/v1", "WEIR_MODELS__LOCAL__CONTEXTWINDOW=32768", "WEIR_MODEL=local"})
		require.NoError(t, err)
		require.Equal(t, "local", cfg.Model)
		require.Equal(t, &config.Route{Provider: "ollama", Model: "qwen3", API: "openai", BaseURL: "http://localhost:11434/v1",
			ContextWindow: 32768, Tokenizer: "heuristic", SystemPromptUpdate: "replace",
			Timeout: 10 * time.Minute, IdleTimeout: 2 * time.Minute, MaxResponseMiB: 16}, cfg.Models["local"])
	})
	t.Run("an empty variable is unset", func(t *testing.T) {
		cfg, _, err := load(t, t.TempDir(), []string{"WEIR_LOG_LEVEL="})
		require.NoError(t, err)
		require.Equal(t, "warn", cfg.Log.Level)
	})
}

// problem asserts that err holds a problem with exactly that key whose
// message contains every fragment, and returns it.
func problem(t *testing.T, err error, key string, fragments ...string) *config.Problem {
	t.Helper()
	var errs config.Errors
	require.True(t, errors.As(err, &errs), "want config.Errors, got %v", err)
	for _, p := range errs {
		if p.Key != key {
			continue
		}
		ok := true
		for _, f := range fragments {
			ok = ok && strings.Contains(p.Error(), f)
		}
		if ok {
			require.True(t, strings.HasPrefix(p.Error(), key+": ") || key == "", p.Error())
			return p
		}
	}
	require.Failf(t, "problem not found", "key %q with %q in:\n%v", key, fragments, err)
	return nil
}

func TestKnownContextWindow(t *testing.T) {
	cases := []struct {
		model string
		want  int64
	}{
		{"claude-sonnet-4-5", 200000},
		{"claude-sonnet-4-5-20250929", 200000},
		{"gemini-2.5-pro", 1048576},
		{"deepseek-chat", 128000},
		{"gpt-4o", 128000},
	}
	for _, tc := range cases {
		t.Run(tc.model, func(t *testing.T) {
			dir := setup(t, map[string]string{"weir.yaml": "model: r\nmodels:\n  r:\n    provider: p\n    model: " + tc.model +
				"\n    baseURL: http://h\n    maxTokens: 1000\n"})
			cfg, _, err := load(t, dir, nil)
			require.NoError(t, err)
			r, err := cfg.HostRoute("r")
			require.NoError(t, err)
			require.Equal(t, tc.want, r.ContextWindow, "a route with no contextWindow takes its model's")
		})
	}
	dir := setup(t, map[string]string{"weir.yaml": "model: r\nmodels:\n  r:\n    provider: p\n    model: gpt-4o\n    baseURL: http://h\n    contextWindow: 64000\n"})
	cfg, _, err := load(t, dir, nil)
	require.NoError(t, err)
	r, err := cfg.HostRoute("r")
	require.NoError(t, err)
	require.Equal(t, int64(64000), r.ContextWindow, "a given contextWindow wins over the known one")
}

func TestValidation(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		env   []string
		flags []config.Flag
		key   string
		want  []string
	}{
		{"unknown plugin key", map[string]string{"weir.yaml": "plugins:\n  - name: token-meter\n  - name: x\n    rol: compaction\n"},
			nil, nil, "plugins[1].rol", []string{`unknown key (did you mean "role"?)`, "weir.yaml"}},
		{"unknown top-level key", map[string]string{"weir.yaml": "modle: offline\n"}, nil, nil,
			"modle", []string{`unknown key (did you mean "model"?)`}},
		{"unknown key, wrong case", map[string]string{"weir.yaml": "models:\n  deepseek:\n    baseUrl: http://x\n"}, nil, nil,
			"models.deepseek.baseUrl", []string{`did you mean "baseURL"?`}},
		{"unknown key deep in the prompt", map[string]string{"weir.yaml": "prompt:\n  perModel:\n    offline:\n      sections:\n        - key: a\n          txt: b\n"},
			nil, nil, "prompt.perModel.offline.sections[0].txt", []string{`did you mean "text"?`}},
		{"int of the wrong type", map[string]string{"weir.yaml": "models:\n  deepseek:\n    contextWindow: big\n"}, nil, nil,
			"models.deepseek.contextWindow", []string{`must be a whole number, got "big"`}},
		{"list of the wrong type", map[string]string{"weir.yaml": "plugins: 5\n"}, nil, nil,
			"plugins", []string{"must be a list"}},
		{"duration without unit", map[string]string{"weir.yaml": "sandbox:\n  callTimeout:\n    prompt: 5\n"}, nil, nil,
			"sandbox.callTimeout.prompt", []string{"no unit", `"5s"`}},
		{"bool of the wrong type", map[string]string{"weir.yaml": "plugins:\n  - name: token-meter\n    enabled: maybe\n"}, nil, nil,
			"plugins[0].enabled", []string{"must be true or false"}},
		{"null value", map[string]string{"weir.yaml": "model:\n"}, nil, nil, "model", []string{"has no value"}},
		{"section group of the wrong type", map[string]string{"weir.yaml": "log: loud\n"}, nil, nil, "log", []string{"must be a mapping"}},
		{"env value of the wrong type", nil, []string{"WEIR_MODELS__DEEPSEEK__CONTEXTWINDOW=abc"}, nil,
			"models.deepseek.contextWindow", []string{`must be a whole number, got "abc"`, "$WEIR_MODELS__DEEPSEEK__CONTEXTWINDOW"}},
		{"flag value of the wrong type", nil, nil, []config.Flag{{Name: "context-window", Key: "route.contextWindow", Value: true}},
			"models.deepseek.contextWindow", []string{"must be a whole number", "flag --context-window"}},
		{"unknown env key", nil, []string{"WEIR_LOG_LEVLE=debug"}, nil, "WEIR_LOG_LEVLE", []string{"matches no key under log", `did you mean "level"?`}},
		{"env into a list", nil, []string{"WEIR_PROMPT__SECTIONS=x"}, nil, "WEIR_PROMPT__SECTIONS", []string{"is a list; set it in the configuration file"}},
		{"env naming a group", nil, []string{"WEIR_LOG=debug"}, nil, "WEIR_LOG", []string{"group of keys", "level, format"}},
		{"env unknown plugin", nil, []string{"WEIR_PLUGINS__NOPE__ENABLED=false"}, nil, "WEIR_PLUGINS__NOPE__ENABLED", []string{`no plugin named "nope"`}},
		{"env set twice", nil, []string{"WEIR_LOG_LEVEL=debug", "WEIR_LOG__LEVEL=info"}, nil, "log.level", []string{"also set by $"}},
		{"unknown flag key", nil, nil, []config.Flag{{Name: "x", Key: "log.levle", Value: "debug"}}, "log.levle",
			[]string{`unknown key "levle" (did you mean "level"?)`, "flag --x"}},
		{"unknown reasoning effort", map[string]string{"weir.yaml": "models:\n  deepseek:\n    reasoningEffort: hihg\n"}, nil, nil,
			"models.deepseek.reasoningEffort", []string{`"hihg" is not a reasoning effort (did you mean "high"?)`}},
		{"route without provider", map[string]string{"weir.yaml": "models:\n  local:\n    model: m\n    baseURL: http://h\n    contextWindow: 10\n"},
			nil, nil, "models.local.provider", []string{"is required"}},
		{"route without model", map[string]string{"weir.yaml": "models:\n  local:\n    provider: p\n    baseURL: http://h\n    contextWindow: 10\n"},
			nil, nil, "models.local.model", []string{"is required"}},
		{"route without base URL", map[string]string{"weir.yaml": "models:\n  local:\n    provider: p\n    model: m\n    contextWindow: 10\n"},
			nil, nil, "models.local.baseURL", []string{"is required for provider \"p\""}},
		{"base URL not a URL", map[string]string{"weir.yaml": "models:\n  deepseek:\n    baseURL: api.deepseek.com\n"},
			nil, nil, "models.deepseek.baseURL", []string{"is not an http(s) URL"}},
		{"section without key", map[string]string{"weir.yaml": "prompt:\n  sections:\n    - text: hi\n"}, nil, nil,
			"prompt.sections[0].key", []string{"is required"}},
		{"section without text", map[string]string{"weir.yaml": "prompt:\n  sections:\n    - key: a\n      text: hi\n    - key: b\n"}, nil, nil,
			"prompt.sections[1].text", []string{"is required: give the section's text, or a file"}},
		{"section with text and file", map[string]string{"weir.yaml": "prompt:\n  sections:\n    - key: a\n      text: hi\n      file: a.md\n", "a.md": "x"},
			nil, nil, "prompt.sections[0].file", []string{"keep one of text and file"}},
		{"default model not configured", map[string]string{"weir.yaml": "model: deepseak\n"}, nil, nil,
			"model", []string{`"deepseak" is not a configured route (did you mean "deepseek"?)`}},
		{"default model from env not configured", nil, []string{"WEIR_MODEL=gpt"}, nil,
			"model", []string{`"gpt" is not a configured route`, "$WEIR_MODEL"}},
		{"no context window for an unknown model", map[string]string{"weir.yaml": "models:\n  local:\n    provider: p\n    model: qwen3:8b\n    baseURL: http://h\n"}, nil, nil,
			"models.local.contextWindow", []string{`is required for model "qwen3:8b", whose context window Weir does not know`}},
		{"negative context window", map[string]string{"weir.yaml": "models:\n  deepseek:\n    contextWindow: -1\n"}, nil, nil,
			"models.deepseek.contextWindow", []string{"must be a positive number of tokens, got -1"}},
		{"max tokens not below the window", map[string]string{"weir.yaml": "models:\n  deepseek:\n    contextWindow: 8192\n"}, nil, nil,
			"models.deepseek.maxTokens", []string{"8192 must be below contextWindow 8192", "(default value)"}},
		{"negative max tokens", map[string]string{"weir.yaml": "models:\n  deepseek:\n    maxTokens: -1\n"}, nil, nil,
			"models.deepseek.maxTokens", []string{"must not be negative"}},
		{"unknown tokenizer", map[string]string{"weir.yaml": "models:\n  deepseek:\n    tokenizer: o200\n"}, nil, nil,
			"models.deepseek.tokenizer", []string{`"o200" is not a tokenizer (did you mean "o200k"?)`}},
		{"unknown prompt update mode", map[string]string{"weir.yaml": "models:\n  offline:\n    systemPromptUpdate: append\n"}, nil, nil,
			"models.offline.systemPromptUpdate", []string{`"append" is not a prompt update mode`, `"replace" or "in-history"`}},
		{"unknown api", map[string]string{"weir.yaml": "models:\n  deepseek:\n    api: antropic\n"}, nil, nil,
			"models.deepseek.api", []string{`"antropic" is not an API (did you mean "anthropic"?)`}},
		{"anthropic route in history", map[string]string{"weir.yaml": "models:\n  claude:\n    provider: anthropic\n    api: anthropic\n    model: claude-sonnet-4-5\n" +
			"    baseURL: https://api.anthropic.com\n    contextWindow: 200000\n    systemPromptUpdate: in-history\n"}, nil, nil,
			"models.claude.systemPromptUpdate", []string{`"in-history" cannot be used with api "anthropic"`, "no system role inside them", `use "replace"`}},
		{"gemini route in history", map[string]string{"weir.yaml": "models:\n  gem:\n    provider: google\n    api: gemini\n    model: gemini-2.5-flash\n" +
			"    baseURL: https://generativelanguage.googleapis.com/v1beta\n    contextWindow: 1048576\n    systemPromptUpdate: in-history\n"}, nil, nil,
			"models.gem.systemPromptUpdate", []string{`"in-history" cannot be used with api "gemini"`, "Gemini API has a single system slot"}},
		{"anthropic route without base URL", map[string]string{"weir.yaml": "models:\n  claude:\n    provider: anthropic\n    api: anthropic\n    model: m\n    contextWindow: 10\n"},
			nil, nil, "models.claude.baseURL", []string{"Anthropic Messages API base, e.g. https://api.anthropic.com"}},
		{"zero route timeout", map[string]string{"weir.yaml": "models:\n  deepseek:\n    timeout: 0s\n"}, nil, nil,
			"models.deepseek.timeout", []string{"must be a positive duration, got 0s", "deadline of one model attempt"}},
		{"negative idle timeout", nil, []string{"WEIR_MODELS__DEEPSEEK__IDLE_TIMEOUT=-1s"}, nil,
			"models.deepseek.idleTimeout", []string{"must be a positive duration, got -1s", "without progress", "$WEIR_MODELS__DEEPSEEK__IDLE_TIMEOUT"}},
		{"idle timeout longer than the timeout", map[string]string{"weir.yaml": "models:\n  deepseek:\n    timeout: 1m\n    idleTimeout: 5m\n"}, nil, nil,
			"models.deepseek.idleTimeout", []string{"5m0s is longer than timeout 1m0s", "lower idleTimeout or raise timeout"}},
		{"idle timeout without unit", map[string]string{"weir.yaml": "models:\n  offline:\n    idleTimeout: 30\n"}, nil, nil,
			"models.offline.idleTimeout", []string{"no unit", `"30s"`}},
		{"zero response cap", map[string]string{"weir.yaml": "models:\n  deepseek:\n    maxResponseMiB: 0\n"}, nil, nil,
			"models.deepseek.maxResponseMiB", []string{"must be between 1 and 1024, got 0"}},
		{"response cap too large", map[string]string{"weir.yaml": "models:\n  deepseek:\n    maxResponseMiB: 4096\n"}, nil, nil,
			"models.deepseek.maxResponseMiB", []string{"must be between 1 and 1024, got 4096"}},
		{"api key instead of its variable", map[string]string{"weir.yaml": "models:\n  deepseek:\n    apiKeyEnv: sk-12345\n"}, nil, nil,
			"models.deepseek.apiKeyEnv", []string{"never the key itself"}},
		{"unknown role", map[string]string{"weir.yaml": "plugins:\n  - name: mine\n    path: p.wasm\n    role: compactor\n", "p.wasm": wasmBytes},
			nil, nil, "plugins[0].role", []string{`"compactor" is not a role (did you mean "compaction"?)`}},
		{"missing role", map[string]string{"weir.yaml": "plugins:\n  - name: mine\n    path: p.wasm\n", "p.wasm": wasmBytes},
			nil, nil, "plugins[0].role", []string{"is required"}},
		{"built-in with another role", map[string]string{"weir.yaml": "plugins:\n  - name: token-meter\n    role: compaction\n"},
			nil, nil, "plugins[0].role", []string{`has role "token-meter"`}},
		{"plugin path missing", map[string]string{"weir.yaml": "plugins:\n  - name: mine\n    path: gone.wasm\n    role: compaction\n"},
			nil, nil, "plugins[0].path", []string{"gone.wasm does not exist"}},
		{"plugin path a directory", map[string]string{"weir.yaml": "plugins:\n  - name: mine\n    path: d\n    role: compaction\n", "d/x": ""},
			nil, nil, "plugins[0].path", []string{"is not a file"}},
		{"plugin path not wasm", map[string]string{"weir.yaml": "plugins:\n  - name: mine\n    path: p.wasm\n    role: compaction\n", "p.wasm": "#!/bin/sh\n"},
			nil, nil, "plugins[0].path", []string{"is not a WebAssembly module"}},
		{"third-party plugin without path", map[string]string{"weir.yaml": "plugins:\n  - name: mine\n    role: compaction\n"},
			nil, nil, "plugins[0].path", []string{`"mine" is not a first-party plugin`}},
		{"plugin without name", map[string]string{"weir.yaml": "plugins:\n  - role: compaction\n"},
			nil, nil, "plugins[0].name", []string{"is required"}},
		{"duplicate plugin names", map[string]string{"weir.yaml": "plugins:\n  - name: token-meter\n  - name: token-meter\n"},
			nil, nil, "plugins[1].name", []string{`"token-meter" is listed twice (also plugins[0])`}},
		{"two enabled prompt plugins", map[string]string{"weir.yaml": "plugins:\n  - name: mine\n    path: p.wasm\n    role: system-prompt\n", "p.wasm": wasmBytes},
			nil, nil, "plugins[0].enabled", []string{`a second enabled system-prompt plugin ("system-prompt" is one already)`}},
		{"bad compaction-basic config", map[string]string{"weir.yaml": "plugins:\n  - name: compaction-basic\n    config:\n      thresholdRatio: 2\n"},
			nil, nil, "plugins[0].config", []string{"compaction config", "thresholdRatio"}},
		{"summarize route not configured", map[string]string{"weir.yaml": "plugins:\n  - name: compaction-basic\n    route: ofline\n"},
			nil, nil, "plugins[0].route", []string{`"ofline" is not a configured route (did you mean "offline"?)`}},
		{"summarize route on a meter", map[string]string{"weir.yaml": "plugins:\n  - name: token-meter\n    route: offline\n"},
			nil, nil, "plugins[0].route", []string{`is for compaction plugins, whose summarize calls it routes; "token-meter" has role "token-meter"`}},
		{"unknown compaction-basic key", map[string]string{"weir.yaml": "plugins:\n  - name: compaction-basic\n    config:\n      treshold: 2\n"},
			nil, nil, "plugins[0].config", []string{"treshold"}},
		{"section file unreadable", map[string]string{"weir.yaml": "prompt:\n  sections:\n    - key: a\n      file: missing.md\n"},
			nil, nil, "prompt.sections[0].file", []string{"cannot be read", "missing.md"}},
		{"duplicate section keys", map[string]string{"weir.yaml": "prompt:\n  sections:\n    - key: base\n      text: a\n    - key: base\n      text: b\n"},
			nil, nil, "prompt.sections[1].key", []string{`"base" is used twice (also prompt.sections[0])`}},
		{"duplicate keys in an override", map[string]string{"weir.yaml": "prompt:\n  perModel:\n    offline:\n      sections:\n        - {key: s, text: a}\n        - {key: s, text: b}\n"},
			nil, nil, "prompt.perModel.offline.sections[1].key", []string{"is used twice"}},
		{"override for an unknown route", map[string]string{"weir.yaml": "prompt:\n  perModel:\n    ofline:\n      sections:\n        - {key: s, text: a}\n"},
			nil, nil, "prompt.perModel.ofline", []string{`"ofline" is not a configured route (did you mean "offline"?)`}},
		{"route name with a dot", map[string]string{"weir.yaml": "models:\n  gpt.4:\n    provider: x\n"}, nil, nil,
			"models.gpt.4", []string{"is not a valid name"}},
		{"memory limit too small", map[string]string{"weir.yaml": "sandbox:\n  memoryLimitMiB: 1\n"}, nil, nil,
			"sandbox.memoryLimitMiB", []string{"between 4 and 4096"}},
		{"step budget below a call timeout", map[string]string{"weir.yaml": "sandbox:\n  stepBudget: 10s\n"}, nil, nil,
			"sandbox.stepBudget", []string{"shorter than callTimeout.compaction 2m0s"}},
		{"zero call timeout", map[string]string{"weir.yaml": "sandbox:\n  callTimeout:\n    meter: 0s\n"}, nil, nil,
			"sandbox.callTimeout.meter", []string{"must be a positive duration"}},
		{"no summarize calls", map[string]string{"weir.yaml": "sandbox:\n  compaction:\n    maxSummarizeCalls: 0\n"}, nil, nil,
			"sandbox.compaction.maxSummarizeCalls", []string{"between 1 and 1000, got 0"}},
		{"no summarize tokens", map[string]string{"weir.yaml": "sandbox:\n  compaction:\n    maxSummarizeTokens: -5\n"}, nil, nil,
			"sandbox.compaction.maxSummarizeTokens", []string{"positive number of tokens, got -5"}},
		{"compaction wall clock below the call timeout", map[string]string{"weir.yaml": "sandbox:\n  compaction:\n    wallClock: 1m\n"}, nil, nil,
			"sandbox.compaction.wallClock", []string{"shorter than callTimeout.compaction 2m0s"}},
		{"breaker without failures", nil, []string{"WEIR_SANDBOX__BREAKER__FAILURES=0"}, nil,
			"sandbox.breaker.failures", []string{"at least 1"}},
		{"breaker without a window", map[string]string{"weir.yaml": "sandbox:\n  breaker:\n    windowSteps: 0\n"}, nil, nil,
			"sandbox.breaker.windowSteps", []string{"at least 1 step"}},
		{"zero retry wait", map[string]string{"weir.yaml": "retry:\n  maxWait: 0s\n"}, nil, nil,
			"retry.maxWait", []string{"must be a positive duration"}},
		{"empty sessions dir", map[string]string{"weir.yaml": "sessions:\n  dir: ''\n"}, nil, nil,
			"sessions.dir", []string{"is required"}},
		{"unknown log level", map[string]string{"weir.yaml": "log:\n  level: verbose\n"}, nil, nil,
			"log.level", []string{`"verbose" is not a log level`}},
		{"unknown log format", nil, []string{"WEIR_LOG_FORMAT=xml"}, nil,
			"log.format", []string{`"xml" is not a log format; use "text" or "json"`}},
		{"invalid YAML", map[string]string{"weir.yaml": "model: [\n"}, nil, nil, "", []string{"weir.yaml: is not valid YAML"}},
		{"top level not a mapping", map[string]string{"weir.yaml": "- model\n"}, nil, nil, "", []string{"the top level must be a mapping"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := setup(t, c.files)
			cfg, src, err := load(t, dir, c.env, c.flags...)
			require.Error(t, err)
			require.Nil(t, cfg)
			require.Nil(t, src)
			problem(t, err, c.key, c.want...)
		})
	}
}

func TestTypeErrorIsNotReportedTwice(t *testing.T) {
	dir := setup(t, map[string]string{"weir.yaml": "models:\n  local:\n    provider: 5\n    model: m\n    baseURL: http://h\n    contextWindow: x\n"})
	_, _, err := load(t, dir, nil)
	var errs config.Errors
	require.ErrorAs(t, err, &errs)
	require.Len(t, errs, 2, "%v", err)
	problem(t, err, "models.local.provider", "must be a string, got 5")
	problem(t, err, "models.local.contextWindow", `must be a whole number, got "x"`)
}

func TestSeveralErrorsReportedTogether(t *testing.T) {
	dir := setup(t, map[string]string{"weir.yaml": `
model: nope
modle: x
log:
  level: loud
models:
  deepseek:
    contextWindow: -5
plugins:
  - name: mine
    path: nowhere.wasm
    role: compaction
`})
	_, _, err := load(t, dir, []string{"WEIR_SANDBOX_MEMORY_LIMIT_MIB=lots"})
	var errs config.Errors
	require.ErrorAs(t, err, &errs)
	require.Len(t, errs, 6, "%v", err)
	problem(t, err, "modle", "unknown key")
	problem(t, err, "sandbox.memoryLimitMiB", "whole number")
	problem(t, err, "model", `"nope" is not a configured route`)
	problem(t, err, "models.deepseek.contextWindow", "positive")
	problem(t, err, "plugins[0].path", "does not exist")
	problem(t, err, "log.level", "not a log level")
	require.Len(t, strings.Split(err.Error(), "\n"), 6)
}

func TestEmptyFileIsDefaults(t *testing.T) {
	dir := setup(t, map[string]string{"weir.yaml": "# nothing yet\nlog:\nplugins:\n"})
	cfg, src, err := load(t, dir, nil)
	require.NoError(t, err)
	require.Equal(t, config.Default(), cfg)
	require.Equal(t, filepath.Join(dir, "weir.yaml"), src.File)
}

func TestExplicitFile(t *testing.T) {
	dir := setup(t, map[string]string{"weir.yaml": "log:\n  level: info\n", "other/custom.yaml": "log:\n  level: error\n"})
	cfg, src, err := config.Load(config.Options{Dir: dir, File: "other/custom.yaml", Env: []string{}})
	require.NoError(t, err)
	require.Equal(t, "error", cfg.Log.Level)
	require.Equal(t, filepath.Join(dir, "other", "custom.yaml"), src.File)

	_, _, err = config.Load(config.Options{Dir: dir, File: "absent.yaml", Env: []string{}})
	p := problem(t, err, "", "does not exist")
	require.Equal(t, filepath.Join(dir, "absent.yaml"), p.Source.Name)
}

func TestSearchOrder(t *testing.T) {
	user := setup(t, map[string]string{"weir/weir.yaml": "log:\n  level: debug\n"})
	work := setup(t, map[string]string{"weir.yaml": "log:\n  level: info\n"})
	empty := t.TempDir()

	cfg, src, err := config.Load(config.Options{Dir: work, UserConfigDir: user, Env: []string{}})
	require.NoError(t, err)
	require.Equal(t, "info", cfg.Log.Level)
	require.Equal(t, filepath.Join(work, "weir.yaml"), src.File)

	cfg, src, err = config.Load(config.Options{Dir: empty, UserConfigDir: user, Env: []string{}})
	require.NoError(t, err)
	require.Equal(t, "debug", cfg.Log.Level)
	require.Equal(t, filepath.Join(user, "weir", "weir.yaml"), src.File)
	require.Equal(t, []string{filepath.Join(empty, "weir.yaml"), filepath.Join(user, "weir", "weir.yaml")}, src.Searched)
}

func TestSectionsAndOverrides(t *testing.T) {
	dir := setup(t, map[string]string{
		"conf/weir.yaml": `
prompt:
  sections:
    - key: base
      file: prompts/base.md
    - key: style
      text: Be brief.
  perModel:
    offline:
      sections:
        - key: style
          text: Answer like a pirate.
        - key: tools
          text: Use list_files.
`,
		"conf/prompts/base.md": "You are Weir's test assistant.\n",
	})
	cfg, src, err := config.Load(config.Options{Dir: dir, File: "conf/weir.yaml", Env: []string{}})
	require.NoError(t, err)
	base := filepath.Join(dir, "conf", "prompts", "base.md")
	require.Equal(t, config.Section{Key: "base", Text: "You are Weir's test assistant.\n", File: base}, cfg.Prompt.Sections[0])
	require.Equal(t, []host.Section{{Key: "base", Text: "You are Weir's test assistant.\n"}, {Key: "style", Text: "Be brief."}},
		cfg.Sections("deepseek"))
	require.Equal(t, []host.Section{{Key: "base", Text: "You are Weir's test assistant.\n"}, {Key: "style", Text: "Answer like a pirate."},
		{Key: "tools", Text: "Use list_files."}}, cfg.Sections("offline"))

	e, ok := src.Entry("prompt.sections[0].file")
	require.True(t, ok)
	require.Equal(t, base, e.Value)
	require.Equal(t, config.FromFile, e.Source.Kind)
	_, ok = src.Entry("prompt.sections[0].text")
	require.False(t, ok, "a file section lists its file, not its text")
	e, _ = src.Entry("prompt.perModel.offline.sections[1].text")
	require.Equal(t, "Use list_files.", e.Value)
}

func TestPluginsMergeByName(t *testing.T) {
	dir := setup(t, map[string]string{
		"weir.yaml": `
plugins:
  - name: extra
    path: plugins/extra.wasm
    role: compaction
    config:
      depth: 2
      labels: [a, b]
  - name: compaction-basic
    config:
      thresholdRatio: 0.7
  - name: token-meter
    enabled: false
`,
		"plugins/extra.wasm": wasmBytes,
	})
	cfg, src, err := load(t, dir, nil)
	require.NoError(t, err)
	require.Len(t, cfg.Plugins, 4)
	require.Equal(t, []string{"system-prompt", "compaction-basic", "token-meter", "extra"},
		[]string{cfg.Plugins[0].Name, cfg.Plugins[1].Name, cfg.Plugins[2].Name, cfg.Plugins[3].Name})
	extra, ok := cfg.Plugin("extra")
	require.True(t, ok)
	require.Equal(t, config.Plugin{Name: "extra", Path: filepath.Join(dir, "plugins", "extra.wasm"), Role: "compaction", Enabled: true,
		Config: []byte(`{"depth":2,"labels":["a","b"]}`)}, extra)
	require.False(t, extra.Builtin())
	require.JSONEq(t, `{"thresholdRatio":0.7}`, string(cfg.Plugins[1].Config))
	require.Equal(t, []config.Plugin{cfg.Plugins[1], cfg.Plugins[3]}, cfg.Enabled(config.RoleCompaction))
	require.Empty(t, cfg.Enabled(config.RoleTokenMeter))

	// The effective key is the merged position; the source names the file's.
	e, _ := src.Entry("plugins[3].path")
	require.Equal(t, config.Source{Kind: config.FromFile, Name: filepath.Join(dir, "weir.yaml"), Key: "plugins[0].path"}, e.Source)
	e, _ = src.Entry("plugins[3].enabled")
	require.Equal(t, config.FromDefault, e.Source.Kind, "an unset field of a new plugin is the default")
	e, _ = src.Entry("plugins[2].role")
	require.Equal(t, config.FromDefault, e.Source.Kind)
	e, _ = src.Entry("plugins[2].enabled")
	require.Equal(t, config.Source{Kind: config.FromFile, Name: filepath.Join(dir, "weir.yaml")}, e.Source)
}

func TestFlagsFrom(t *testing.T) {
	fs := newFlagSet()
	require.NoError(t, fs.Parse([]string{"--max-tokens", "100", "--verbose"}))
	flags := config.FlagsFrom(fs, map[string]string{"max-tokens": "route.maxTokens", "base-url": "route.baseURL", "verbose": "log.level"})
	require.Equal(t, []config.Flag{{Name: "max-tokens", Key: "route.maxTokens", Value: int64(100)},
		{Name: "verbose", Key: "log.level", Value: true}}, flags)
}

func TestMissingFieldIsBlamedOnTheEntrysSource(t *testing.T) {
	_, _, err := load(t, t.TempDir(), []string{"WEIR_MODELS__LOCAL__PROVIDER=ollama", "WEIR_MODELS__LOCAL__CONTEXTWINDOW=100",
		"WEIR_MODELS__LOCAL__BASEURL=http://h"})
	p := problem(t, err, "models.local.model", "is required")
	require.Equal(t, config.Source{Kind: config.FromEnv, Name: "WEIR_MODELS__LOCAL__BASEURL"}, p.Source)
}

func TestEnvPathsStartAtTheWorkingDirectory(t *testing.T) {
	dir := setup(t, map[string]string{
		"conf/weir.yaml":   "plugins:\n  - name: mine\n    path: mine.wasm\n    role: compaction\n",
		"conf/mine.wasm":   wasmBytes,
		"build/other.wasm": wasmBytes,
	})
	cfg, src, err := config.Load(config.Options{Dir: dir, File: "conf/weir.yaml", Env: []string{}})
	require.NoError(t, err)
	p, _ := cfg.Plugin("mine")
	require.Equal(t, filepath.Join(dir, "conf", "mine.wasm"), p.Path)
	e, _ := src.Entry("plugins[3].path")
	require.Equal(t, config.FromFile, e.Source.Kind)

	cfg, src, err = config.Load(config.Options{Dir: dir, File: "conf/weir.yaml", Env: []string{"WEIR_PLUGINS__MINE__PATH=build/other.wasm"}})
	require.NoError(t, err)
	p, _ = cfg.Plugin("mine")
	require.Equal(t, filepath.Join(dir, "build", "other.wasm"), p.Path)
	e, _ = src.Entry("plugins[3].path")
	require.Equal(t, config.Source{Kind: config.FromEnv, Name: "WEIR_PLUGINS__MINE__PATH"}, e.Source)
}

func TestFileListReplacesDefaultSections(t *testing.T) {
	dir := setup(t, map[string]string{"weir.yaml": "prompt:\n  sections:\n    - key: only\n      text: Just this.\n"})
	cfg, _, err := load(t, dir, nil)
	require.NoError(t, err)
	require.Equal(t, []config.Section{{Key: "only", Text: "Just this."}}, cfg.Prompt.Sections)
}

func BenchmarkLoad(b *testing.B) {
	dir := b.TempDir()
	yaml := `
model: offline
models:
  deepseek:
    maxTokens: 4096
prompt:
  sections:
    - key: base
      text: You are a test.
plugins:
  - name: compaction-basic
    config:
      thresholdRatio: 0.7
`
	if err := os.WriteFile(filepath.Join(dir, "weir.yaml"), []byte(yaml), 0o644); err != nil {
		b.Fatal(err)
	}
	opts := config.Options{Dir: dir, UserConfigDir: dir, Env: []string{"WEIR_LOG_LEVEL=debug", "WEIR_MODELS__OFFLINE__MAXTOKENS=512"}}
	for b.Loop() {
		if _, _, err := config.Load(opts); err != nil {
			b.Fatal(err)
		}
	}
}

func TestPromptData(t *testing.T) {
	dir := setup(t, map[string]string{
		"conf/weir.yaml": "prompt:\n  data:\n    - key: instructions\n      file: AGENTS.md\n    - key: team\n      text: platform\n",
		"conf/AGENTS.md": "## Style\nUse tabs.\n",
	})
	cfg, _, err := config.Load(config.Options{Dir: dir, File: "conf/weir.yaml", Env: []string{}})
	require.NoError(t, err)
	require.Equal(t, []config.Section{
		{Key: "instructions", Text: "## Style\nUse tabs.\n", File: filepath.Join(dir, "conf", "AGENTS.md")},
		{Key: "team", Text: "platform"},
	}, cfg.Prompt.Data, "a relative file starts at the configuration file's folder and is read at load")

	dir = setup(t, map[string]string{"weir.yaml": `prompt:
  data:
    - key: date
      text: "2020-01-01"
    - key: team
      text: a
    - key: team
      text: b
    - key: notes
      text: a
      file: notes.md
    - text: keyless
    - key: missing
      file: absent.md
`})
	_, _, err = load(t, dir, nil)
	problem(t, err, "prompt.data[0].key", `"date" is provided by the host`, "workdir")
	problem(t, err, "prompt.data[2].key", `"team" is used twice (also prompt.data[1])`)
	problem(t, err, "prompt.data[3].file", "together with text")
	problem(t, err, "prompt.data[4].key", "is required")
	problem(t, err, "prompt.data[5].file", "cannot be read")
}
