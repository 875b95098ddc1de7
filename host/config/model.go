package config

import (
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/host/llm"
)

// Config is Weir's effective configuration. The koanf tags are the key
// names of weir.yaml; Load fills every field (defaults included) and
// validates the whole before returning it.
type Config struct {
	// Model is the name of the default route, a key of Models.
	Model string `koanf:"model"`
	// Models are the named model routes.
	Models map[string]*Route `koanf:"models"`
	// Prompt holds the system prompt sections.
	Prompt Prompt `koanf:"prompt"`
	// Plugins are the providers, in order: first-party ones first, then
	// the file's new entries in the file's order.
	Plugins []Plugin `koanf:"plugins"`
	// Sandbox bounds every WebAssembly plugin.
	Sandbox Sandbox `koanf:"sandbox"`
	// Tools bounds the tool calls the model makes.
	Tools Tools `koanf:"tools"`
	// MCP configures the Model Context Protocol servers whose tools are
	// offered beside the built-in ones.
	MCP MCP `koanf:"mcp"`
	// Retry configures the retries of model requests.
	Retry Retry `koanf:"retry"`
	// Eval configures host eval's report.
	Eval Eval `koanf:"eval"`
	// Sessions says where session logs live.
	Sessions Sessions `koanf:"sessions"`
	// Log configures the host's logger.
	Log Log `koanf:"log"`
}

// Route is one named model route.
type Route struct {
	// Provider is the provider name recorded in the log ("deepseek",
	// "openai", "offline", ...).
	Provider string `koanf:"provider"`
	// Model is the provider's model name; for the offline provider,
	// "offline:SCRIPT.json".
	Model string `koanf:"model"`
	// API is the wire protocol of the route: "openai" (OpenAI-compatible
	// chat completions, the default), "anthropic" (Anthropic's Messages
	// API) or "gemini" (Google's Gemini API). Provider stays the name
	// recorded in the log.
	API string `koanf:"api"`
	// BaseURL is the API base (e.g. https://api.deepseek.com,
	// https://api.anthropic.com,
	// https://generativelanguage.googleapis.com/v1beta); required unless
	// the provider is offline.
	BaseURL string `koanf:"baseURL"`
	// APIKeyEnv is the NAME of the environment variable holding the API
	// key, never the key itself; empty when the server needs no key.
	APIKeyEnv string `koanf:"apiKeyEnv"`
	// ContextWindow is the context capacity in tokens (> 0); 0 takes the
	// known window of the model (llm.KnownLimits), and is an error for a
	// model Weir does not know.
	ContextWindow int64 `koanf:"contextWindow"`
	// MaxTokens is the completion cap per request (0: provider default);
	// it must be below ContextWindow.
	MaxTokens int64 `koanf:"maxTokens"`
	// ReasoningEffort turns on the model's thinking: "" (the API's
	// default), or one of llm.ReasoningEfforts. The openai API sends it
	// as reasoning_effort; anthropic and gemini as a thinking budget.
	ReasoningEffort string `koanf:"reasoningEffort"`
	// OutputCap is the most output tokens the model accepts per request;
	// 0 takes the known limit of the model (llm.KnownLimits). Every
	// request's max tokens is clamped to it.
	OutputCap int64 `koanf:"outputCap"`
	// Tokenizer prices the route: "deepseek-v3", "heuristic", "o200k" or
	// "cl100k". Default "deepseek-v3" for provider deepseek, else
	// "heuristic".
	Tokenizer string `koanf:"tokenizer"`
	// SystemPromptUpdate is "replace" (a changed prompt replaces node 0)
	// or "in-history" (the model reads the latest system message anywhere,
	// so changes may be appended). The anthropic and gemini APIs have no
	// system role inside the history, so their routes must replace.
	SystemPromptUpdate string `koanf:"systemPromptUpdate"`
	// Timeout is the deadline of one model attempt, from sending the
	// request to the end of the stream (> 0).
	Timeout time.Duration `koanf:"timeout"`
	// IdleTimeout is the longest an attempt may go without progress: new
	// text, reasoning, tool-call data, a finish reason or usage. SSE
	// keep-alive comments and empty chunks do not count (> 0, at most
	// Timeout).
	IdleTimeout time.Duration `koanf:"idleTimeout"`
	// MaxResponseMiB caps the bytes of one model response, in MiB
	// (1..1024).
	MaxResponseMiB int64 `koanf:"maxResponseMiB"`
}

// Route defaults of the attempt bounds, the llm client's.
const (
	DefaultRouteTimeout     = llm.DefaultTimeout
	DefaultRouteIdleTimeout = llm.DefaultIdleTimeout
	DefaultMaxResponseMiB   = llm.DefaultMaxResponseBytes >> 20
	// MaxResponseMiBLimit is the largest maxResponseMiB.
	MaxResponseMiBLimit = 1024
)

