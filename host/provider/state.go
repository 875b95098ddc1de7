package provider

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/surface"
)

// Durable plugin state.
//
// A compaction plugin's state blob lives in the session's log, as
// host.TypePluginState events: when a result returns a state that differs
// from the current one, the adapter adds a plugin/state event to the
// result's batch, so the state is committed with the events it was made
// with, or refused with them. The state a request carries is always read
// back from the log: the blob of the latest plugin/state event of this
// plugin and module, or empty when there is none. One process, one process
// per turn and a process resumed after a kill at any seq therefore hand
// the plugin the same state at the same seq, and an export of the log
// carries it.
//
// A token meter's state is a fold of the log's events, so the log is its
// durable truth already (StateCache only saves the fold); a prompt plugin
// has no state: prompt.render is a function of its request.

// loggedState is the fold of a session's plugin/state events for one
// plugin module: the blob of the latest, as of the events before next.
type loggedState struct {
	next  int64
	last  surface.Event // the event at next-1, as read
	state []byte
}

// sync reads the plugin/state events committed since the last call and
// returns the current blob. A log that no longer holds what was read (a
// session reopened from a shorter store, after a kill) is read again from
// the start.
func (l *loggedState) sync(r events, plugin, module string) []byte {
	end := r.NextSeq()
	if l.next > 0 {
		e, ok := r.Event(l.next - 1)
		if end < l.next || !ok || e.Type != l.last.Type || e.Time != l.last.Time || !bytes.Equal(e.Data, l.last.Data) {
			*l = loggedState{}
		}
	}
	for seq := l.next; seq < end; seq++ {
		e, ok := r.Event(seq)
		if !ok || e.Type != host.TypePluginState {
			continue
		}
		var d host.PluginState
		if json.Unmarshal(e.Data, &d) != nil || d.Plugin != plugin || d.Module != module {
			continue
		}
		l.state = d.State
	}
	if end > l.next {
		if e, ok := r.Event(end - 1); ok {
			l.last = e.Clone()
		}
	}
	l.next = end
	return l.state
}

// events is what reading plugin/state events needs of a log.
type events interface {
	NextSeq() int64
	Event(seq int64) (surface.Event, bool)
}

// StateOf returns the state blob a log holds for a plugin module (its
// SHA-256): that of the latest plugin/state event of that plugin and
// module, or nil. It is the state the compaction adapter hands the plugin
// on its next call.
func StateOf(r events, plugin string, module [32]byte) []byte {
	var l loggedState
	return bytes.Clone(l.sync(r, plugin, hex.EncodeToString(module[:])))
}

// stateProposal is the plugin/state event recording blob for a plugin
// module.
func stateProposal(plugin, module string, blob []byte) (surface.Proposal, error) {
	if blob == nil {
		blob = []byte{}
	}
	data, err := surface.Data(host.PluginState{Plugin: plugin, Module: module, State: blob})
	if err != nil {
		return surface.Proposal{}, fmt.Errorf("plugin %q: state: %w", plugin, err)
	}
	return surface.Proposal{Type: host.TypePluginState, Data: data, Ignorable: true}, nil
}
