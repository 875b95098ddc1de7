package native

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/hashicorp/go-hclog"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/plugins/compaction-basic/compact"
	"github.com/weirhost/weir/surface"
)

// ID is the provider id of compaction-basic.
const ID = "compaction-basic"

// Provider is compaction-basic as a native host.CompactionProvider. It
// keeps one compact.State per session id, in memory.
type Provider struct {
	id  string
	cfg *compact.Config
	log hclog.Logger

	mu     sync.Mutex // guards states
	states map[string]*sessionState
}

// sessionState is the state of one session; its lock serializes the
// provider's calls on that session only.
type sessionState struct {
	mu sync.Mutex
	st compact.State
}

// Option configures a Provider.
type Option func(*Provider)

// WithLogger sets the logger that receives the warnings that come with
// proposals (still above the threshold after the last pass).
func WithLogger(l hclog.Logger) Option { return func(p *Provider) { p.log = l } }

// WithID sets the provider id (default ID).
func WithID(id string) Option { return func(p *Provider) { p.id = id } }

// New returns a provider configured by config, the plugin configuration as
// JSON (empty for the defaults).
func New(config []byte, opts ...Option) (*Provider, error) {
	cfg, err := compact.ParseConfig(config)
	if err != nil {
		return nil, err
	}
	p := &Provider{id: ID, cfg: cfg, log: hclog.NewNullLogger(), states: map[string]*sessionState{}}
	for _, o := range opts {
		o(p)
	}
	return p, nil
}

// ID is the provider id.
func (p *Provider) ID() string { return p.id }

// Config is the parsed configuration.
func (p *Provider) Config() *compact.Config { return p.cfg }

// State returns a copy of the state kept for a session.
func (p *Provider) State(sessionID string) compact.State {
	ss := p.session(sessionID)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	st, err := compact.DecodeState(ss.st.Encode())
	if err != nil {
		panic(err) // Encode and DecodeState are inverses
	}
	return *st
}

func (p *Provider) session(sessionID string) *sessionState {
	p.mu.Lock()
	defer p.mu.Unlock()
	ss := p.states[sessionID]
	if ss == nil {
		ss = &sessionState{}
		p.states[sessionID] = ss
	}
	return ss
}

var reasons = map[host.CompactionReason]compact.Reason{
	host.CompactPressure: compact.Pressure,
	host.CompactOverflow: compact.Overflow,
	host.CompactManual:   compact.Manual,
	host.CompactRegion:   compact.Region,
}

// CompactsRegion implements host.RegionCompactor: the provider compacts a
// requested region (Agent.CompactRegion).
func (p *Provider) CompactsRegion() bool { return true }

// Compact implements host.CompactionProvider.
//
// Warnings without proposals (a target's configuration error, once per
// provider/model; the compaction limit, once per turn; the overflow
// recovery limit) are returned as the error, which the host logs as a
// warning while the step goes on. A warning that comes with proposals is
// logged here and recorded in the last compaction/end, and the proposals
// are returned.
func (p *Provider) Compact(ctx context.Context, view *host.View, req host.CompactionRequest) ([]surface.Proposal, error) {
	reason, ok := reasons[req.Reason]
	if !ok {
		return nil, fmt.Errorf("compaction-basic: unknown compaction reason %q", req.Reason)
	}
	return p.run(ctx, view, compact.Request{Reason: reason, Turn: req.Turn, Route: route(req.Route), SessionID: view.SessionID(),
		Span: compact.Span{Start: req.Start, End: req.End}, Plugin: p.id})
}

// CompactRegion compacts the explicit span start..end of the surface, in
// the open turn if one is (else between turns). Agent.CompactRegion asks
// through Compact; a caller holding a view (a wrapping provider, a tool)
// may use this.
func (p *Provider) CompactRegion(ctx context.Context, view *host.View, r host.Route, span compact.Span) ([]surface.Proposal, error) {
	turn, _ := view.OpenTurn()
	return p.run(ctx, view, compact.Request{Reason: compact.Region, Turn: turn, Route: route(r), SessionID: view.SessionID(), Span: span, Plugin: p.id})
}

