package host

import (
	"context"
	"fmt"
	"strings"

	"github.com/weirhost/weir/surface"
)

// CompactReceipt is what a compaction would do to the current surface:
// one entry per compaction that acted, and the surface before and after.
type CompactReceipt struct {
	// Changed reports whether the surface would be rewritten.
	Changed     bool                `json:"changed"`
	NodesBefore int                 `json:"nodesBefore"`
	NodesAfter  int                 `json:"nodesAfter"`
	Compactions []CompactionReceipt `json:"compactions"`
	// SummarizeCalls counts the model calls the compactions made.
	SummarizeCalls int `json:"summarizeCalls"`
	// Failures are the plugin failures the run recorded.
	Failures []PluginFailure `json:"failures"`
}

// CompactionReceipt is one compaction's receipt.
type CompactionReceipt struct {
	Provider     string `json:"provider"`
	CompactionID string `json:"compactionId,omitzero"`
	// Start and End are the seqs bounding the replaced range (inclusive).
	Start int64 `json:"startSeq"`
	End   int64 `json:"endSeq"`
	// Shadowed are the seqs of the surface nodes the checkpoint replaces.
	Shadowed []int64 `json:"shadowedSeqs"`
	// TokensBefore and TokensAfter are the surface's tokens as the
	// provider measured them (0 when it did not say).
	TokensBefore int64 `json:"tokensBefore"`
	TokensAfter  int64 `json:"tokensAfter"`
	// Checkpoint is the text of the message that replaces the range.
	Checkpoint string `json:"checkpoint"`
	// Pruned counts tool results rewritten in place.
	Pruned int    `json:"pruned,omitzero"`
	Error  string `json:"error,omitzero"`
}

// Fork returns an in-memory copy of the session: the same id and events,
// no store. Whatever is proposed to the fork stays in memory.
func (s *Session) Fork() (*Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, err := surface.RestoreWindow(s.log.BaseSeq(), s.log.Events())
	if err != nil {
		return nil, fmt.Errorf("fork session %s: %w", s.id, err)
	}
	return NewSession(s.id, l, nil, WithIDs(CounterIDs("fork"))), nil
}

// CompactDryRun runs the agent's manual compaction on an in-memory fork of
// its session and returns the receipt; the session itself is not written.
// The compaction providers run as configured, so summarize calls reach
// the configured summarizer (by default the conversation's model). The
// meter's measurements are of the session before the compaction, which
// the fork equals when each provider is asked.
//
// It is serialised with turns: while a turn runs on the session it
// returns an error matching ErrBusy.
func (a *Agent) CompactDryRun(ctx context.Context) (*CompactReceipt, error) {
	release, err := a.s.acquire("dry-run a compaction")
	if err != nil {
		return nil, err
	}
	defer release()
	if t, _ := a.s.log.OpenTurn(); t != 0 {
		return nil, fmt.Errorf("compaction is busy: turn %d is open", t)
	}
	fork, err := a.s.Fork()
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	cfg := a.cfg
	a.mu.Unlock()
	cfg.Meter = nil // the meter folds the real session; it must not see the fork's events
	b, err := NewAgent(fork, cfg)
	if err != nil {
		return nil, err
	}
	b.cfg.Meter = a.cfg.Meter
	from, before := fork.log.NextSeq(), fork.log.NodeCount()
	changed, err := b.CompactNow(ctx)
	r := ReceiptOf(fork.log.Events()[from-fork.log.BaseSeq():])
	r.Changed, r.NodesBefore, r.NodesAfter = changed, before, fork.log.NodeCount()
	return r, err
}

// ReceiptOf reads the compaction receipts from a run of events (those a
// compaction appended).
func ReceiptOf(events []surface.Event) *CompactReceipt {
	r := &CompactReceipt{Compactions: []CompactionReceipt{}, Failures: []PluginFailure{}}
	byID := map[string]int{}
	get := func(id string) *CompactionReceipt {
		i, ok := byID[id]
		if !ok {
			r.Compactions = append(r.Compactions, CompactionReceipt{CompactionID: id})
			i = len(r.Compactions) - 1
			byID[id] = i
		}
		return &r.Compactions[i]
	}
	current := "" // the open bracket's compaction id
	for _, ev := range events {
		switch ev.Type {
		case surface.TypeCompactionStart:
			var d struct {
				ID string `json:"compactionId"`
			}
			if unmarshal(ev.Data, &d) == nil {
				current = d.ID
				get(d.ID)
			}
		case surface.TypeCompactionSummary:
			var d struct {
				ID    string `json:"compactionId"`
				Range struct {
					Start int64 `json:"start"`
					End   int64 `json:"end"`
				} `json:"shadowedRange"`
				Shadowed []int64 `json:"shadowedSeqs"`
			}
			if unmarshal(ev.Data, &d) == nil {
				c := get(d.ID)
				c.Start, c.End, c.Shadowed = d.Range.Start, d.Range.End, d.Shadowed
			}
		case surface.TypeCompactionEnd:
			var d struct {
				ID     string `json:"compactionId"`
				Before int64  `json:"tokensBefore"`
				After  int64  `json:"tokensAfter"`
				Error  string `json:"error"`
			}
			if unmarshal(ev.Data, &d) == nil {
				c := get(d.ID)
				c.TokensBefore, c.TokensAfter, c.Error = d.Before, d.After, d.Error
			}
		case surface.TypeUserMessage:
			if ev.Op.Kind != surface.OpReplace {
				continue
			}
			var m surface.Message
			if unmarshal(ev.Data, &m) != nil {
				continue
			}
			id, ok := checkpointID(ev.Data)
			if !ok {
				id = current
			}
			c := get(id)
			c.Provider = m.Source.Plugin
			c.Checkpoint = textOf(&m)
			if len(c.Shadowed) == 0 {
				// The sources cite the bracket's events and the shadowed
				// nodes; the nodes lie in the replaced range.
				for _, seq := range ev.Sources {
					if seq >= ev.Op.Start && seq <= ev.Op.End {
						c.Shadowed = append(c.Shadowed, seq)
					}
				}
			}
			if c.Start == 0 && c.End == 0 {
				c.Start, c.End = ev.Op.Start, ev.Op.End
			}
		case surface.TypeToolResult:
			if ev.Op.Kind == surface.OpReplace {
				var m surface.Message
				id := ""
				if unmarshal(ev.Data, &m) == nil {
					id = "prune:" + m.Source.Plugin
				}
				c := get(id)
				c.Provider = m.Source.Plugin
				c.Pruned++
				c.Shadowed = append(c.Shadowed, ev.Sources...)
			}
		case TypePluginCall:
			var d PluginCall
			if unmarshal(ev.Data, &d) == nil && d.Outcome != "refused" {
				r.SummarizeCalls++
				for i := range r.Compactions {
					if r.Compactions[i].CompactionID == d.CompactionID && r.Compactions[i].Provider == "" {
						r.Compactions[i].Provider = d.Plugin
					}
				}
			}
		case surface.TypePluginFailure:
			var f PluginFailure
			if unmarshal(ev.Data, &f) == nil {
				r.Failures = append(r.Failures, f)
			}
		}
	}
	return r
}

func textOf(m *surface.Message) string {
	var parts []string
	for _, b := range m.Content {
		if b.Type == surface.BlockText {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}
