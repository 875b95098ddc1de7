package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
)

// limitRow is one limit a plugin runs under in this host: what it bounds,
// the configuration key that sets it ("" when fixed), its value under a
// configuration, and what happens past it. docs/authors.md's limits table
// is limitsTable of the default configuration (a test keeps them equal),
// and "host plugins verify" prints the rows for the configuration in use.
type limitRow struct {
	What   string `json:"what"`
	Key    string `json:"key,omitzero"`
	Value  string `json:"value"`
	Breach string `json:"onBreach"`
}

func pluginLimits(cfg *config.Config) []limitRow {
	sb := cfg.Sandbox
	return []limitRow{
		{"linear memory (hard cap)", "sandbox.memoryLimitMiB", fmt.Sprintf("%d MiB", sb.MemoryLimitMiB),
			"`memory.grow` fails (a Go guest traps: \"fatal error: out of memory\"); the call fails, the instance is replaced"},
		{"soft memory limit (3/4 of the hard cap)", "sandbox.memoryLimitMiB", sizeOf(int64(sb.SoftMemoryBytes())),
			"after a successful call the instance is retired, without an error"},
		{"output frame", "sandbox.outputLimitKiB", fmt.Sprintf("%d KiB", sb.OutputLimitKiB), "\"output too large\"; the instance is replaced"},
		{"input frame (a request)", "", sizeOf(plugin.DefaultInputLimit), "\"input too large\"; the request is not sent"},
		{"state blob in a result", "", sizeOf(plugin.DefaultStateLimit), "\"state of N bytes exceeds the M-byte limit\"; the instance is kept"},
		{"proposals in one result", "", fmt.Sprint(abi.MaxProposals), "the frame is malformed"},
		{"data of a declared event type", "", sizeOf(host.MaxDeclaredEventBytes), "refused (`events/too-large`)"},
		{"declared events in one result", "", fmt.Sprintf("%d events, %s", host.MaxDeclaredPerCall, sizeOf(host.MaxDeclaredBytesPerCall)), "the result is refused (`events/budget`)"},
		{"declared events of one plugin in one turn", "", fmt.Sprintf("%d events, %s", host.MaxDeclaredPerTurn, sizeOf(host.MaxDeclaredBytesPerTurn)), "the result crossing it is refused (`events/budget`)"},
		{"prompt changes for an unchanged `prompt.render` request", "", "0", "the last prompt is kept and the change is a failure (`prompt/churn`); `sandbox.breaker.failures` of them in `sandbox.breaker.windowSteps` steps disable the plugin"},
		{"a token or byte count in a proposal or measurement", "", "2^40", "refused (`compaction/schema`, `meter/measurement`)"},
		{"calls per instance", "", fmt.Sprint(plugin.DefaultMaxCalls), "the instance is retired, without an error"},
		{"stdout and stderr kept per call and stream", "", sizeOf(plugin.DefaultStdioLimit), "the excess is dropped and counted"},
		{"deadline: start an instance (init, describe)", "", durationOf(config.StartTimeout), "the instance is discarded; the call that needed it fails"},
		{"deadline: `prompt.render`", "sandbox.callTimeout.prompt", durationOf(sb.CallTimeout.Prompt), "\"deadline exceeded\"; the instance is replaced"},
		{"deadline: `compaction.*` (time inside `summarize` not counted)", "sandbox.callTimeout.compaction", durationOf(sb.CallTimeout.Compaction), "\"deadline exceeded\"; the instance is replaced"},
		{"deadline: `meter.*`", "sandbox.callTimeout.meter", durationOf(sb.CallTimeout.Meter), "\"deadline exceeded\"; the instance is replaced"},
		{"plugin time in one agent step", "sandbox.stepBudget", durationOf(sb.StepBudget), "the call that runs out fails; the error names the key"},
		{"one compaction, call to return (`summarize` included)", "sandbox.compaction.wallClock", durationOf(sb.Compaction.WallClock), "the compaction fails"},
		{"`summarize` calls per compaction", "sandbox.compaction.maxSummarizeCalls", fmt.Sprint(sb.Compaction.MaxSummarizeCalls), "the next call fails inside the plugin; the compaction fails"},
		{"`summarize` tokens per compaction (input and output)", "sandbox.compaction.maxSummarizeTokens", fmt.Sprint(sb.Compaction.MaxSummarizeTokens), "the call crossing it completes; the next fails inside the plugin"},
		{"failures that disable a plugin for the session", "sandbox.breaker.failures", fmt.Sprint(sb.Breaker.Failures), "the plugin is not called again in that session"},
		{"the breaker's window, in steps", "sandbox.breaker.windowSteps", fmt.Sprint(sb.Breaker.WindowSteps), "older failures no longer count"},
		{"live instances per plugin", "", "GOMAXPROCS", "further calls wait"},
		{"compilation of a module", "", durationOf(plugin.DefaultCompileDeadline), "\"module rejected: compilation did not finish\""},
	}
}

// limitsTable renders rows as the Markdown table of docs/authors.md.
func limitsTable(rows []limitRow) string {
	var b strings.Builder
	b.WriteString("| limit | configuration key | default | past it |\n|---|---|---|---|\n")
	for _, r := range rows {
		key := "fixed"
		if r.Key != "" {
			key = "`" + r.Key + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.What, key, r.Value, r.Breach)
	}
	return b.String()
}

// sizeOf prints a byte size in the largest binary unit that divides it.
func sizeOf(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// durationOf prints whole seconds the way the configuration's defaults
// spell them ("2s", "120s").
func durationOf(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}