// Prompt is the configured system prompt: ordered sections and per-route
// overrides.
type Prompt struct {
	Sections []Section `koanf:"sections"`
	// PerModel maps a route name to sections merged by key over Sections:
	// a known key replaces that section's text in place, a new key is
	// appended.
	PerModel map[string]PromptOverride `koanf:"perModel"`
	// Data is user-defined host data for the system-prompt plugin, entries
	// {key, text} or {key, file} like sections. The keys the host provides
	// itself (HostDataKeys) cannot be set here.
	Data []Section `koanf:"data"`
}

// Host data keys the host provides to the system-prompt plugin
// (RenderRequest.host_data); docs/authors.md documents their values.
const (
	DataDate    = "date"    // the local date of the run, YYYY-MM-DD
	DataWorkdir = "workdir" // the name (last element) of the working directory
	DataRoute   = "route"   // the configured route's name
	DataModel   = "model"   // the route's provider/model
	DataTools   = "tools"   // the tools offered, one "name: description" line each
)

// HostDataKeys are the host data keys the host provides; prompt.data
// cannot set them.
var HostDataKeys = []string{DataDate, DataWorkdir, DataRoute, DataModel, DataTools}

// PromptOverride is the prompt override of one route.
type PromptOverride struct {
	Sections []Section `koanf:"sections"`
}

// Section is one keyed part of the system prompt. Exactly one of Text and
// File is configured; after Load, Text holds the file's content (plugins
// get no filesystem, so the configuration layer reads it) and File the
// resolved path.
type Section struct {
	Key  string `koanf:"key"`
	Text string `koanf:"text"`
	File string `koanf:"file"`
}

// Plugin is one provider plugin.
type Plugin struct {
	Name string `koanf:"name"`
	// Path is the plugin's .wasm file (resolved against the directory of
	// the file that named it); empty selects the first-party built-in of
	// that name.
	Path string `koanf:"path"`
	// Role is "system-prompt", "compaction" or "token-meter".
	Role    string `koanf:"role"`
	Enabled bool   `koanf:"enabled"`
	// Config is the plugin's configuration, a JSON object handed to the
	// plugin as is ({} when none).
	Config jsontext.Value `koanf:"config"`
	// Route names the route (a key of models) a compaction plugin's
	// summarize calls go to, clamped to it; "" sends them to the
	// session's route.
	Route string `koanf:"route"`
}

// Sandbox bounds plugins.
type Sandbox struct {
	// MemoryLimitMiB caps a guest's linear memory (4..4096).
	MemoryLimitMiB int64 `koanf:"memoryLimitMiB"`
	// CallTimeout is the deadline of one call, per provider kind.
	CallTimeout CallTimeouts `koanf:"callTimeout"`
	// StepBudget is the total time the plugin calls of one agent step may
	// take; at least every call timeout.
	StepBudget time.Duration `koanf:"stepBudget"`
	// OutputLimitKiB caps one output frame of a plugin.
	OutputLimitKiB int64 `koanf:"outputLimitKiB"`
	// Compaction bounds each compaction, automatic or manual.
	Compaction CompactionBudget `koanf:"compaction"`
	// Breaker says when a failing plugin is disabled for a session.
	Breaker Breaker `koanf:"breaker"`
}

// CompactionBudget bounds one compaction (host.CompactionBudget): a
// summarize call past it fails inside the plugin and the compaction is
// the plugin's failure.
type CompactionBudget struct {
	// MaxSummarizeCalls is the most summarize calls of one compaction.
	MaxSummarizeCalls int64 `koanf:"maxSummarizeCalls"`
	// MaxSummarizeTokens caps the tokens (input and output) of one
	// compaction's summarize calls together.
	MaxSummarizeTokens int64 `koanf:"maxSummarizeTokens"`
	// WallClock bounds one compaction, time inside summarize included.
	WallClock time.Duration `koanf:"wallClock"`
}

// Breaker disables a plugin for a session after Failures failures within
// WindowSteps steps of the session.
type Breaker struct {
	Failures    int64 `koanf:"failures"`
	WindowSteps int64 `koanf:"windowSteps"`
}

// Retry configures the retry of rate-limited and failed model requests.
type Retry struct {
	// MaxWait caps the wait before a retry, whatever the provider's
	// Retry-After asks.
	MaxWait time.Duration `koanf:"maxWait"`
}

