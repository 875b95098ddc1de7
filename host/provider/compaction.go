package provider

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/surface"
)

// Compaction is a compaction plugin as the host's compaction provider. One
// adapter may serve many sessions: it keeps its failure count and query
// cache per session id, and reads the plugin's state blob from each
// session's log (plugin/state events, state.go). It is safe for
// concurrent use; calls on one session are serialized.
type Compaction struct {
	p      *plugin.Plugin
	o      options
	module string // hex SHA-256 of the plugin's module, the state's key

	mu       sync.Mutex
	sessions map[string]*compactionSession
}

var _ host.RegionCompactor = (*Compaction)(nil)

// CompactsRegion implements host.RegionCompactor: whether the plugin
// declared compaction.region in its describe answer.
func (c *Compaction) CompactsRegion() bool { return c.p.Implements(abi.MethodCompactionRegion) }

// compactionSession is the adapter's state for one session.
type compactionSession struct {
	mu      sync.Mutex
	state   []byte      // the log's blob, as of the latest call
	logged  loggedState // the fold of the log's plugin/state events
	pending *pendingResult
	br      breaker
	c       *cache
	r       reader // the session, as of the latest call
	idle    *idleHint
}

// idleHint is the promise of the latest compaction.prestep result
// (abi.CompactionResult.IdleBelowTokens): nothing to do while the measured
// total stays below below, under the same header, route, limits and state.
type idleHint struct {
	below  int64
	header *surface.Header
	route  abi.Route
	limits abi.Limits
	state  []byte
}

// holds reports whether the hint covers a prestep request: an open turn,
// the same header (the log keeps one value per logged header), route,
// limits and state blob.
func (h *idleHint) holds(view *host.View, r *abi.CompactionRequest) bool {
	return h != nil && r.Turn != 0 && view.Header() == h.header && r.Route == h.route && r.Limits == h.limits &&
		r.CommandID == "" && r.Failure == (abi.Failure{}) && bytes.Equal(r.State, h.state)
}

// pendingResult is a result whose proposals the host was handed but whose
// admission is not known yet: the log shows them committed at seq at, or
// refused.
type pendingResult struct {
	at        int64
	step      int64 // the breaker's clock at the call
	proposals []surface.Proposal
}

// NewCompaction returns the compaction adapter of plugin p.
func NewCompaction(p *plugin.Plugin, opts ...Option) (*Compaction, error) {
	if err := checkRole(p, RoleCompaction); err != nil {
		return nil, err
	}
	sum := p.ModuleSum()
	return &Compaction{p: p, o: newOptions(opts), module: hex.EncodeToString(sum[:]), sessions: map[string]*compactionSession{}}, nil
}

// ID is the plugin's name.
func (c *Compaction) ID() string { return c.p.Name() }

func (c *Compaction) session(id string) *compactionSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[id]
	if s == nil {
		s = &compactionSession{br: newBreaker(&c.o, c.p.Name(), host.ByCompaction), c: newCache()}
		c.sessions[id] = s
	}
	return s
}

// Forget drops what the adapter keeps for a session (failure count, cache,
// what it read of the log), for a session that ended. The state blob stays
// in the session's log.
func (c *Compaction) Forget(sessionID string) {
	c.mu.Lock()
	delete(c.sessions, sessionID)
	c.mu.Unlock()
}

