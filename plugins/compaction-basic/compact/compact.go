package compact

import (
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/weirhost/weir/surface"
)

// Reason says why compaction is asked to act.
type Reason string

// Compaction reasons.
const (
	// Pressure runs before each step (automatic): compact when the measured
	// request reaches the threshold, keeping the verbatim tail.
	Pressure Reason = "pressure"
	// Overflow runs after the model refused a request as too long
	// (automatic): compact everything but the last node, no threshold.
	Overflow Reason = "context-overflow"
	// Manual runs between turns on request: compact everything but the
	// last node; the bracket has no owner turn.
	Manual Reason = "manual"
	// Region compacts an explicit span, inside the open turn (its owner)
	// or between turns (no owner turn, as Manual).
	Region Reason = "region"
)

// Route is the conversation's model route as the host reports it.
type Route struct {
	Provider, Model string
	// ContextWindow is the route's capacity in tokens; 0 when unknown.
	ContextWindow int64
	// MaxTokens is the completion cap the route sends; 0 when none.
	MaxTokens int64
}

// Request is one call of Compact.
type Request struct {
	Reason Reason
	// Turn is the open turn (0 when none): the owner of automatic and
	// region brackets. Manual compaction requires 0; a region between
	// turns has none.
	Turn int64
	// Route is the conversation's route.
	Route Route
	// SessionID seeds the compaction ids; it may be empty.
	SessionID string
	// Span is the range a Region request compacts.
	Span Span
	// Plugin is the name the host configured the provider under: the
	// checkpoint's source names it, as the host requires (default PluginID).
	Plugin string
}

// Outcome is the result of Compact: the proposals to admit, in order and
// all or nothing, and a warning for the caller to log. A warning never
// blocks the step; it comes with proposals (still above the threshold
// after the last pass) or without (a target's configuration error,
// reported once per provider/model; the compaction limit reached,
// reported once per turn; the overflow recovery limit reached).
type Outcome struct {
	Proposals []surface.Proposal
	Warning   error
	// IdleBelow, when positive (pressure only, no proposals): the call would
	// decide the same while the measured total stays below it and the
	// header, route and state stay as they are.
	IdleBelow int64
}

// Errors of requests compaction refuses before proposing anything.
var (
	// ErrBusy: a compaction bracket is open, or manual compaction was asked
	// while a turn is open.
	ErrBusy = errors.New("compaction is busy")
	// ErrNoOpenTurn: automatic compaction needs an open turn.
	ErrNoOpenTurn = errors.New("compaction needs an open turn")
)

// Compact decides and prepares one compaction of the session for req,
// using and updating st. It returns the proposals of every compaction
// bracket it ran:
//
//	compaction/start {compactionId, turn}
//	compaction/summary {compactionId, summary, rawOutput?, shadowedRange,
//	    shadowedSeqs, shadowedTokenCount, provider, model, maxTokens?, usage?}
//	user/message checkpoint, replace shadowedRange, citing
//	    [start, summary, ...shadowedSeqs]
//	compaction/end {compactionId, turn, tokensBefore, tokensAfter, warning?}
//
// The seqs the proposals cite are those they get when the host admits the
// batch contiguously at the session's next seq. A bracket that fails after
// its start (summarizer error or unusable output, a summary not smaller
// than its span, a surface that changed meanwhile, a span over the
// protected system head) is returned as start + end {error} and leaves the
// surface untouched. An error means nothing is proposed.
func Compact(s Session, cfg *Config, req Request, st *State) (Outcome, error) {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	if st == nil {
		st = &State{}
	}
	automatic := req.Reason == Pressure || req.Reason == Overflow
	switch req.Reason {
	case Pressure, Overflow:
		if !cfg.Auto {
			return Outcome{}, nil
		}
	case Manual, Region:
	default:
		return Outcome{}, fmt.Errorf("compaction: unknown reason %q", req.Reason)
	}
	if req.Reason == Manual && req.Turn != 0 {
		return Outcome{}, fmt.Errorf("%w: turn %d is open; manual compaction runs only between turns", ErrBusy, req.Turn)
	}
	if automatic && req.Turn == 0 {
		return Outcome{}, fmt.Errorf("%w: %s compaction runs inside a turn", ErrNoOpenTurn, req.Reason)
	}
	h, err := s.Header()
	if err != nil {
		return Outcome{}, fmt.Errorf("compaction: read the request header: %w", err)
	}
	if automatic && h == nil && (req.Route.Provider == "" || req.Route.Model == "" || req.Route.ContextWindow <= 0) {
		// No request logged yet and no route from the host: no target to
		// measure against. With a route (the one the step is about to
		// use), a resumed or imported session that never logged a header
		// is still compacted before its first request.
		return Outcome{}, nil
	}
	r := &run{s: s, cfg: cfg, req: req, st: st, header: h}
	r.provider, r.model = req.Route.Provider, req.Route.Model
	if h != nil {
		r.provider, r.model = h.Config.Provider, h.Config.Model
	}
	r.policy = cfg.For(r.provider, r.model)
	if req.Reason != Manual && req.Turn != 0 {
		t := req.Turn
		r.owner = &t
	}
	switch req.Reason {
	case Pressure:
		return r.pressure()
	case Overflow:
		return r.overflow()
	case Manual:
		return r.manual()
	}
	return r.region()
}

