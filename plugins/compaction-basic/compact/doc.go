// Package compact is the policy and transaction logic of compaction-basic:
// it decides when and what to compact, runs the summarization call, and
// prepares the events that replace a range of the surface with a
// checkpoint message.
//
// The package reads its session only through the small [Session]
// interface and returns proposals instead of writing, so the same code runs
// natively (plugins/compaction-basic/native adapts the host's provider
// view) and inside a WebAssembly guest (an adapter over the host imports).
// It imports the surface package and the standard library only, and has
// no randomness and no clock: compaction ids derive from the session id
// and the seq of the bracket's start ([CompactionID]), and checkpoint
// message ids from the compaction id, so a replay decides the same.
//
// # Model
//
// [ParseConfig] reads the plugin configuration (spec 11.1) into a [Config]
// whose per-model policies are merged field-wise over the top-level one.
// Besides the keys of the spec's table (thresholdRatio 0.8, headroomTokens
// 65536, retainRatio 0.16 | retainTokens, summarizationProvider and
// summarizationModel, maxTokens = headroomTokens, compactionRetries 1,
// maxOverflowRetries 1, modelPolicies, auto true) two top-level keys bound
// automatic compaction: maxCompactionsPerWindow (int >= 0, default 3, 0 =
// unbounded) brackets within windowTurns (int >= 1, default 1) turns.
// [Compact] handles one request:
//
//   - [Pressure] (before each step, when auto): the target is the latest
//     request header's provider/model; with no header logged yet (a new,
//     resumed or imported session), the route the host's request will use
//     (Request.Route with its context window; without one, nothing). Spec
//     11.3 uses no route before the first header; Weir does, so a session
//     resumed far above its window is compacted before its first request
//     instead of overflowing it. [ResolveSpec]
//     turns its policy, the route's context window and the reserved
//     completion (header maxTokens, else the route's, else 0) into a
//     threshold and a verbatim tail. Below the threshold nothing happens.
//     Above it, up to compactionRetries+1 passes run inside this one call:
//     each selects a range ([SelectRange]) on a working copy of the surface
//     that already holds the checkpoints of the earlier passes, summarizes
//     it, and predicts the new total (old total minus the span's measured
//     prices plus the checkpoint's estimate). Passes stop once the
//     prediction is below the threshold. The host admits proposals only
//     after the call returns, so a later pass cannot observe an earlier
//     one's commit; it plans on the prediction instead, and its checkpoint
//     cites the seq the earlier checkpoint will get (in practice a later
//     pass re-summarizes the previous checkpoint, since the retained tail
//     is unchanged). A later pass is skipped when even an empty checkpoint
//     would leave the total above the threshold. Still above after the
//     last pass: the brackets are proposed anyway (they shrink the
//     surface), the last compaction/end carries a warning and the outcome
//     reports "still above threshold after N attempt(s)".
//   - [Overflow] (after a context-overflow failure, when auto): one pass
//     with retain 0 (everything but the last node), no threshold or
//     capacity check, at most maxOverflowRetries per sequence (a sequence
//     ends with the turn or when a model reply lands).
//   - [Manual] (between turns): one pass with retain 0; the bracket has no
//     owner turn (turn: null).
//   - [Region]: an explicit span, inside the open turn or between turns
//     (then, as [Manual], without an owner turn), validated before
//     anything is proposed (on the surface, in order, balanced cuts).
//
// One bracket is four proposals admitted together: compaction/start,
// compaction/summary, the checkpoint user/message replacing the span (citing
// the start, the summary and every shadowed node) and compaction/end. A
// bracket that fails after its start (summarizer error, max-tokens finish,
// non-text output, no text, a checkpoint not smaller than its span, a
// surface that changed during summarization, a span over the protected
// system head) is proposed as start + end {error}: the log records a closed
// failed attempt and the surface is untouched.
//
// Loop safety beyond the reference: a checkpoint is never larger than the
// span it replaces; at most maxCompactionsPerWindow automatic brackets
// (successful or not) start within windowTurns turns; configuration errors
// and the limit are reported once (per provider/model, per turn), so a
// misconfigured or thrashing session does not spend a model call or a
// warning on every step. The counters live in [State], which a guest keeps
// in the host's state blob ([State.Encode], [DecodeState]).
package compact
