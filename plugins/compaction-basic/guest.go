package compactionbasic

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/plugins/compaction-basic/compact"
	"github.com/weirhost/weir/sdk"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/surface"
)

// provider implements sdk.CompactionProvider over package compact. cfg is
// the same in every instance; session state lives in the state blob.
type provider struct {
	cfg *compact.Config
}

func (p *provider) PreStep(h *sdk.Host, req *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	return p.run(h, req, compact.Pressure)
}

func (p *provider) Manual(h *sdk.Host, req *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	return p.run(h, req, compact.Manual)
}

func (p *provider) Overflow(h *sdk.Host, req *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	return p.run(h, req, compact.Overflow)
}

// Region implements sdk.RegionCompactor (compaction.region): it
// summarizes exactly the requested span, which must be current surface
// nodes with tool-pairing balanced cuts and must not cover node 0's system
// prompt.
func (p *provider) Region(h *sdk.Host, req *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	return p.run(h, req, compact.Region)
}

// run decodes the state blob, runs one compaction and returns its proposals
// and, when it changed, the new state.
func (p *provider) run(h *sdk.Host, req *sdk.CompactionRequest, reason compact.Reason) (*sdk.CompactionResult, error) {
	st, err := compact.DecodeState(req.State)
	if err != nil {
		return nil, err
	}
	prev := req.State
	if len(prev) == 0 {
		prev = (&compact.State{}).Encode()
	}
	prev = bytes.Clone(prev) // req.State aliases the input buffer
	out, err := compact.Compact(&session{h: h}, p.cfg, compact.Request{
		Plugin: h.PluginName(),
		Reason: reason,
		Turn:   req.Turn,
		Route: compact.Route{Provider: req.Route.Provider, Model: req.Route.Model,
			ContextWindow: req.Limits.ContextWindow, MaxTokens: req.Limits.DefaultMaxTokens},
		Span: compact.Span{Start: req.RegionStartSeq, End: req.RegionEndSeq},
	}, st)
	if err != nil {
		return nil, err
	}
	if out.Warning != nil {
		fmt.Fprintf(os.Stderr, "%s: %s compaction: %v\n", Name, reason, out.Warning)
	}
	res := &sdk.CompactionResult{Proposals: make([]sdk.Proposal, len(out.Proposals))}
	for i, pr := range out.Proposals {
		res.Proposals[i] = toABI(pr)
	}
	if next := st.Encode(); !bytes.Equal(next, prev) {
		res.State, res.HasState = next, true
	}
	if reason == compact.Pressure && out.IdleBelow > 0 && len(res.Proposals) == 0 {
		res.IdleBelowTokens, res.HasIdleBelowTokens = out.IdleBelow, true
	}
	return res, nil
}

// toABI converts one of compact's proposals to the ABI's form.
func toABI(p surface.Proposal) sdk.Proposal {
	out := sdk.Proposal{Type: p.Type, Data: p.Data, Ignorable: p.Ignorable}
	switch p.Op.Kind {
	case surface.OpAppend:
		out.Intent.Kind = abi.IntentAppend
	case surface.OpReplace:
		out.Intent = abi.Intent{Kind: abi.IntentReplace, StartSeq: p.Op.Start, EndSeq: p.Op.End}
	}
	if p.Sources != nil {
		out.SourceEventSeqs, out.HasSourceEventSeqs = p.Sources, true
	}
	return out
}

// session is compact.Session over the host imports of one call. Messages
// are immutable once committed, so they are decoded at most once per call.
type session struct {
	h    *sdk.Host
	msgs map[int64]*surface.Message
}

func (s *session) Nodes() ([]compact.Node, error) {
	nodes, err := s.h.SurfaceNodes()
	if err != nil {
		return nil, err
	}
	out := make([]compact.Node, len(nodes))
	for i, n := range nodes {
		out[i] = compact.Node{Seq: n.Seq, Type: n.Type}
		if n.Type == surface.TypeAssistantMessage {
			// Range selection keeps tool calls and results together, so it
			// needs the calls of every assistant node.
			m, err := s.Message(n.Seq)
			if err != nil {
				return nil, err
			}
			out[i].ToolCalls = len(m.ToolCalls())
		}
	}
	return out, nil
}