// run is one Compact call.
type run struct {
	s      Session
	cfg    *Config
	req    Request
	st     *State
	header *surface.Header
	// target of the policy: the latest header's route, else the request's
	// (the route the host's next request will use).
	provider, model string
	policy          Policy
	owner           *int64

	nodes []Node // surface before any summarization
	meas  *Measurement
	work  []wnode
	done  []*bracket
	fail  *bracket
}

// wnode is a node of the working surface: the real surface with the
// checkpoints of this call's earlier passes spliced in.
type wnode struct {
	Node
	price NodeTokens
	// pass > 0 marks the checkpoint of done[pass-1]: its seq is assigned
	// when the batch is built.
	pass int
	msg  *surface.Message
}

// bracket is one compaction attempt of this call.
type bracket struct {
	span           []wnode
	spanTokens     int64
	spanHeuristic  int64
	sum            *summary
	content        []surface.Block
	contentTokens  int64
	provider       string
	model          string
	maxTokens      int64
	usage          *surface.Usage
	before, after  int64
	warning        string
	err            error
	summarizerUsed bool
	llm            bool // the summary came from one call through the host's LLM service
}

func (r *run) load() error {
	var err error
	if r.nodes == nil {
		if r.nodes, err = r.s.Nodes(); err != nil {
			return fmt.Errorf("compaction: read the surface: %w", err)
		}
	}
	if r.meas == nil {
		if r.meas, err = r.s.Measure(); err != nil {
			return fmt.Errorf("compaction: measure: %w", err)
		}
	}
	if len(r.meas.Nodes) > 0 {
		if err := matches(r.nodes, r.meas); err != nil {
			return fmt.Errorf("compaction: %w", err)
		}
	}
	r.work = make([]wnode, len(r.nodes))
	for i, n := range r.nodes {
		r.work[i] = wnode{Node: n}
		if len(r.meas.Nodes) > 0 {
			r.work[i].price = r.meas.Nodes[i]
		}
	}
	return nil
}

// minCheckpoint is the estimate of a checkpoint with an empty summary: no
// checkpoint is smaller.
var minCheckpoint = EstimateContent(checkpointContent(nil))

func (r *run) spanTokens(from, to int) int64 {
	var n int64
	for _, w := range r.work[from : to+1] {
		n += w.price.Tokens
	}
	return n
}

// selectWork runs range selection over the working surface.
func (r *run) selectWork(retain int64) (from, to int, ok bool, err error) {
	if len(r.meas.Nodes) == 0 {
		return 0, 0, false, nil
	}
	nodes := make([]Node, len(r.work))
	prices := make([]NodeTokens, len(r.work))
	for i, w := range r.work {
		nodes[i], prices[i] = w.Node, w.price
	}
	return selectIndices(nodes, prices, retain)
}

// busy refuses to start a bracket while another one is open (spec 11.6
// step 2). It runs only once compaction decided to act, so a step below
// the threshold never reads the log.
func (r *run) busy() error {
	br, ok := r.s.(BracketReader)
	if !ok {
		return nil
	}
	id, open, err := br.OpenBracket()
	if err != nil {
		return fmt.Errorf("compaction: read the log: %w", err)
	}
	if open {
		return fmt.Errorf("%w: compaction %s is already in progress", ErrBusy, id)
	}
	return nil
}

func (r *run) target() string { return r.provider + "/" + r.model }

