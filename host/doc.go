// Package host runs Weir's agent loop over a session log.
//
// A [Session] owns one event log (surface.Log) and its durable store; it is
// the only writer. An [Agent] drives turns over a session in the order the
// design fixes: claim the queue → assemble prompt → project runtime context →
// pre-step waterfall → project system prompt → step/start → commit
// system/message (when changed) → commit user messages → request waterfall →
// request/header → request/context → stream → assistant/message (+usage) →
// tools → step/end.
//
// Providers (system prompt, compaction, token meter) never write the log.
// They return proposals, which the session admits through the same
// validated path as the loop's own events, all or nothing, after checking
// what the provider's kind may propose. Every request is a pure function of
// the log: [BuildRequest] over a log prefix reproduces it byte for byte,
// and [CallRequest] the summarization requests a compaction provider made
// (each recorded as a plugin/call event, within the compaction's
// [CompactionBudget]).
//
// Concurrency: one operation drives a session at a time (Run, CompactNow);
// another one started meanwhile returns an error matching [ErrBusy].
// [Agent.Inject], the agent's setters, [Session.Snapshot] and
// [Session.Subscribe] are safe from any goroutine while a turn runs;
// [Session.Log] is the driver's. docs/embedding.md has the whole contract.
package host
