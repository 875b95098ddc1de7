// Package surface is Weir's event model: the append-only session log and the
// model-visible surface folded from it.
//
// A session is a contiguous sequence of [Event] values; the event at index i
// has seq i. Four event types are surface-eligible (system/message,
// user/message, assistant/message, tool/result); every other type is
// log-only. A surface event either appends its seq to the surface or replaces
// a contiguous positional range of it ([Op]), citing every node it shadows in
// sourceEventSeqs. The surface is therefore a pure fold of the log, and so is
// the model request: the latest request header's config, the messages derived
// from the surface in order ([Log.Messages]), and the header's tools.
//
// The system prompt is an ordinary surface event at node 0. Once node 0 holds
// a system/message, the only replacement allowed to touch it is a single-node
// system/message replacement; the rule lives in the fold, so it holds for
// every proposer.
//
// Every candidate event is planned, then committed: a rejected event leaves
// the log, the surface, both generation counters and every cache exactly as
// they were. Errors are *[Error] values naming the seq and the rule broken.
//
// The package does no I/O. The durable JSONL store lives in surface/jsonl.
package surface
