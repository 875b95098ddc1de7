package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf16"

	"github.com/weirhost/weir/sdk"
	"github.com/weirhost/weir/sdk/abi"
)

// pruner implements sdk.CompactionProvider. It keeps only its
// configuration; what it learns about a session lives in the state blob.
type pruner struct{ cfg config }

func (p *pruner) PreStep(h *sdk.Host, req *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	return p.run(h, req, true)
}

func (p *pruner) Manual(h *sdk.Host, req *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	return p.run(h, req, false)
}

func (p *pruner) Overflow(h *sdk.Host, req *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	return p.run(h, req, false)
}

// origin is the turn and step a tool result was made in.
type origin struct{ Turn, Step int64 }

// state is what the pruner remembers about a session, in the state blob.
type state struct {
	// Turn and Step of the last pre-step call (Step 0: not known), and the
	// log length at that call.
	Turn, Step, LogLength int64
	// Origins of the tool results on the surface the pruner attributed.
	Origins map[int64]origin
	// Tried are the tool results the last call proposed to rewrite, and
	// Pending the origins of the rewrites, by the seqs they were to get.
	Tried   []int64
	Pending map[int64]origin
}

const (
	typeToolResult = "tool/result"
	typeAssistant  = "assistant/message"
	typePrune      = "compaction/prune"
)

func (p *pruner) run(h *sdk.Host, req *sdk.CompactionRequest, prestep bool) (*sdk.CompactionResult, error) {
	var st state
	if len(req.State) > 0 {
		if err := json.Unmarshal(req.State, &st); err != nil {
			return nil, fmt.Errorf("state blob: %w", err)
		}
	}
	nodes, err := h.SurfaceNodes()
	if err != nil {
		return nil, err
	}
	gens, err := h.Generations()
	if err != nil {
		return nil, err
	}
	st.settle(nodes)
	if prestep {
		st.learn(req, nodes, gens.LogLength)
		if hot, err := p.underPressure(h, req); err != nil || !hot {
			return st.result(nil), err
		}
	}
	var proposals []sdk.Proposal
	for _, n := range p.candidates(nodes, &st) {
		o := st.Origins[n.Seq]
		msg, err := h.Message(n.Seq)
		if err != nil {
			return nil, err
		}
		pruned, ok, err := rewrite(msg, p.cfg.Notice)
		if err != nil {
			return nil, fmt.Errorf("tool result seq %d: %w", n.Seq, err)
		}
		if !ok {
			delete(st.Origins, n.Seq) // not a plain successful result: leave it alone for good
			continue
		}
		price, err := heuristicPrice(msg)
		if err != nil {
			return nil, fmt.Errorf("tool result seq %d: %w", n.Seq, err)
		}
		pruneSeq := gens.LogLength + int64(len(proposals))
		note, _ := json.Marshal(map[string]any{
			"shadowedRange": map[string]int64{"start": n.Seq, "end": n.Seq}, "shadowedSeqs": []int64{n.Seq},
			"shadowedTokenCount": price, "bytes": n.Size,
		})
		data, _ := json.Marshal(map[string]any{"turn": o.Turn, "step": o.Step, "message": json.RawMessage(pruned)})
		proposals = append(proposals,
			sdk.Proposal{Type: typePrune, Data: note},
			sdk.Proposal{Type: typeToolResult, Data: data,
				Intent:          abi.Intent{Kind: abi.IntentReplace, StartSeq: n.Seq, EndSeq: n.Seq},
				SourceEventSeqs: []int64{pruneSeq, n.Seq}, HasSourceEventSeqs: true})
		st.Tried = append(st.Tried, n.Seq)
		if st.Pending == nil {
			st.Pending = map[int64]origin{}
		}
		st.Pending[pruneSeq+1] = o // the rewrite keeps its origin
	}
	return st.result(proposals), nil
}

// settle accounts for what happened since the last call: the rewrites it
// proposed were admitted (their originals left the surface) or refused
// (then it gives up on those results), and results that left the surface
// are forgotten.
func (st *state) settle(nodes []sdk.Node) {
	on := make(map[int64]bool, len(nodes))
	for _, n := range nodes {
		on[n.Seq] = true
	}
	refused := len(st.Tried) > 0 && on[st.Tried[0]] // a batch is admitted whole or not at all
	for _, seq := range st.Tried {
		delete(st.Origins, seq)
	}
	if !refused && len(st.Pending) > 0 {
		if st.Origins == nil {
			st.Origins = map[int64]origin{}
		}
		for seq, o := range st.Pending {
			st.Origins[seq] = o
		}
	}
	st.Tried, st.Pending = nil, nil
	for seq := range st.Origins {
		if !on[seq] {
			delete(st.Origins, seq)
		}
	}
}

