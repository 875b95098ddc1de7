// Package compactionbasic is Weir's first-party compaction plugin: the
// policy and transaction of package compact (spec section 11) running as a
// WebAssembly compaction provider. Weir ships it in its first-party module
// (plugins/firstparty); ./standalone builds it alone into a module of its
// own.
//
// The three compaction methods map to compact's reasons: compaction.prestep
// is Pressure, compaction.overflow is Overflow, compaction.manual is Manual.
// The plugin reads the session through the host imports (guest.go adapts
// *sdk.Host to compact.Session) and returns compact's proposals unchanged:
// compaction/start, compaction/summary, the checkpoint user/message
// replacing the span, compaction/end.
//
// # Configuration
//
// The configuration is compact's (spec 11.1 plus maxCompactionsPerWindow and
// windowTurns), parsed once per instance by compact.ParseConfig; an unknown
// key or a bad value fails the load with an error naming it.
//
// # State
//
// Instances are disposable, so the plugin keeps nothing between calls in
// memory. compact.State (the loop-safety window, the targets whose
// configuration error was reported, the overflow counters) travels in the
// state blob the host stores per session: each call decodes the blob it is
// given and returns the encoded state when it changed.
//
// # Differences from the native provider
//
//   - Warnings that come without proposals (a target's configuration error,
//     the compaction limit, the overflow recovery limit) are written to
//     stderr, which the host logs at WARN under the plugin's name, and the
//     call succeeds so the state that makes them "once only" is kept. The
//     native provider returns them as errors.
//   - The ABI carries no session id, so compaction ids derive from the seq
//     of the bracket's start alone (compact.CompactionID("", seq)): unique
//     within a session, the same across sessions.
//   - The host cannot hand its log to a guest, so the open-bracket check
//     (compact.BracketReader) is left to the host, which admits a bracket
//     in one batch and so never leaves one open.
//   - The compaction instruction travels in SummarizeRequest.instruction;
//     the host sends it as the final user message of the summarization
//     call, after the input messages.
package compactionbasic

import (
	"github.com/weirhost/weir/plugins/compaction-basic/compact"
	"github.com/weirhost/weir/sdk"
)

// Name is the plugin's name.
const Name = "compaction-basic"

// Plugin is the plugin to register (sdk.Register).
func Plugin() sdk.Plugin {
	p := &provider{cfg: compact.DefaultConfig()}
	return sdk.Plugin{
		Name:    Name,
		Version: "1.0.0",
		Configure: func(raw []byte) error {
			cfg, err := compact.ParseConfig(raw)
			if err != nil {
				return err
			}
			p.cfg = cfg
			return nil
		},
		Compaction: p,
	}
}