// limited reports whether the loop-safety bound forbids another automatic
// bracket in this turn, with the warning to give (nil when already given).
func (r *run) limited() (bool, error) {
	max := r.cfg.MaxCompactionsPerWindow
	if max == 0 || r.st.inWindow(r.req.Turn, r.cfg.WindowTurns) < max {
		return false, nil
	}
	if r.st.LimitWarned == r.req.Turn {
		return true, nil
	}
	r.st.LimitWarned = r.req.Turn
	return true, fmt.Errorf("compaction limit reached: %d automatic compactions within the last %d turn(s) (maxCompactionsPerWindow); no more until the window moves on",
		max, r.cfg.WindowTurns)
}

func (r *run) pressure() (Outcome, error) {
	reserved := r.req.Route.MaxTokens
	if r.header != nil && r.header.Config.MaxTokens != nil {
		reserved = *r.header.Config.MaxTokens
	}
	spec, err := ResolveSpec(r.policy, r.provider, r.model, r.req.Route.ContextWindow, reserved)
	if err != nil {
		if r.st.warned(r.target()) {
			return Outcome{}, nil
		}
		r.st.warn(r.target())
		return Outcome{Warning: err}, nil
	}
	if r.meas, err = r.s.Measure(); err != nil {
		return Outcome{}, fmt.Errorf("compaction: measure: %w", err)
	}
	if r.meas.TotalTokens < spec.ThresholdTokens {
		return Outcome{IdleBelow: spec.ThresholdTokens}, nil
	}
	if err := r.load(); err != nil {
		return Outcome{}, err
	}
	if err := r.busy(); err != nil {
		return Outcome{}, err
	}
	total := r.meas.TotalTokens
	passes := r.policy.CompactionRetries + 1
	var warning error
	ran := 0
	for ran < passes {
		from, to, ok, err := r.selectWork(spec.RetainTokens)
		if err != nil {
			if ran == 0 {
				return Outcome{}, fmt.Errorf("compaction: %w", err)
			}
			break
		}
		if !ok {
			if ran == 0 {
				return Outcome{}, nil
			}
			break
		}
		if ran > 0 && total-r.spanTokens(from, to)+minCheckpoint >= spec.ThresholdTokens {
			break // even an empty checkpoint would stay above: another model call cannot help
		}
		if stop, w := r.limited(); stop {
			if ran == 0 {
				return Outcome{Warning: w}, nil
			}
			warning = w
			break
		}
		r.st.attempt(r.req.Turn)
		ran++
		b := r.pass(from, to, total)
		if b.err != nil {
			break
		}
		total = b.after
		if total < spec.ThresholdTokens {
			break
		}
	}
	if r.fail == nil && total >= spec.ThresholdTokens && len(r.done) > 0 {
		w := fmt.Errorf("still above threshold after %d attempt(s): about %d tokens against a threshold of %d", ran, total, spec.ThresholdTokens)
		r.done[len(r.done)-1].warning = w.Error()
		warning = errors.Join(warning, w)
	}
	return r.finish(warning)
}

func (r *run) overflow() (Outcome, error) {
	if r.policy.MaxOverflowRetries == 0 {
		return Outcome{}, nil
	}
	var err error
	if r.nodes, err = r.s.Nodes(); err != nil {
		return Outcome{}, fmt.Errorf("compaction: read the surface: %w", err)
	}
	// A new sequence starts with a new turn or once a model reply landed
	// after the previous recovery.
	if r.st.OverflowTurn != r.req.Turn {
		r.st.OverflowTurn, r.st.OverflowCount = r.req.Turn, 0
	} else {
		for _, n := range r.nodes {
			if n.Type == surface.TypeAssistantMessage && n.Seq >= r.st.OverflowSeq {
				r.st.OverflowCount = 0
				break
			}
		}
	}
	if r.st.OverflowCount >= int64(r.policy.MaxOverflowRetries) {
		return Outcome{Warning: fmt.Errorf("context overflow: %d recovery attempt(s) already made since the last model reply (maxOverflowRetries)", r.st.OverflowCount)}, nil
	}
	if err := r.load(); err != nil {
		return Outcome{}, err
	}
	from, to, ok, err := r.selectWork(0)
	if err != nil {
		return Outcome{}, fmt.Errorf("compaction: %w", err)
	}
	if !ok {
		return Outcome{}, nil
	}
	if err := r.busy(); err != nil {
		return Outcome{}, err
	}
	if stop, w := r.limited(); stop {
		return Outcome{Warning: w}, nil
	}
	r.st.attempt(r.req.Turn)
	if b := r.pass(from, to, r.meas.TotalTokens); b.err == nil {
		r.st.OverflowCount++
		if r.st.OverflowSeq, err = r.s.NextSeq(); err != nil {
			return Outcome{}, fmt.Errorf("compaction: read the log length: %w", err)
		}
	}
	return r.finish(nil)
}