// Eval configures host eval's report.
type Eval struct {
	// Prices is the price table of the cost estimate, in dollars per
	// million tokens; the default is DefaultPrices, and all zero is taken
	// as DefaultPrices too.
	Prices Prices `koanf:"prices"`
}

// DefaultPrices are DeepSeek's list prices for deepseek-chat (V3.2), the
// default of eval.prices (host/eval's DeepSeekPrices, the same table).
var DefaultPrices = Prices{CacheHit: 0.028, CacheMiss: 0.28, Output: 0.42}

// Prices are dollars per million tokens: input served from the provider's
// prompt cache, input not served from it, and output.
type Prices struct {
	CacheHit  float64 `koanf:"cacheHit"`
	CacheMiss float64 `koanf:"cacheMiss"`
	Output    float64 `koanf:"output"`
}

// CallTimeouts are the per-call deadlines of each provider kind.
type CallTimeouts struct {
	// Prompt bounds a system-prompt render.
	Prompt time.Duration `koanf:"prompt"`
	// Compaction bounds a compaction call; it may wait for a
	// summarization call to the model.
	Compaction time.Duration `koanf:"compaction"`
	// Meter bounds a token-meter call.
	Meter time.Duration `koanf:"meter"`
}

// Tools bounds tool calls.
type Tools struct {
	// Timeout is the deadline of one tool call. Past it the call gets an
	// error result (TOOL_TIMEOUT) and the turn goes on; a tool that does
	// not stop is abandoned.
	Timeout time.Duration `koanf:"timeout"`
	// Timeouts overrides Timeout for the named tools.
	Timeouts map[string]time.Duration `koanf:"timeouts"`
	// Policy is the permission policy: "allow", "deny" or "ask" by tool
	// name, or by a pattern PREFIX* ("github__*", "*"); tools it does not
	// name get the defaults of host/policy (read-only tools allowed, MCP
	// tools that may write asked).
	Policy map[string]string `koanf:"policy"`
}

// MCP configures the MCP servers.
type MCP struct {
	// Servers are the servers by name; a server's tools are offered as
	// NAME__TOOL.
	Servers map[string]*MCPServer `koanf:"servers"`
}

// MCPServer is one MCP server: a command speaking stdio, or a URL speaking
// streamable HTTP.
type MCPServer struct {
	// Command and Args start a stdio server.
	Command string   `koanf:"command"`
	Args    []string `koanf:"args"`
	// Env is added to a stdio server's environment; a value may refer to
	// the host's variables as ${NAME}, and a secret must.
	Env map[string]string `koanf:"env"`
	// URL is a streamable HTTP server's endpoint.
	URL string `koanf:"url"`
	// Headers are sent with every HTTP request; a value may refer to
	// environment variables as ${NAME}, and a secret (Authorization, a
	// token or key) must.
	Headers map[string]string `koanf:"headers"`
	// Timeout bounds one call of the server's tools (> 0).
	Timeout time.Duration `koanf:"timeout"`
	// MaxResultKiB caps the text of one result, in KiB (1..65536).
	MaxResultKiB int64 `koanf:"maxResultKiB"`
	// Failures is how many consecutive failures (a crash, a timeout, a
	// broken message) disable the server (the breaker, ≥ 1).
	Failures int64 `koanf:"failures"`
}

// Sessions configures session storage.
type Sessions struct {
	// Dir holds new session files, relative to the working directory.
	Dir string `koanf:"dir"`
	// Store is where sessions are kept: "file" (one JSONL file per session
	// under Dir), "sqlite:PATH" (one SQLite database) or
	// "postgres://USER@HOST:PORT/DB" (the password comes from the
	// environment variable WEIR_POSTGRES_PASSWORD, never from here).
	Store string `koanf:"store"`
}

// Log configures the host's logger.
type Log struct {
	// Level is "trace", "debug", "info", "warn", "error" or "off".
	Level string `koanf:"level"`
	// Format is "text" or "json".
	Format string `koanf:"format"`
}

// Plugin roles.
const (
	RoleSystemPrompt = "system-prompt"
	RoleCompaction   = "compaction"
	RoleTokenMeter   = "token-meter"
)

// First-party plugin names.
const (
	PluginSystemPrompt    = "system-prompt"
	PluginCompactionBasic = "compaction-basic"
	PluginTokenMeter      = "token-meter"
)

// Allowed values.
var (
	Tokenizers          = []string{"deepseek-v3", "heuristic", "o200k", "cl100k"}
	APIs                = []string{"openai", "anthropic", "gemini"}
	SystemPromptUpdates = []string{"replace", "in-history"}
	Roles               = []string{RoleSystemPrompt, RoleCompaction, RoleTokenMeter}
	LogLevels           = []string{"trace", "debug", "info", "warn", "error", "off"}
	LogFormats          = []string{"text", "json"}
)

