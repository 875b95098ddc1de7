// Command legacy is a test compaction plugin written to the rules of an
// older ABI minor: it declares the minor its configuration names
// ({"minor": N}, default 2). On manual compaction it replaces every node
// after the system head except the newest with one checkpoint. Declaring
// minor 2 it brackets the checkpoint (compaction/start, summary, end), as
// minor 2 requires; declaring minor 0 or 1 it proposes the checkpoint
// alone, which those minors allowed and the host brackets for it; with
// {"bare": true} it does so whatever it declares.
package main

import (
	"encoding/json"
	"strconv"

	"github.com/weirhost/weir/sdk"
	"github.com/weirhost/weir/sdk/abi"
)

// minor is the declared minor; the registered plugin points at it, so the
// configuration (read at init, before describe) sets what describe says.
var minor = uint32(abi.Minor)

// bare ({"bare": true}) proposes the checkpoint alone whatever the minor.
var bare bool

func configure(raw []byte) error {
	c := struct {
		Minor uint32 `json:"minor"`
		Bare  bool   `json:"bare"`
	}{Minor: minor}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &c); err != nil {
			return err
		}
	}
	minor, bare = c.Minor, c.Bare
	return nil
}

type compaction struct{}

func (compaction) PreStep(*sdk.Host, *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	return nil, nil
}

func (compaction) Overflow(*sdk.Host, *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	return nil, nil
}

func (compaction) Manual(h *sdk.Host, req *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	nodes, err := h.SurfaceNodes()
	if err != nil || len(nodes) < 3 {
		return nil, err
	}
	gen, err := h.Generations()
	if err != nil {
		return nil, err
	}
	shadow := nodes[1 : len(nodes)-1]
	var seqs []int64
	var list []byte
	for i, n := range shadow {
		seqs = append(seqs, n.Seq)
		if i > 0 {
			list = append(list, ',')
		}
		list = strconv.AppendInt(list, n.Seq, 10)
	}
	id := strconv.Quote("legacy-" + strconv.FormatInt(gen.LogLength, 10))
	cp := sdk.Proposal{Type: "user/message",
		Data: []byte(`{"id":` + id + `,"role":"user","source":{"kind":"plugin","plugin":` + strconv.Quote(h.PluginName()) +
			`},"content":[{"type":"text","text":"<compacted-summary>earlier turns</compacted-summary>"}]}`),
		Intent:          sdk.Intent{Kind: abi.IntentReplace, StartSeq: shadow[0].Seq, EndSeq: shadow[len(shadow)-1].Seq},
		SourceEventSeqs: seqs, HasSourceEventSeqs: true}
	if minor <= 1 || bare {
		return &sdk.CompactionResult{Proposals: []sdk.Proposal{cp}}, nil
	}
	cp.SourceEventSeqs = append([]int64{gen.LogLength, gen.LogLength + 1}, seqs...)
	return &sdk.CompactionResult{Proposals: []sdk.Proposal{
		{Type: "compaction/start", Data: []byte(`{"compactionId":` + id + `,"turn":null}`)},
		{Type: "compaction/summary", Data: []byte(`{"compactionId":` + id + `,"shadowedSeqs":[` + string(list) + `]}`)},
		cp,
		{Type: "compaction/end", Data: []byte(`{"compactionId":` + id + `}`)},
	}}, nil
}

func init() {
	sdk.Register(sdk.Plugin{Name: "legacy", Version: "1.0.0", Configure: configure, Compaction: compaction{}, ABIMinor: &minor})
}

func main() {}