func (r *run) manual() (Outcome, error) {
	if err := r.load(); err != nil {
		return Outcome{}, err
	}
	from, to, ok, err := r.selectWork(0)
	if err != nil {
		return Outcome{}, fmt.Errorf("compaction: %w", err)
	}
	if !ok {
		return Outcome{}, nil
	}
	if err := r.busy(); err != nil {
		return Outcome{}, err
	}
	r.pass(from, to, r.meas.TotalTokens)
	return r.finish(nil)
}

func (r *run) region() (Outcome, error) {
	var err error
	if r.nodes, err = r.s.Nodes(); err != nil {
		return Outcome{}, fmt.Errorf("compaction: read the surface: %w", err)
	}
	if _, _, err := locate(r.nodes, r.req.Span); err != nil {
		return Outcome{}, err
	}
	if err := r.busy(); err != nil {
		return Outcome{}, err
	}
	if err := r.load(); err != nil {
		return Outcome{}, err
	}
	from, to, _ := locate(r.nodes, r.req.Span) // the surface is unchanged
	if from == 0 && r.nodes[0].Type == surface.TypeSystemMessage {
		// The session would reject the checkpoint whole (system-head
		// protection); record the failed attempt without a model call.
		r.fail = &bracket{err: fmt.Errorf("the span %d..%d covers surface node 0, which holds the protected system prompt", r.req.Span.Start, r.req.Span.End)}
		return r.finish(nil)
	}
	if len(r.meas.Nodes) == 0 {
		return Outcome{}, errors.New("compaction: the measurement prices no nodes")
	}
	r.pass(from, to, r.meas.TotalTokens)
	return r.finish(nil)
}

// summarizationRoute is the configured summarization pair, else the
// latest header's route, else the conversation's.
func (r *run) summarizationRoute() (string, string, error) {
	switch {
	case r.policy.SummarizationProvider != "":
		return r.policy.SummarizationProvider, r.policy.SummarizationModel, nil
	case r.header != nil:
		return r.header.Config.Provider, r.header.Config.Model, nil
	case r.req.Route.Provider != "" && r.req.Route.Model != "":
		return r.req.Route.Provider, r.req.Route.Model, nil
	}
	return "", "", errors.New("no summarization route: configure summarizationProvider/summarizationModel or send a request first")
}

// pass summarizes work[from..to] and, when that works, splices its
// checkpoint into the working surface. total is the measured size before.
func (r *run) pass(from, to int, total int64) *bracket {
	b := &bracket{span: append([]wnode(nil), r.work[from:to+1]...), before: total, maxTokens: r.policy.MaxTokens}
	for _, w := range b.span {
		b.spanTokens += w.price.Tokens
		b.spanHeuristic += w.price.HeuristicTokens
	}
	fail := func(err error) *bracket {
		b.err = err
		r.fail = b
		return b
	}
	provider, model, err := r.summarizationRoute()
	if err != nil {
		return fail(err)
	}
	req := &SummaryRequest{Provider: provider, Model: model, Instruction: Instruction,
		Tools: toolBytes(r.header), MaxTokens: r.policy.MaxTokens}
	if req.Messages, err = r.input(from, to); err != nil {
		return fail(err)
	}
	b.summarizerUsed = true
	res, err := r.s.Summarize(req)
	if err != nil {
		return fail(fmt.Errorf("summarization failed: %w", err))
	}
	if b.sum, err = checkSummary(res, req.MaxTokens); err != nil {
		return fail(err)
	}
	b.provider, b.model, b.usage, b.llm = res.Provider, res.Model, res.Usage, res.LLMStreamCall
	if b.provider == "" || b.model == "" {
		b.provider, b.model = provider, model
	}
	b.content = checkpointContent(b.sum.blocks)
	b.contentTokens = EstimateContent(b.content)
	if b.contentTokens >= b.spanTokens {
		return fail(fmt.Errorf("summary is not smaller than the span it replaces: the checkpoint is about %d tokens, the span %d", b.contentTokens, b.spanTokens))
	}
	b.after = total - b.spanTokens + b.contentTokens
	r.done = append(r.done, b)
	cp := wnode{Node: Node{Seq: -int64(len(r.done)), Type: surface.TypeUserMessage},
		price: NodeTokens{Seq: -int64(len(r.done)), Tokens: b.contentTokens, HeuristicTokens: b.contentTokens},
		pass:  len(r.done), msg: &surface.Message{Role: surface.RoleUser, Content: b.content}}
	r.work = append(r.work[:from], append([]wnode{cp}, r.work[to+1:]...)...)
	return b
}

