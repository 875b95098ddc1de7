// Package native runs compaction-basic in the host process: Provider
// implements host.CompactionProvider on top of package compact, adapting the
// host's provider view ([Adapt]) to compact.Session. The host uses it until
// the WebAssembly build of the plugin exists, and tests use it with the real
// agent loop.
//
// The host calls Compact before each step (pressure), after a
// context-overflow failure and for manual compaction; it admits the
// returned proposals all or nothing. Provider keeps compact.State per
// session in memory. Non-fatal warnings that come without proposals
// (configuration errors once per provider/model, the compaction limit once
// per turn) are returned as errors so the host logs them; a warning that
// comes with proposals is logged through the configured logger and recorded
// in compaction/end. Sessions without a token meter are measured with the
// fixed heuristic (compact.Estimate).
package native