func (s *session) Message(seq int64) (*surface.Message, error) {
	if m, ok := s.msgs[seq]; ok {
		return m, nil
	}
	raw, err := s.h.Message(seq)
	if err != nil {
		return nil, fmt.Errorf("message of seq %d: %w", seq, err)
	}
	dm, err := surface.DecodeMessage(raw)
	if err != nil {
		return nil, fmt.Errorf("message of seq %d: %w", seq, err)
	}
	m := &dm
	if s.msgs == nil {
		s.msgs = map[int64]*surface.Message{}
	}
	s.msgs[seq] = m
	return m, nil
}

func (s *session) Header() (*surface.Header, error) {
	raw, err := s.h.Header()
	if errors.Is(err, sdk.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	h, err := surface.DecodeHeader(raw)
	if err != nil {
		return nil, fmt.Errorf("request header: %w", err)
	}
	h = h.Canonical()
	return &h, nil
}

func (s *session) NextSeq() (int64, error) {
	g, err := s.h.Generations()
	return g.LogLength, err
}

// Measure asks the session's token meter; a session without one is priced
// with the fixed estimator, as the native provider does.
func (s *session) Measure() (*compact.Measurement, error) {
	m, err := s.h.Measure()
	if errors.Is(err, sdk.ErrNotGranted) || errors.Is(err, sdk.ErrNotFound) {
		return compact.Estimate(s)
	}
	if err != nil {
		return nil, err
	}
	out := &compact.Measurement{TotalTokens: m.TotalTokens, Nodes: make([]compact.NodeTokens, len(m.Nodes))}
	for i, n := range m.Nodes {
		out.Nodes[i] = compact.NodeTokens{Seq: n.Seq, Tokens: n.Tokens, HeuristicTokens: n.HeuristicTokens}
	}
	return out, nil
}

func (s *session) Summarize(req *compact.SummaryRequest) (*compact.SummaryResult, error) {
	in := &sdk.SummarizeRequest{Instruction: req.Instruction, MaxTokens: req.MaxTokens,
		Route: sdk.Route{Provider: req.Provider, Model: req.Model}}
	for _, m := range req.Messages {
		b, err := surface.AppendMessage(nil, m)
		if err != nil {
			return nil, fmt.Errorf("encode summarization input: %w", err)
		}
		in.Messages = append(in.Messages, b)
	}
	if len(req.Tools) > 0 {
		b, err := toolList(req.Tools)
		if err != nil {
			return nil, fmt.Errorf("encode summarization tools: %w", err)
		}
		in.Tools = b
	}
	r, err := s.h.Summarize(in)
	if err != nil {
		return nil, err
	}
	out := &compact.SummaryResult{FinishReason: r.FinishReason, Provider: r.Route.Provider, Model: r.Route.Model,
		LLMStreamCall: r.LLMStreamCall}
	// raw_output holds every output block (reasoning, tool calls, images),
	// which compact needs to reject or record; text is its text part.
	if len(r.RawOutput) > 0 {
		if out.Content, err = surface.DecodeBlocks(r.RawOutput); err != nil {
			return nil, fmt.Errorf("summarization output: %w", err)
		}
	} else {
		for _, t := range r.Text {
			out.Content = append(out.Content, surface.Text(t))
		}
	}
	if len(r.Usage) > 0 {
		u, err := surface.DecodeUsage(r.Usage)
		if err != nil {
			return nil, fmt.Errorf("summarization usage: %w", err)
		}
		out.Usage = &u
	}
	return out, nil
}

// toolList encodes tool schemas as one JSON array, each written as the
// encoder writes a raw value (what json.Marshal of a []jsontext.Value
// writes, without reflection).
func toolList(tools [][]byte) ([]byte, error) {
	var buf bytes.Buffer
	enc := jsontext.NewEncoder(&buf)
	if err := enc.WriteToken(jsontext.BeginArray); err != nil {
		return nil, err
	}
	for _, t := range tools {
		if err := enc.WriteValue(t); err != nil {
			return nil, err
		}
	}
	if err := enc.WriteToken(jsontext.EndArray); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}