// builtins maps each first-party plugin to its role, in default order.
var builtins = []struct{ name, role string }{
	{PluginSystemPrompt, RoleSystemPrompt},
	{PluginCompactionBasic, RoleCompaction},
	{PluginTokenMeter, RoleTokenMeter},
}

func builtinRole(name string) (string, bool) {
	for _, b := range builtins {
		if b.name == name {
			return b.role, true
		}
	}
	return "", false
}

// DefaultSystemPrompt is the text of the default "base" prompt section.
const DefaultSystemPrompt = "You are a careful, concise assistant running inside Weir. " +
	"Use the tools offered when they help, and say plainly when you do not know."

// Default returns the built-in configuration, the lowest source.
func Default() *Config {
	c := &Config{
		Model: "deepseek",
		Models: map[string]*Route{
			"deepseek": {Provider: "deepseek", Model: "deepseek-chat", API: "openai", BaseURL: "https://api.deepseek.com",
				APIKeyEnv: "DEEPSEEK_API_KEY", ContextWindow: 128000, MaxTokens: 8192,
				Tokenizer: "deepseek-v3", SystemPromptUpdate: "replace",
				Timeout: DefaultRouteTimeout, IdleTimeout: DefaultRouteIdleTimeout, MaxResponseMiB: DefaultMaxResponseMiB},
			"offline": {Provider: "offline", Model: "offline:examples/offline/tour.json", API: "openai",
				ContextWindow: 8192, MaxTokens: 1024, Tokenizer: "heuristic", SystemPromptUpdate: "replace",
				Timeout: DefaultRouteTimeout, IdleTimeout: DefaultRouteIdleTimeout, MaxResponseMiB: DefaultMaxResponseMiB},
		},
		Prompt: Prompt{Sections: []Section{{Key: "base", Text: DefaultSystemPrompt}},
			PerModel: map[string]PromptOverride{}, Data: []Section{}},
		Sandbox: Sandbox{
			MemoryLimitMiB: 64,
			CallTimeout:    CallTimeouts{Prompt: 2 * time.Second, Compaction: 120 * time.Second, Meter: 2 * time.Second},
			StepBudget:     150 * time.Second,
			OutputLimitKiB: 4096,
			Compaction:     CompactionBudget{MaxSummarizeCalls: 8, MaxSummarizeTokens: 200_000, WallClock: 180 * time.Second},
			Breaker:        Breaker{Failures: 3, WindowSteps: 10},
		},
		Tools:    Tools{Timeout: 60 * time.Second, Timeouts: map[string]time.Duration{}, Policy: map[string]string{}},
		MCP:      MCP{Servers: map[string]*MCPServer{}},
		Retry:    Retry{MaxWait: 30 * time.Second},
		Eval:     Eval{Prices: DefaultPrices},
		Sessions: Sessions{Dir: ".weir/sessions", Store: "file"},
		Log:      Log{Level: "warn", Format: "text"},
	}
	for _, b := range builtins {
		c.Plugins = append(c.Plugins, Plugin{Name: b.name, Role: b.role, Enabled: true, Config: jsontext.Value("{}")})
	}
	return c
}

// routeTemplate gives the fields of a route the sources leave unset.
func routeTemplate(provider string) map[string]any {
	tok := "heuristic"
	if provider == "deepseek" {
		tok = "deepseek-v3"
	}
	return map[string]any{"provider": "", "model": "", "api": "openai", "baseURL": "", "apiKeyEnv": "",
		"contextWindow": int64(0), "maxTokens": int64(0), "reasoningEffort": "", "outputCap": int64(0), "tokenizer": tok, "systemPromptUpdate": "replace",
		"timeout": DefaultRouteTimeout, "idleTimeout": DefaultRouteIdleTimeout, "maxResponseMiB": int64(DefaultMaxResponseMiB)}
}

// mcpTemplate gives the fields of an MCP server the sources leave unset.
func mcpTemplate() map[string]any {
	return map[string]any{"command": "", "args": []any{}, "env": map[string]any{}, "url": "", "headers": map[string]any{},
		"timeout": 60 * time.Second, "maxResultKiB": int64(256), "failures": int64(3)}
}

// pluginTemplate gives the fields of a plugin the sources leave unset.
func pluginTemplate(name string) map[string]any {
	role, _ := builtinRole(name)
	return map[string]any{"name": name, "path": "", "role": role, "enabled": true, "config": jsontext.Value("{}")}
}

// sectionTemplate gives the fields of a section the sources leave unset.
func sectionTemplate() map[string]any { return map[string]any{"key": "", "text": "", "file": ""} }
