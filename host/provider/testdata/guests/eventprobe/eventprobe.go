// Package eventprobe is a test compaction plugin for the event import. On
// manual compaction it reads, through event, every seq of the log and the
// one past its end, and proposes one ignorable probe/events event listing
// what it got: each event's seq, type and data, and the error of the read
// past the end. It proposes nothing else and does not implement
// compaction.region.
package eventprobe

import (
	"encoding/json"

	"github.com/weirhost/weir/sdk"
)

type compaction struct{}

func (compaction) PreStep(*sdk.Host, *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	return nil, nil
}

func (compaction) Overflow(*sdk.Host, *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	return nil, nil
}

type seen struct {
	Seq  int64           `json:"seq"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

func (compaction) Manual(h *sdk.Host, _ *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	gen, err := h.Generations()
	if err != nil {
		return nil, err
	}
	var out struct {
		Events []seen `json:"events"`
		Past   string `json:"past"`
	}
	for seq := int64(0); seq < gen.LogLength; seq++ {
		e, err := h.Event(seq)
		if err != nil {
			return nil, err
		}
		out.Events = append(out.Events, seen{Seq: e.Seq, Type: e.Type, Data: e.Data})
	}
	if _, err := h.Event(gen.LogLength); err != nil {
		out.Past = err.Error()
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &sdk.CompactionResult{Proposals: []sdk.Proposal{{Type: "probe/events", Data: data, Ignorable: true}}}, nil
}

// Plugin is the plugin under the name a test loads it by.
func Plugin(name string) sdk.Plugin {
	return sdk.Plugin{Name: name, Version: "1.0.0", Events: []string{"probe/events"}, Compaction: compaction{}}
}