// State returns a copy of the state blob the plugin's next call on a
// session will carry: that of the session's log as of its latest call,
// counting the plugin/state event of the latest result once committed.
func (c *Compaction) State(sessionID string) []byte {
	s := c.session(sessionID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.r != nil {
		s.state = s.logged.sync(s.r, c.p.Name(), c.module)
	}
	return bytes.Clone(s.state)
}

// Disabled reports whether the adapter stopped calling the plugin for a
// session.
func (c *Compaction) Disabled(sessionID string) bool {
	s := c.session(sessionID)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.br.open
}

// Compact implements host.CompactionProvider: pressure calls
// compaction.prestep, manual compaction.manual and context-overflow
// compaction.overflow, with the open turn and step, the route of the
// latest request header (else the conversation's), the route's limits and
// the session's state blob. The proposals are converted exactly
// (ConvertProposals) and returned for the host to admit.
func (c *Compaction) Compact(ctx context.Context, view *host.View, req host.CompactionRequest) ([]surface.Proposal, error) {
	id := view.SessionID()
	s := c.session(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.br.sync(view.Events(), &c.o, sessionName(id))
	if s.br.open {
		return nil, s.br.takeNotice()
	}
	s.r = view
	s.state = s.logged.sync(view, c.p.Name(), c.module)
	if step, rejected := s.settle(view); rejected != nil {
		// The host already reported the rejection; it counts as a failure.
		if err := s.br.failAt(step, rejected, &c.o, sessionName(id)); s.br.open {
			return nil, err
		}
	}
	areq := c.request(view, req, s.state)
	if req.Reason == host.CompactPressure && s.idle.holds(view, areq) {
		// The plugin said it has nothing to do below this total; a meter
		// that cannot answer leaves the decision to the plugin.
		if total, err := view.MeasureTotal(ctx); err == nil && total < s.idle.below {
			return nil, nil
		}
	}
	s.idle = nil
	route := req.Route
	if c.o.summarize != (host.Route{}) {
		route = c.o.summarize // the user's summarize route (WithSummarizeRoute)
	}
	h := &Host{kind: abi.KindCompaction, plugin: c.p.Name(), r: view, view: view, route: route,
		counters: c.o.counters, c: s.c}
	at := view.NextSeq()
	var res *abi.CompactionResult
	var err error
	switch req.Reason {
	case host.CompactPressure:
		res, err = c.p.PreStep(ctx, h, areq)
	case host.CompactManual:
		res, err = c.p.Manual(ctx, h, areq)
	case host.CompactOverflow:
		res, err = c.p.Overflow(ctx, h, areq)
	case host.CompactRegion:
		if !c.CompactsRegion() {
			// Asking is the caller's mistake, not the plugin's failure.
			return nil, notCounted{fmt.Errorf("plugin %q: %w: the plugin's describe answer does not declare it",
				c.p.Name(), host.ErrRegionUnsupported)}
		}
		res, err = c.p.Region(ctx, h, areq)
	default:
		return nil, fmt.Errorf("plugin %q: unknown compaction reason %q", c.p.Name(), req.Reason)
	}
	if berr := view.Exceeded(); berr != nil {
		// Past its budget the compaction failed, whatever the plugin made
		// of the refusal; this counts against the plugin.
		if err != nil {
			berr = fmt.Errorf("%w (plugin %q: %v)", berr, c.p.Name(), err)
		}
		return nil, s.br.fail(berr, &c.o, sessionName(id))
	}
	if err == nil && view.NextSeq() != at {
		err = fmt.Errorf("plugin %q: the log moved from seq %d to %d during the call; its proposals are stale",
			c.p.Name(), at, view.NextSeq())
		return nil, notCounted{err}
	}
	var ps []surface.Proposal
	if err == nil {
		ps, err = ConvertProposals(res.Proposals)
		if err != nil {
			err = fmt.Errorf("plugin %q: call %s: %w", c.p.Name(), methodOf(req.Reason), err)
		} else if minor := c.p.Description().AbiMinor; minor <= legacyBracketMinor {
			var n int
			if ps, n = bracketLegacy(ps, at, areq.Turn); n > 0 {
				c.o.log.Info("bracketed the checkpoints of a plugin of an older ABI minor (rule compaction/bracket, minor 2)",
					"plugin", c.p.Name(), "abi_minor", minor, "checkpoints", n, "seq", at)
			}
		}
	}
	if limit := min(c.o.stateLimit, host.MaxPluginStateBytes); err == nil && res.HasState && len(res.State) > limit {
		err = fmt.Errorf("plugin %q: call %s: state of %d bytes exceeds the %d-byte limit (rule %s)",
			c.p.Name(), methodOf(req.Reason), len(res.State), limit, host.RulePluginState)
	}
	next := s.state
	if err == nil && res.HasState && !bytes.Equal(res.State, s.state) {
		// The new state is committed with the result's events, or not.
		var sp surface.Proposal
		sp, err = stateProposal(c.p.Name(), c.module, res.State)
		ps, next = append(ps, sp), res.State
	}
	if err != nil {
		return nil, s.br.fail(classify(err), &c.o, sessionName(id))
	}
	if len(res.Proposals) == 0 && req.Reason == host.CompactPressure && res.HasIdleBelowTokens {
		s.idle = &idleHint{below: res.IdleBelowTokens, header: view.Header(), route: areq.Route, limits: areq.Limits,
			state: bytes.Clone(next)}
	}
	if len(ps) == 0 {
		return nil, nil
	}
	s.pending = &pendingResult{at: at, step: s.br.steps, proposals: ps}
	return ps, nil
}

func methodOf(r host.CompactionReason) abi.Method {
	switch r {
	case host.CompactManual:
		return abi.MethodCompactionManual
	case host.CompactOverflow:
		return abi.MethodCompactionOverflow
	case host.CompactRegion:
		return abi.MethodCompactionRegion
	}
	return abi.MethodCompactionPreStep
}

func (c *Compaction) request(view *host.View, req host.CompactionRequest, state []byte) *abi.CompactionRequest {
	turn, step := view.OpenTurn()
	if req.Turn != 0 {
		turn = req.Turn
	}
	if req.Step != 0 {
		// Pressure compaction runs before the step's step/start.
		step = req.Step
	}
	r := &abi.CompactionRequest{
		Turn:   turn,
		Step:   step,
		Route:  abi.Route{Provider: req.Route.Provider, Model: req.Route.Model},
		Limits: abi.Limits{ContextWindow: req.Route.ContextWindow, DefaultMaxTokens: req.Route.MaxTokens},
		State:  state,
	}
	if h := view.Header(); h != nil {
		r.Route = abi.Route{Provider: h.Config.Provider, Model: h.Config.Model}
	}
	if req.Reason == host.CompactRegion {
		r.RegionStartSeq, r.RegionEndSeq = req.Start, req.End
	}
	if req.Reason == host.CompactOverflow {
		r.Failure = abi.Failure{Code: llm.CodeContextOverflow, Message: "the model refused the request as longer than its context window"}
	}
	return r
}

// settle resolves the pending result against the log. It returns an
// error describing a rejection, and the breaker's clock at the call that
// returned them.
func (s *compactionSession) settle(r reader) (int64, error) {
	p := s.pending
	if p == nil {
		return 0, nil
	}
	s.pending = nil
	if !committed(r, p.at, p.proposals) {
		return p.step, fmt.Errorf("the host rejected the %d proposals returned at seq %d", len(p.proposals), p.at)
	}
	return 0, nil
}

// committed reports whether the log holds ps at seqs at, at+1, ...
func committed(r reader, at int64, ps []surface.Proposal) bool {
	if r.NextSeq() < at+int64(len(ps)) {
		return false
	}
	for i, p := range ps {
		e, ok := r.Event(at + int64(i))
		if !ok || e.Type != p.Type || e.Op != p.Op || e.Ignorable != p.Ignorable ||
			(e.Sources == nil) != (p.Sources == nil) || !slices.Equal(e.Sources, p.Sources) {
			return false
		}
	}
	return true
}

// ConvertProposals converts a plugin's proposals to the host's, exactly:
// type, data bytes, the intent (none: a log-only event; append; replace
// start..end), sourceEventSeqs (absent stays nil, present stays non-nil
// even when empty) and ignorable. Whether the host admits them is the
// host's decision; this only refuses what has no host form.
func ConvertProposals(in []abi.Proposal) ([]surface.Proposal, error) {
	if len(in) > abi.MaxProposals {
		return nil, fmt.Errorf("malformed output: %d proposals, more than %d", len(in), abi.MaxProposals)
	}
	out := make([]surface.Proposal, len(in))
	for i, p := range in {
		if p.Type == "" {
			return nil, fmt.Errorf("malformed output: proposal %d has no type", i)
		}
		if p.Type == host.TypePluginState {
			return nil, fmt.Errorf("malformed output: proposal %d has type %s, which only the host writes (rule %s): a plugin returns its state in the result's state field",
				i, p.Type, host.RulePluginState)
		}
		q := surface.Proposal{Type: p.Type, Data: bytes.Clone(p.Data), Ignorable: p.Ignorable}
		switch p.Intent.Kind {
		case abi.IntentNone:
		case abi.IntentAppend:
			q.Op = surface.Append
		case abi.IntentReplace:
			q.Op = surface.Replace(p.Intent.StartSeq, p.Intent.EndSeq)
		default:
			return nil, fmt.Errorf("malformed output: proposal %d (%s) has intent %s", i, p.Type, strconv.Itoa(int(p.Intent.Kind)))
		}
		if p.HasSourceEventSeqs {
			q.Sources = append(make([]int64, 0, len(p.SourceEventSeqs)), p.SourceEventSeqs...)
		}
		out[i] = q
	}
	return out, nil
}