func (p *Provider) run(ctx context.Context, view *host.View, req compact.Request) ([]surface.Proposal, error) {
	ss := p.session(req.SessionID)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out, err := compact.Compact(Adapt(ctx, view), p.cfg, req, &ss.st)
	if err != nil {
		return nil, fmt.Errorf("compaction-basic: %w", err)
	}
	if out.Warning != nil {
		if len(out.Proposals) == 0 {
			return nil, fmt.Errorf("compaction-basic: %w", out.Warning)
		}
		p.log.Warn("compaction proposed, with a warning", "provider", p.id, "reason", req.Reason, "warning", out.Warning)
	}
	return out.Proposals, nil
}

func route(r host.Route) compact.Route {
	return compact.Route{Provider: r.Provider, Model: r.Model, ContextWindow: r.ContextWindow, MaxTokens: r.MaxTokens}
}

// Adapt presents a host view as a compact.Session (and BracketReader).
// Measure falls back to the fixed heuristic (compact.Estimate) when the
// session has no token meter; Summarize forwards ctx and turns a panicking
// summarizer into an error.
func Adapt(ctx context.Context, view *host.View) compact.Session {
	return &session{ctx: ctx, v: view}
}

type session struct {
	ctx context.Context
	v   *host.View
}

func (s *session) Nodes() ([]compact.Node, error) {
	infos := s.v.Nodes()
	out := make([]compact.Node, len(infos))
	for i, n := range infos {
		out[i] = compact.Node{Seq: n.Seq, Type: n.Type, ToolCalls: n.ToolCalls}
	}
	return out, nil
}

func (s *session) Message(seq int64) (*surface.Message, error) {
	m, ok := s.v.Message(seq)
	if !ok {
		return nil, fmt.Errorf("seq %d holds no surface message", seq)
	}
	return m, nil
}

func (s *session) Header() (*surface.Header, error) { return s.v.Header(), nil }

func (s *session) NextSeq() (int64, error) { return s.v.NextSeq(), nil }

func (s *session) Measure() (*compact.Measurement, error) {
	m, err := s.v.Measure(s.ctx, nil)
	if errors.Is(err, host.ErrNotGranted) {
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

func (s *session) Summarize(req *compact.SummaryRequest) (res *compact.SummaryResult, err error) {
	defer func() {
		if x := recover(); x != nil {
			res, err = nil, fmt.Errorf("the summarizer panicked: %v", x)
		}
	}()
	hr := host.SummaryRequest{Provider: req.Provider, Model: req.Model, Messages: req.Wire(), MaxTokens: req.MaxTokens}
	for _, t := range req.Tools {
		hr.Tools = append(hr.Tools, jsontext.Value(t))
	}
	r, err := s.v.Summarize(s.ctx, hr)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, errors.New("the summarizer returned no result")
	}
	return &compact.SummaryResult{Content: r.Content, Usage: r.Usage, FinishReason: r.FinishReason,
		Provider: r.Provider, Model: r.Model}, nil
}

// OpenBracket scans the log newest-first for the latest compaction marker;
// a start is open unless a session/end-seed follows it (a start before the
// latest end-seed belongs to a lifecycle that ended with its process).
func (s *session) OpenBracket() (string, bool, error) {
	evs := s.v.Events()
	seeded := false
	for i := len(evs) - 1; i >= 0; i-- {
		switch evs[i].Type {
		case surface.TypeEndSeed:
			seeded = true
		case surface.TypeCompactionEnd:
			return "", false, nil
		case surface.TypeCompactionStart:
			if seeded {
				return "", false, nil
			}
			return compactionID(evs[i].Data, evs[i].Seq), true, nil
		}
	}
	return "", false, nil
}

func compactionID(data []byte, seq int64) string {
	var d struct {
		ID string `json:"compactionId"`
	}
	if json.Unmarshal(data, &d) == nil && d.ID != "" {
		return fmt.Sprintf("%s (started at seq %d)", d.ID, seq)
	}
	return fmt.Sprintf("started at seq %d", seq)
}
