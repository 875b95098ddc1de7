package host

import (
	"encoding/hex"

	"github.com/weirhost/weir/surface"
)

// TypePluginState records a compaction plugin's state blob in the log: the
// blob the plugin returned, for the module it returned it from. The
// compaction adapter adds one to the batch of the call whose result changed
// the state, so the state and the events it describes are committed
// together or not at all. It is ignorable and log-only, and the state of a
// (session, plugin, module) is the blob of the latest such event: a resumed
// or replayed session restores exactly the state a live process had at the
// same seq (docs/abi.md §2).
const TypePluginState = "plugin/state"

// PluginState is the data of a plugin/state event.
type PluginState struct {
	// Plugin is the plugin's configured name; it must be the proposer's.
	Plugin string `json:"plugin"`
	// Module is the hex SHA-256 of the plugin's module: a new module
	// version starts from an empty state.
	Module string `json:"module"`
	// State is the blob (base64 in the JSON); empty is a valid state.
	State []byte `json:"state"`
}

// MaxPluginStateBytes bounds the state blob of one plugin/state event
// (1 MiB, the default state limit of a plugin's result).
const MaxPluginStateBytes = 1 << 20

// RulePluginState: a plugin/state event is ignorable and log-only, names
// the proposer as its plugin and a SHA-256 module, and holds at most
// MaxPluginStateBytes of state.
const RulePluginState surface.Rule = "plugin-state"

// checkPluginState enforces RulePluginState on proposal i of a batch.
func checkPluginState(by Proposer, first int64, i int, p *surface.Proposal) error {
	bad := func(format string, args ...any) error {
		return refuse(first, i, p.Type, RulePluginState, format, args...)
	}
	if by.Kind != ByCompaction {
		return bad("only a compaction provider's batch records plugin state, not %s's", by)
	}
	if !p.Ignorable || p.Op.Kind != surface.OpNone || p.Sources != nil {
		return bad("a plugin/state event is ignorable and log-only: ignorable: true, no surfaceOp, no sourceEventSeqs")
	}
	var d PluginState
	if err := unmarshal(p.Data, &d); err != nil {
		return bad("the data is not a plugin/state record: %v", err)
	}
	if d.Plugin != by.ID {
		return bad("the state names plugin %q; %s records only its own", d.Plugin, by)
	}
	if sum, err := hex.DecodeString(d.Module); err != nil || len(sum) != 32 {
		return bad("module must be a hex SHA-256, not %q", d.Module)
	}
	if len(d.State) > MaxPluginStateBytes {
		return bad("the state has %d bytes, more than %d", len(d.State), MaxPluginStateBytes)
	}
	return nil
}