// input builds the summarization input (spec 11.7): node 0's message when
// it is a system/message that projects to one, then the span's derived
// messages.
func (r *run) input(from, to int) ([]*surface.Message, error) {
	var msgs []*surface.Message
	add := func(w wnode) error {
		m := w.msg
		if w.pass == 0 {
			var err error
			if m, err = r.s.Message(w.Seq); err != nil {
				return fmt.Errorf("read the message of seq %d: %w", w.Seq, err)
			}
		}
		if pm, ok := surface.Project(w.Type, m); ok {
			msgs = append(msgs, pm)
		}
		return nil
	}
	if len(r.work) > 0 && r.work[0].Type == surface.TypeSystemMessage && from > 0 {
		if err := add(r.work[0]); err != nil {
			return nil, err
		}
	}
	for _, w := range r.work[from : to+1] {
		if err := add(w); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// stable checks, after summarization, that the surface the brackets were
// planned on is still there: automatic and region compaction need the
// whole priced surface unchanged; manual compaction only its span (present,
// contiguous, balanced and equally priced).
func (r *run) stable() error {
	nodes, err := r.s.Nodes()
	if err != nil {
		return fmt.Errorf("read the surface: %w", err)
	}
	m, err := r.s.Measure()
	if err != nil {
		return fmt.Errorf("measure: %w", err)
	}
	if len(m.Nodes) > 0 {
		if err := matches(nodes, m); err != nil {
			return err
		}
	}
	price := func(i int) int64 {
		if len(m.Nodes) == 0 {
			return 0
		}
		return m.Nodes[i].Tokens
	}
	if r.req.Reason != Manual {
		if len(nodes) != len(r.nodes) {
			return fmt.Errorf("the surface changed during summarization: %d nodes before, %d after", len(r.nodes), len(nodes))
		}
		for i := range nodes {
			if nodes[i] != r.nodes[i] || price(i) != r.work0Price(i) {
				return fmt.Errorf("the surface changed during summarization at node %d (seq %d)", i, r.nodes[i].Seq)
			}
		}
		return nil
	}
	var span []wnode
	if len(r.done) > 0 {
		span = r.done[0].span
	} else {
		span = r.fail.span
	}
	at := -1
	for i := range nodes {
		if nodes[i].Seq == span[0].Seq {
			at = i
		}
	}
	if at < 0 || at+len(span) > len(nodes) {
		return fmt.Errorf("the compacted span changed during summarization: seq %d is no longer on the surface", span[0].Seq)
	}
	for k, w := range span {
		if nodes[at+k] != w.Node || price(at+k) != w.price.Tokens {
			return fmt.Errorf("the compacted span changed during summarization at seq %d", w.Seq)
		}
	}
	bal, err := Balances(nodes)
	if err != nil {
		return err
	}
	if bal[at] != 0 || bal[at+len(span)] != 0 {
		return errors.New("the compacted span is no longer bounded by balanced cuts")
	}
	return nil
}

func (r *run) work0Price(i int) int64 {
	if len(r.meas.Nodes) == 0 {
		return 0
	}
	return r.meas.Nodes[i].Tokens
}

// Event data written by compaction.
type (
	startData struct {
		CompactionID string `json:"compactionId"`
		Turn         *int64 `json:"turn"`
	}
	rangeData struct {
		Start int64 `json:"start"`
		End   int64 `json:"end"`
	}
	summaryData struct {
		CompactionID       string          `json:"compactionId"`
		Summary            string          `json:"summary"`
		RawOutput          []surface.Block `json:"rawOutput,omitzero"`
		LLMStreamCall      bool            `json:"llmStreamCall,omitzero"`
		ShadowedRange      rangeData       `json:"shadowedRange"`
		ShadowedSeqs       []int64         `json:"shadowedSeqs"`
		ShadowedTokenCount int64           `json:"shadowedTokenCount"`
		Provider           string          `json:"provider"`
		Model              string          `json:"model"`
		MaxTokens          int64           `json:"maxTokens,omitzero"`
		Usage              *surface.Usage  `json:"usage,omitzero"`
	}
	endData struct {
		CompactionID string `json:"compactionId"`
		Turn         *int64 `json:"turn"`
		TokensBefore int64  `json:"tokensBefore,omitzero"`
		TokensAfter  int64  `json:"tokensAfter,omitzero"`
		Warning      string `json:"warning,omitzero"`
		Error        string `json:"error,omitzero"`
	}
)

// CompactionID derives the id of the bracket whose compaction/start gets
// seq startSeq: deterministic, so a replay decides the same ids.
func CompactionID(sessionID string, startSeq int64) string {
	h := sha256Sum([]byte(sessionID + "\x00" + strconv.FormatInt(startSeq, 10)))
	return "cmp-" + hex.EncodeToString(h[:8])
}

// finish checks stability and builds the batch.
func (r *run) finish(warning error) (Outcome, error) {
	if len(r.done) > 0 || (r.fail != nil && r.fail.summarizerUsed) {
		if err := r.stable(); err != nil {
			first := r.fail
			if len(r.done) > 0 {
				first = r.done[0]
			}
			first.err = err
			r.done, r.fail = nil, first
		}
	}
	base, err := r.s.NextSeq()
	if err != nil {
		return Outcome{}, fmt.Errorf("compaction: read the log length: %w", err)
	}
	var ps []surface.Proposal
	add := func(typ string, data []byte, err error, op surface.Op, sources []int64) error {
		if err != nil {
			return fmt.Errorf("compaction: encode %s: %w", typ, err)
		}
		ps = append(ps, surface.Proposal{Type: typ, Data: data, Op: op, Sources: sources})
		return nil
	}
	seqOf := func(w wnode) int64 {
		if w.pass > 0 {
			return base + 4*int64(w.pass-1) + 2
		}
		return w.Seq
	}
	for _, b := range r.done {
		start := base + int64(len(ps))
		id := CompactionID(r.req.SessionID, start)
		shadowed := make([]int64, len(b.span))
		for i, w := range b.span {
			shadowed[i] = seqOf(w)
		}
		first, last := shadowed[0], shadowed[len(shadowed)-1]
		sd := summaryData{CompactionID: id, Summary: b.sum.text, RawOutput: b.sum.raw, LLMStreamCall: b.llm,
			ShadowedRange: rangeData{first, last}, ShadowedSeqs: shadowed, ShadowedTokenCount: b.spanHeuristic,
			Provider: b.provider, Model: b.model, MaxTokens: b.maxTokens, Usage: b.usage}
		src, err := checkpointSource(id)
		if err != nil {
			return Outcome{}, err
		}
		cp := surface.Message{ID: id + "-checkpoint", Role: surface.RoleUser,
			Source: surface.Source{Kind: "plugin", Plugin: cmp.Or(r.req.Plugin, PluginID), Unknown: src}, Content: b.content}
		sources := append([]int64{start, start + 1}, shadowed...)
		startB, startErr := startData{id, r.owner}.encode()
		sumB, sumErr := sd.encode()
		cpB, cpErr := encodeMessage(&cp)
		endB, endErr := endData{CompactionID: id, Turn: r.owner, TokensBefore: b.before, TokensAfter: b.after, Warning: b.warning}.encode()
		if err := errors.Join(
			add(surface.TypeCompactionStart, startB, startErr, surface.Op{}, nil),
			add(surface.TypeCompactionSummary, sumB, sumErr, surface.Op{}, nil),
			add(surface.TypeUserMessage, cpB, cpErr, surface.Replace(first, last), sources),
			add(surface.TypeCompactionEnd, endB, endErr, surface.Op{}, nil),
		); err != nil {
			return Outcome{}, err
		}
	}
	if r.fail != nil {
		start := base + int64(len(ps))
		id := CompactionID(r.req.SessionID, start)
		startB, startErr := startData{id, r.owner}.encode()
		endB, endErr := endData{CompactionID: id, Turn: r.owner, Error: r.fail.err.Error()}.encode()
		if err := errors.Join(
			add(surface.TypeCompactionStart, startB, startErr, surface.Op{}, nil),
			add(surface.TypeCompactionEnd, endB, endErr, surface.Op{}, nil),
		); err != nil {
			return Outcome{}, err
		}
	}
	return Outcome{Proposals: ps, Warning: warning}, nil
}