// learn attributes the tool results that appeared since the last pre-step
// call to that call's step, when it is sure no other step went by, and
// records this call's turn and step. The request's step is used when the
// host gives it; otherwise steps are counted from 1 in each turn.
func (st *state) learn(req *sdk.CompactionRequest, nodes []sdk.Node, logLength int64) {
	replies := 0
	for _, n := range nodes {
		if n.Seq >= st.LogLength && n.Type == typeAssistant {
			replies++
		}
	}
	if st.Step > 0 && replies == 1 {
		for _, n := range nodes {
			if n.Seq >= st.LogLength && n.Type == typeToolResult {
				if _, known := st.Origins[n.Seq]; !known {
					if st.Origins == nil {
						st.Origins = map[int64]origin{}
					}
					st.Origins[n.Seq] = origin{st.Turn, st.Step}
				}
			}
		}
	}
	step := req.Step
	switch {
	case step > 0:
	case req.Turn != st.Turn && replies <= 1:
		step = 1
	case req.Turn == st.Turn && st.Step > 0 && replies == 1:
		step = st.Step + 1
	}
	st.Turn, st.Step, st.LogLength = req.Turn, step, logLength
}

// underPressure reports whether the measured request reached triggerRatio
// of the context window. Without a window or a measurement there is no
// pressure to judge, and the pruner stays out of the way.
func (p *pruner) underPressure(h *sdk.Host, req *sdk.CompactionRequest) (bool, error) {
	if req.Limits.ContextWindow <= 0 {
		return false, nil
	}
	m, err := h.Measure()
	if errors.Is(err, sdk.ErrNotGranted) || errors.Is(err, sdk.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return float64(m.TotalTokens) >= p.cfg.TriggerRatio*float64(req.Limits.ContextWindow), nil
}

// candidates are the attributed tool results of at least minBytes, except
// the keepRecent newest tool results, oldest first, at most maxPerCall.
func (p *pruner) candidates(nodes []sdk.Node, st *state) []sdk.Node {
	var results []sdk.Node
	for _, n := range nodes {
		if n.Type == typeToolResult {
			results = append(results, n)
		}
	}
	results = results[:max(0, len(results)-p.cfg.KeepRecent)]
	var out []sdk.Node
	for _, n := range results {
		if _, known := st.Origins[n.Seq]; known && n.Size >= p.cfg.MinBytes && len(out) < p.cfg.MaxPerCall {
			out = append(out, n)
		}
	}
	return out
}

func (st *state) result(proposals []sdk.Proposal) *sdk.CompactionResult {
	blob, _ := json.Marshal(st) // maps are written in key order: the same state, the same bytes
	return &sdk.CompactionResult{Proposals: proposals, State: blob, HasState: true}
}

// rewrite returns the tool-result message msg with the inner content of its
// tool-result block replaced by notice; every other member is kept as it
// is. ok is false for a message that is not one successful tool result.
func rewrite(msg []byte, notice string) (out []byte, ok bool, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, false, err
	}
	var content []map[string]json.RawMessage
	if err := json.Unmarshal(m["content"], &content); err != nil {
		return nil, false, err
	}
	if len(content) != 1 || string(content[0]["type"]) != `"tool-result"` || string(content[0]["isError"]) == "true" {
		return nil, false, nil
	}
	if content[0]["content"], err = json.Marshal([]map[string]string{{"type": "text", "text": notice}}); err != nil {
		return nil, false, err
	}
	if m["content"], err = json.Marshal(content); err != nil {
		return nil, false, err
	}
	out, err = json.Marshal(m)
	return out, err == nil, err
}

// block is the part of a content block the fixed estimator reads.
type block struct {
	Type      string            `json:"type"`
	Text      string            `json:"text"`
	Name      string            `json:"name"`
	Arguments string            `json:"arguments"`
	Content   []json.RawMessage `json:"content"`
}

// heuristicPrice prices a message with the fixed estimator of the
// behaviour spec (12.1): ceil(len/4)+4 per text (UTF-16 lengths), the inner
// content plus 4 per tool result, 4 plus a quarter of the JSON for other
// blocks, plus 4 for the message.
func heuristicPrice(msg []byte) (int64, error) {
	var m struct {
		Content []json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return 0, err
	}
	n, err := priceBlocks(m.Content)
	return n + 4, err
}

func priceBlocks(raw []json.RawMessage) (int64, error) {
	quarter := func(s string) int64 { return (int64(len(utf16.Encode([]rune(s)))) + 3) / 4 }
	var n int64
	for _, r := range raw {
		var b block
		if err := json.Unmarshal(r, &b); err != nil {
			return 0, err
		}
		switch b.Type {
		case "text", "reasoning":
			n += quarter(b.Text) + 4
		case "tool-call":
			n += quarter(b.Name) + quarter(b.Arguments) + 4
		case "tool-result":
			inner, err := priceBlocks(b.Content)
			if err != nil {
				return 0, err
			}
			n += inner + 4
		default:
			n += 4 + quarter(string(r))
		}
	}
	return n, nil
}
