// Package provider makes WebAssembly plugins serve as the host's providers:
// a system-prompt renderer (host.SystemPromptProvider), a compaction
// provider (host.CompactionProvider) and a token meter (host.Meter), each
// over a *plugin.Plugin of the plugin runtime (host/plugin).
//
// # Model
//
// A plugin is loaded once per process for one role (Load). Its instances
// are pooled by the runtime and shared by every session; the adapters are
// thin per-session wrappers around it:
//
//   - SystemPrompt maps the step's host.Assembly to an abi.RenderRequest
//     (sections, host data with a tools summary, route) and returns the
//     rendered text. The host turns that text into a system/message; the
//     plugin proposes nothing itself.
//   - Compaction maps a host.CompactionRequest to compaction.prestep,
//     .manual or .overflow by reason and converts the plugin's proposals to
//     surface.Proposal exactly (type, data bytes, intent, sourceEventSeqs
//     absent or present, ignorable). The host admits them all or nothing
//     through the same path as its own events. The plugin's opaque state
//     blob is kept per session; a blob returned with proposals is adopted
//     only once the log shows them admitted.
//   - Meter hands newly committed events (seq, type, the event's JSON) to
//     meter.observe in batches and converts meter.measure's answer to a
//     host.Measurement. Its state blob is kept per session; with a
//     StateCache (WithStateCache) it is also kept outside the log between
//     processes, so a resumed session starts from its latest blob instead
//     of folding the whole log into the plugin.
//
// Per-step cost does not grow with the log: requests never carry event
// history. A plugin reads what it needs through the host imports, which
// this package answers from the session (Host): the surface nodes (seq,
// type, role, message size and SHA-256, the token count of the latest
// measurement when known), one message's JSON, the generations, the
// request header, a measurement through the session's meter and a
// summarization through the session's summarizer (compaction calls only),
// and token counts with the host's native tokenizers. Sizes and hashes are
// cached per seq (committed events never change), so a query costs
// O(surface), not O(log).
//
// # Failures
//
// Every plugin failure (trap, deadline, malformed output, an error status,
// an unconvertible result) is returned to the host as an error naming the
// plugin; the host logs it, records a plugin/failure event and goes on
// without the plugin's contribution: the last good prompt, no compaction,
// no new measurement. Each adapter keeps a failure breaker per session
// (a compaction whose proposals the host rejected counts as a failure,
// one past its budget too; a cancelled call does not): when the plugin
// failed 3 times within 10 steps of the session (WithFailureLimit,
// WithFailureWindow), successes in between or not, it stops calling the
// plugin for that session and says so once, in the error of the failure
// that tripped it (recorded with disabled: true) and in a warning. The
// breaker replays the session's plugin/failure events on its first call,
// so a resumed session keeps its count and its disabled plugins. From then on the prompt adapter
// answers the session's current prompt (so nothing changes), the
// compaction adapter proposes nothing, and the meter drops events and
// answers ErrDisabled, which matches host.ErrNotGranted so consumers fall
// back as they would without a meter.
package provider
