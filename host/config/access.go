package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
)

// HostRoute returns the named route as the agent loop's host.Route.
func (c *Config) HostRoute(name string) (host.Route, error) {
	r, ok := c.Models[name]
	if !ok {
		return host.Route{}, fmt.Errorf("config: no route named %q (routes: %s)", name, strings.Join(sortedKeys(c.Models), ", "))
	}
	return host.Route{Provider: r.Provider, Model: r.Model, ContextWindow: r.ContextWindow,
		MaxTokens: r.MaxTokens, ReasoningEffort: r.ReasoningEffort, OutputCap: r.OutputCap, InHistory: r.SystemPromptUpdate == "in-history"}, nil
}

// ClientConfig returns the llm client configuration of the named route:
// its API, its base URL, the given API key, and its attempt bounds (timeout,
// idleTimeout, maxResponseMiB), which the client's errors name as the
// route's keys. log receives the client's warnings; nil means none.
func (c *Config) ClientConfig(name string, key llm.Secret, log hclog.Logger) (llm.ClientConfig, error) {
	r, ok := c.Models[name]
	if !ok {
		return llm.ClientConfig{}, fmt.Errorf("config: no route named %q (routes: %s)", name, strings.Join(sortedKeys(c.Models), ", "))
	}
	return llm.ClientConfig{API: llm.API(r.API), BaseURL: r.BaseURL, APIKey: key, Route: name, Timeout: r.Timeout, IdleTimeout: r.IdleTimeout,
		MaxResponseBytes: r.MaxResponseMiB << 20, Logger: log}, nil
}

// Sections returns the prompt sections for a route: Prompt.Sections with
// that route's perModel override merged by key (a known key replaces the
// text in place, a new key is appended).
func (c *Config) Sections(route string) []host.Section {
	out := make([]host.Section, len(c.Prompt.Sections))
	for i, s := range c.Prompt.Sections {
		out[i] = host.Section{Key: s.Key, Text: s.Text}
	}
	for _, s := range c.Prompt.PerModel[route].Sections {
		i := slices.IndexFunc(out, func(o host.Section) bool { return o.Key == s.Key })
		if i >= 0 {
			out[i].Text = s.Text
		} else {
			out = append(out, host.Section{Key: s.Key, Text: s.Text})
		}
	}
	return out
}

// Plugin returns the named plugin.
func (c *Config) Plugin(name string) (Plugin, bool) {
	i := slices.IndexFunc(c.Plugins, func(p Plugin) bool { return p.Name == name })
	if i < 0 {
		return Plugin{}, false
	}
	return c.Plugins[i], true
}

// Enabled returns the enabled plugins of a role, in order.
func (c *Config) Enabled(role string) []Plugin {
	var out []Plugin
	for _, p := range c.Plugins {
		if p.Enabled && p.Role == role {
			out = append(out, p)
		}
	}
	return out
}

// Builtin reports whether the plugin is a first-party one run natively
// (no path).
func (p Plugin) Builtin() bool { return p.Path == "" }

// Timeout is the call deadline of a role's plugins.
func (s Sandbox) Timeout(role string) time.Duration {
	switch role {
	case RoleSystemPrompt:
		return s.CallTimeout.Prompt
	case RoleCompaction:
		return s.CallTimeout.Compaction
	case RoleTokenMeter:
		return s.CallTimeout.Meter
	}
	return 0
}

// HostCompactionBudget is the per-compaction budget of host.Config.
func (s Sandbox) HostCompactionBudget() host.CompactionBudget {
	return host.CompactionBudget{MaxCalls: int(s.Compaction.MaxSummarizeCalls), MaxTokens: s.Compaction.MaxSummarizeTokens,
		WallClock: s.Compaction.WallClock}
}

// StartTimeout is the deadline of starting a plugin instance: instantiate,
// the guest runtime's initialisation, init and describe. It is not
// configurable. It is well above what a start costs (tens of milliseconds
// for a C guest, a few hundred for a Go one), so a machine busy with
// other work does not fail a healthy plugin, and it still stops a guest
// that loops in init.
const StartTimeout = 10 * time.Second

// SoftMemoryBytes is the soft memory limit of a plugin instance: three
// quarters of memoryLimitMiB (48 MiB of the default 64). An instance whose
// memory grew past it is retired after its call, without an error.
func (s Sandbox) SoftMemoryBytes() uint64 {
	return uint64(s.MemoryLimitMiB) << 20 / 4 * 3
}
