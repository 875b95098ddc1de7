// Package jsonl is the durable store of session logs: format v3 JSONL, one
// append-only file per session.
//
// # Format
//
// Line 1 is the physical header, storage metadata that is never an event:
//
//	{"type":"session","version":3,"id":...,"createdAt":...,"cwd"?:...,
//	 "parentSession"?:...,"isSeeded":bool,"origin"?:...,"delegationDepth"?:...,
//	 "agentPreset"?:...}
//
// Every following line is one event in its canonical encoding
// (surface.AppendEvent), in seq order: the event on line n has seq n-2.
// A header naming a newer version refuses the load with an "upgrade weir"
// direction; version 2 fails with a *VersionError the caller routes to the v2
// importer; older versions are refused.
//
// # Reading
//
// Everything after the last newline is a torn tail, left by a write that a
// crash interrupted: the load drops it and reports its length, and Open
// truncates it before the next write. A complete line that does not decode or
// is not admitted refuses the load with a *LineError naming the line, the
// seq when known and the surface error. A torn tail holding a retired
// v3-forbidden shape (a request/header carrying header.system, for one) also
// refuses: it marks an old-format file, which must never be truncated.
//
// Loading validates: every event passes surface admission (surface.Restore,
// the checks appends pass), so a load yields a *surface.Log, not just
// events. The file is read once, as a stream of line-aligned blocks;
// GOMAXPROCS workers decode blocks, parsing the payloads admission needs as
// they go (surface.Decoder.Prepare), and the log is then restored in seq
// order. With the Each option the events go, in order, to a function
// instead (host.Open admits them itself, through the store contract of
// host/store). ReadEvents is the plain sequential decoder for tools.
//
// # Writing
//
// A Session is the single writer of a file. Create writes nothing until the
// first Append, which writes the header and the first batch to a temporary
// file, syncs it and publishes it without overwriting an existing file, then
// syncs the directory. Later batches are appended as whole lines with one
// write and synced before Append returns: an event is acknowledged only when
// its batch is durable. A failed write or sync truncates the file back to its
// previous length. Committed lines are never rewritten, and a batch that does
// not continue the stored log is rejected.
//
// The caller admits events in its surface.Log first and then stores them:
//
//	evs, err := log.AppendBatch(proposals)
//	...
//	err = session.Append(evs) // or session.Persist(log)
//
// One writer per session: Open and the first Append of a created session take
// an exclusive advisory lock (flock) on the file, so a second writer, in this
// process or another, fails with a *LockedError until Close. The lock is the
// file's: Open checks, once it holds it, that the path still names the file
// it opened, so a file deleted (or replaced) meanwhile is not written to.
package jsonl
