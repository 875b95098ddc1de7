// Package v2 reads format-v2 session logs and converts them to format v3.
//
// # The v2 format
//
// A v2 log is JSONL: a header line {"type":"session","version":2,"id":...}
// and one event per line, seq i on line i+2. It differs from v3 (spec 13.5)
// in that:
//
//   - the system prompt is not on the surface: each request/header records
//     it in data.header.system, and there is no system/message event;
//   - a replace surfaceOp names its range {"op":"replace","start":s,"end":e};
//   - the envelope is not canonical (see Leniency below).
//
// Assistant streams are embedded in assistant/message.stream and failed
// attempts are assistant/attempt events, as in v3.
//
// [Read] validates every complete line and names the line of the first
// problem; bytes after the last newline are a torn tail and are dropped,
// as a v3 reader does. The classified vocabulary is the v3 vocabulary of
// this build minus system/message; any other type needs ignorable: true.
//
// # Leniency
//
// These v2 forms are accepted and normalized (counted in [Leniency]):
//
//   - a surface event without surfaceOp (or with surfaceOp null) is an
//     append;
//   - an empty sourceEventSeqs ([] or null) is dropped, on any event;
//   - a log-only event may carry surface keys only when they are empty
//     (surfaceOp null, sourceEventSeqs [] or null); they are dropped. Any
//     other value is refused;
//   - sourceEventSeqs on an assistant/message is dropped: v3 forbids it
//     because the message embeds its stream. An assistant/message replace
//     cannot be expressed without it and is refused;
//   - header.system null reads as no prompt.
//
// Storage-compressed [first,last] runs in sourceEventSeqs are expanded.
//
// # Conversion
//
// [Migrate] (and [Convert], which reads first) produces the log the v3 loop
// would have written, in replacement mode:
//
//   - The first request/header commits node 0: a system/message appended
//     right after the step/start of its step, before that step's user
//     messages (v3 order step/start, system/message, user/message batch,
//     request/header). An absent or empty prompt still appends an
//     empty-content system/message (the empty-head rule), so a later prompt
//     replaces node 0 instead of landing behind history.
//   - Each later header whose prompt differs from the current head commits
//     a node-0 replacement: surfaceOp {op:replace, startSeq:h, endSeq:h},
//     sourceEventSeqs [h], h the head's seq. It goes after the step/start of
//     the header's step when the header is the step's first; a header that
//     follows another one in the same step (a retry) gets it right before
//     itself, after the failed attempt, as a per-attempt projection would.
//   - Such a header's reason follows v3 series semantics: when it differs
//     from the previous header only by its prompt it becomes "series"
//     (startsSeries dropped); when its config or tools changed too it is
//     "change" with startsSeries: true. "initial" and "resume" are kept.
//     Headers whose prompt did not change keep their reason.
//   - header.system is removed from every header.
//   - Generated messages have the system-prompt plugin source ([Plugin]),
//     data {turn, step, message} naming the enclosing step, the time of the
//     event they follow, and the deterministic id
//     "v2-sys-<session id>-<v3 seq>".
//   - Every later seq shifts, and every reference is remapped: replace
//     ranges (renamed startSeq/endSeq), sourceEventSeqs, and the seq lists
//     of compaction/summary and compaction/prune (shadowedSeqs,
//     shadowedRange.start/end). Other data is kept byte for byte.
//   - Unknown ignorable events are carried verbatim except for their seq;
//     their contents are opaque, so seqs inside them are not remapped.
//   - The header becomes version 3 with a "migratedFrom":2 member; every
//     other member is kept in order.
//
// The result is then loaded with surface.Restore (all v3 admission rules)
// and its surface is checked against the v2 one: the v3 nodes are the
// system head followed by the v2 nodes, and the head holds the latest
// prompt, so [surface.Log.Messages] derives the v2 wire messages (the latest
// header's prompt first, then the v2 surface; see [File.Messages]).
// Converting the same input always gives the same bytes.
//
// # Refusals
//
// An input with no order-preserving conversion is refused with an *[Error]
// naming the case ([Case]), the reason and the input line; nothing is
// written. Besides malformed input, the importer refuses: versions other
// than 2, unclassified types, v3-only shapes (system/message events, a
// migratedFrom header, startSeq/endSeq replace keys), non-empty surface
// keys on log-only events, replacements that do not fold, assistant
// replacements, generated ids already used by an input message, a first
// prompt that cannot become node 0 because history (for example a
// compaction checkpoint) already precedes its step, a header that records
// the first prompt or a prompt change outside any open step, and output
// that fails the v3 admission rules.
//
// [ConvertFile] writes atomically: temporary file in the output directory,
// fsync, publish without overwriting (unless [Overwrite]), directory fsync.
// It never modifies the input.
package v2
