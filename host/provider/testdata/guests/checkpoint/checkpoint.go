// Package checkpoint is a well-behaved test compaction plugin. It measures
// the session first (through the host's meter, when there is one). When
// the surface holds more than "maxNodes" nodes or the measurement more
// than "maxTokens" tokens (configuration; pressure), or on manual and
// overflow compaction, it summarizes every node after the
// system head except the newest one through the host's summarizer and
// proposes a compaction bracket whose checkpoint replaces them. It reads
// the session only through host imports (surface_nodes, generations,
// measure, message, summarize), keeps the number of compactions it
// proposed in its state blob, and records in compaction/start which method
// the host called.
package checkpoint

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/weirhost/weir/host/provider/testdata/guests/guestconf"
	"github.com/weirhost/weir/sdk"
	"github.com/weirhost/weir/sdk/abi"
)

var maxNodes, maxTokens = 8, int64(0)

func configure(raw []byte) error {
	var c struct {
		MaxNodes  int   `json:"maxNodes"`
		MaxTokens int64 `json:"maxTokens"`
	}
	if err := guestconf.Decode(raw, &c); err != nil {
		return err
	}
	if c.MaxNodes > 0 {
		maxNodes = c.MaxNodes
	}
	maxTokens = c.MaxTokens
	return nil
}

type compaction struct{}

func (compaction) PreStep(h *sdk.Host, req *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	return compact(h, req, "prestep")
}

func (compaction) Manual(h *sdk.Host, req *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	return compact(h, req, "manual")
}

func (compaction) Overflow(h *sdk.Host, req *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	return compact(h, req, "overflow")
}

// message is the part of a message this plugin reads.
type message struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// compact compacts; method names the call, which the compaction/start
// event records with the request's failure code and limits.
func compact(h *sdk.Host, req *sdk.CompactionRequest, method string) (*sdk.CompactionResult, error) {
	always := method != "prestep"
	total := int64(-1)
	if m, err := h.Measure(); err == nil {
		total = m.TotalTokens
	} else if !errors.Is(err, sdk.ErrNotGranted) {
		return nil, err
	}
	nodes, err := h.SurfaceNodes()
	if err != nil {
		return nil, err
	}
	if !always && len(nodes) <= maxNodes && (maxTokens <= 0 || total <= maxTokens) {
		return nil, nil
	}
	first := 0
	if len(nodes) > 0 && nodes[0].Type == "system/message" {
		first = 1
	}
	last := len(nodes) - 2
	// Keep tool calls with their results: cut only where every call is
	// answered.
	for last >= first && !balanced(h, nodes[first:last+1]) {
		last--
	}
	if last-first < 1 {
		return nil, nil
	}
	gen, err := h.Generations()
	if err != nil {
		return nil, err
	}
	var msgs [][]byte
	var shadowed []string
	seqs := []int64{gen.LogLength, gen.LogLength + 1}
	for _, n := range nodes[first : last+1] {
		m, err := h.Message(n.Seq)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
		seqs = append(seqs, n.Seq)
		shadowed = append(shadowed, strconv.FormatInt(n.Seq, 10))
	}
	sum, err := h.Summarize(&sdk.SummarizeRequest{Messages: msgs, Instruction: "Summarize the conversation so far.", MaxTokens: 256})
	if err != nil {
		return nil, err
	}
	summary := strings.Join(sum.Text, "")
	n := 1
	if len(req.State) > 0 {
		if v, err := strconv.Atoi(string(req.State)); err == nil {
			n = v + 1
		}
	}
	id := strconv.Quote("cp-" + strconv.FormatInt(gen.LogLength, 10))
	text := "<compacted-summary>" + summary + "</compacted-summary>"
	cp := `{"id":` + id + `,"role":"user","source":{"kind":"plugin","plugin":` + strconv.Quote(h.PluginName()) + `},"content":[{"type":"text","text":` + strconv.Quote(text) + `}]}`
	return &sdk.CompactionResult{
		Proposals: []sdk.Proposal{
			{Type: "compaction/start", Data: []byte(`{"compactionId":` + id + `,"turn":` + strconv.FormatInt(req.Turn, 10) +
				`,"method":"` + method + `","failure":` + strconv.Quote(req.Failure.Code) +
				`,"contextWindow":` + strconv.FormatInt(req.Limits.ContextWindow, 10) + `}`)},
			{Type: "compaction/summary", Data: []byte(`{"compactionId":` + id + `,"summary":` + strconv.Quote(summary) +
				`,"shadowedSeqs":[` + strings.Join(shadowed, ",") + `],"totalTokens":` + strconv.FormatInt(total, 10) + `}`)},
			{Type: "user/message", Data: []byte(cp),
				Intent:          sdk.Intent{Kind: abi.IntentReplace, StartSeq: nodes[first].Seq, EndSeq: nodes[last].Seq},
				SourceEventSeqs: seqs, HasSourceEventSeqs: true},
			{Type: "compaction/end", Data: []byte(`{"compactionId":` + id + `}`)},
		},
		State: []byte(strconv.Itoa(n)), HasState: true,
	}, nil
}

// balanced reports whether every tool call among nodes has its result
// among them.
func balanced(h *sdk.Host, nodes []sdk.Node) bool {
	open := 0
	for _, n := range nodes {
		switch n.Type {
		case "assistant/message":
			raw, err := h.Message(n.Seq)
			if err != nil {
				return false
			}
			var m message
			if json.Unmarshal(raw, &m) != nil {
				return false
			}
			for _, b := range m.Content {
				if b.Type == "tool-call" {
					open++
				}
			}
		case "tool/result":
			open--
		}
	}
	return open == 0
}

// Plugin is the plugin under the name a test loads it by.
func Plugin(name string) sdk.Plugin {
	return sdk.Plugin{Name: name, Version: "1.0.0", Configure: configure, Compaction: compaction{}}
}
