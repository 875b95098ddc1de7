package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

func unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// turn runs one turn (spec 8.1).
func (a *Agent) turn(ctx context.Context) (*TurnResult, error) {
	l := a.s.log
	if t, _ := l.OpenTurn(); t != 0 {
		return nil, fmt.Errorf("session %s: turn %d is still open: a previous run failed inside it; reopen the session to repair it: %w", a.s.id, t, ErrTurnOpen)
	}
	res := &TurnResult{Turn: l.LastTurn() + 1}
	if _, err := a.s.append(surface.TypeTurnStart, StepRef{Turn: res.Turn}, surface.Op{}, nil); err != nil {
		return nil, err
	}
	a.overflow = 0
	maxTokens := false
	for step := int64(1); ; step++ {
		claimed := a.claim()
		out, err := a.tracedStep(ctx, res.Turn, step, claimed)
		if !out.committed {
			a.requeue(claimed)
		}
		if err != nil {
			return nil, err
		}
		if out.entered {
			res.Steps++
		}
		maxTokens = maxTokens || out.maxTokens
		switch {
		case out.end != nil:
			res.Reason = *out.end
		case out.continues && int(step) < a.cfg.MaxSteps:
			continue
		case out.continues:
			res.Reason = surface.EndReason{Kind: surface.EndError, Error: &surface.CallError{
				Message: fmt.Sprintf("the turn reached its limit of %d steps", a.cfg.MaxSteps), Code: "MAX_STEPS"}}
		case a.Pending() > 0:
			continue // steering queued for the next step
		case maxTokens:
			res.Reason = surface.EndReason{Kind: surface.EndMaxTokens}
		default:
			res.Reason = surface.EndReason{Kind: surface.EndCompleted}
		}
		break
	}
	if _, err := a.s.append(surface.TypeTurnEnd, surface.TurnEnd{Turn: res.Turn, Reason: res.Reason}, surface.Op{}, nil); err != nil {
		return nil, err
	}
	return res, a.s.Flush()
}

type stepOutcome struct {
	entered bool
	// committed is set once the step's batch is in the log: the claimed
	// messages are the step's; until then they go back to the queue.
	committed bool
	continues bool // tool calls ran: another step follows
	maxTokens bool
	end       *surface.EndReason
}

// step runs one step (spec 8.2, in the order of spec 0 item 1).
func (a *Agent) step(ctx context.Context, turn, step int64, claimed []*surface.Message) (stepOutcome, error) {
	l := a.s.log
	a.cur = a.settings()
	if a.cfg.StepBudget > 0 {
		a.budget = time.Now().Add(a.cfg.StepBudget)
	}
	// Assemble the prompt and project runtime context.
	asm := a.assemble()
	rcMsg := a.rc.project(asm.Runtime, a.s.newID)
	def := Decision{Messages: slices.Clone(claimed)}
	if rcMsg != nil {
		def.Messages = append(def.Messages, rcMsg)
	}
	// Pre-step waterfall (compaction acts here, before the step opens).
	pre, failures, err := a.PreStepChain.Run(ctx, PreStep{Turn: turn, Step: step, Claimed: claimed, Decision: def})
	for _, f := range failures {
		a.log.Warn("pre-step handler failed; the step goes on without it", "handler", f.Handler, "error", f.Err)
	}
	if err != nil {
		if ctx.Err() != nil {
			return stepOutcome{end: aborted(ctx)}, nil
		}
		return stepOutcome{end: failed(err)}, nil
	}
	if ctx.Err() != nil {
		return stepOutcome{end: aborted(ctx)}, nil
	}
	d := pre.Decision
	if d.Reject {
		return stepOutcome{end: &surface.EndReason{Kind: surface.EndBlocked}}, nil
	}
	if step == 1 && len(d.Messages) == 0 {
		// Nothing to send: the claimed batch was empty, or a handler
		// replaced it with none (its decision, like a reject's).
		return stepOutcome{committed: true, end: &surface.EndReason{Kind: surface.EndCompleted}}, nil
	}
	// Project the system prompt.
	var commits []surface.PromptCommit
	series := d.StartsSeries || l.ContentGeneration() != a.baseGen || a.toolsChanged()
	popts := surface.PromptOptions{InHistory: a.cur.route.InHistory, StartsSeries: series, Plugin: a.promptID(), NewID: a.s.newID}
	rendered, err := a.render(ctx, &asm)
	switch {
	case err == nil:
		commits = l.ProjectSystemPrompt(rendered, popts)
	case !hasSystemNode(l):
		// No prompt yet to keep: reserve the head with the empty prompt
		// (spec 6.2-6.3), so node 0 is system and a later prompt replaces
		// it instead of landing behind the user history.
		a.log.Warn("system prompt provider failed; reserving an empty system head", "provider", a.promptID(), "error", err)
		a.s.ReportFailure(Proposer{Kind: ByPrompt, ID: a.promptID()}, err)
		commits = l.ProjectSystemPrompt("", popts)
	default:
		a.log.Warn("system prompt provider failed; keeping the last good prompt", "provider", a.promptID(), "error", err)
		a.s.ReportFailure(Proposer{Kind: ByPrompt, ID: a.promptID()}, err)
	}
	// step/start, then the prompt, then the entered batch.
	if _, err := a.s.append(surface.TypeStepStart, StepRef{turn, step}, surface.Op{}, nil); err != nil {
		return stepOutcome{}, err
	}
	out := stepOutcome{entered: true}
	end := func(reason *surface.EndReason) (stepOutcome, error) {
		out.end = reason
		a.reportMeterFailures() // those of the step's commits, inside the step
		if _, err := a.s.append(surface.TypeStepEnd, StepRef{turn, step}, surface.Op{}, nil); err != nil {
			return out, err
		}
		return out, a.s.Flush()
	}
	if len(commits) > 0 {
		ps := make([]surface.Proposal, len(commits))
		for i, c := range commits {
			data, err := eventData(surface.StepMessage{Turn: turn, Step: step, Message: c.Message})
			if err != nil {
				return out, err
			}
			ps[i] = surface.Proposal{Type: surface.TypeSystemMessage, Data: data, Op: c.Op, Sources: c.Sources}
		}
		by := Proposer{Kind: ByPrompt, ID: a.promptID()}
		if _, err := a.s.Propose(by, ps...); err != nil {
			a.log.Error("system prompt projection rejected; keeping the last good prompt", "error", err)
			a.s.ReportFailure(by, err)
		}
	}
	// The batch is admitted all or nothing: either every claimed message
	// is the step's, or none is and they go back to the queue.
	batch := make([]surface.Proposal, len(d.Messages))
	for i, m := range d.Messages {
		data, err := eventData(m)
		if err != nil {
			return out, fmt.Errorf("encode the step's message %d: %w", i, err)
		}
		batch[i] = surface.Proposal{Type: surface.TypeUserMessage, Data: data, Op: surface.Append}
	}
	if len(batch) > 0 {
		if _, err := a.s.Propose(Proposer{Kind: ByLoop}, batch...); err != nil {
			return out, err
		}
	}
	out.committed = true
	// Attempts.
	a.retries = 0
	startsSeries := d.StartsSeries
	for n := 1; ; n++ {
		a.at = attemptRef{turn, step, n}
		res, err := a.attempt(ctx, turn, step, startsSeries)
		startsSeries = false
		if err != nil {
			return out, err
		}
		if res.retry {
			continue
		}
		if res.end != nil {
			return end(res.end)
		}
		out.maxTokens = res.maxTokens
		if res.maxTokens || len(res.calls) == 0 {
			return end(nil)
		}
		reason, err := a.runTools(ctx, turn, step, res.calls)
		if err != nil {
			return out, err
		}
		if reason != nil {
			return end(reason)
		}
		out.continues = true
		return end(nil)
	}
}

// hasSystemNode reports whether a system/message survives on the surface.
func hasSystemNode(l *surface.Log) bool {
	for _, n := range l.Surface() {
		if n.Type == surface.TypeSystemMessage {
			return true
		}
	}
	return false
}

func (a *Agent) assemble() Assembly {
	asm := Assembly{Sections: a.cur.sections, Tools: a.cur.schemas, Data: a.cfg.Data, Route: a.cur.route}
	if a.cfg.Runtime != nil {
		asm.Runtime = a.cfg.Runtime()
	}
	return asm
}

func (a *Agent) render(ctx context.Context, asm *Assembly) (string, error) {
	if a.cfg.Prompt == nil {
		return "", nil
	}
	ctx, cancel := a.withBudget(ctx, a.promptID())
	defer cancel()
	return a.tel.render(ctx, a.cfg.Prompt, asm)
}

// withBudget bounds a provider call by what is left of the step's budget;
// when it runs out, the context's cause is a *BudgetError naming the
// provider and KeyStepBudget.
func (a *Agent) withBudget(ctx context.Context, provider string) (context.Context, context.CancelFunc) {
	if a.budget.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadlineCause(ctx, a.budget, &BudgetError{Plugin: provider, Scope: "step",
		Rule: "provider time per step", Key: KeyStepBudget, Limit: a.cfg.StepBudget.String(), Used: "no time left"})
}

// toolsChanged reports whether the assembled tools differ from the latest
// logged header's.
func (a *Agent) toolsChanged() bool {
	h := a.s.log.Header()
	if h == nil {
		return false
	}
	return !(surface.Header{Config: h.Config, Tools: a.cur.schemas}).Canonical().Equal(surface.Header{Config: h.Config, Tools: h.Tools})
}

type attemptResult struct {
	retry     bool
	end       *surface.EndReason
	calls     []surface.Block
	maxTokens bool
}

// attempt runs one model attempt: request waterfall, header and context,
// the stream, and its settlement.
func (a *Agent) attempt(ctx context.Context, turn, step int64, startsRequestSeries bool) (attemptResult, error) {
	l := a.s.log
	a.cur.route = a.Route() // a route switched during the step applies from this request on
	cfg, failures, err := a.RequestChain.Run(ctx, a.defaultConfig())
	for _, f := range failures {
		a.log.Warn("request handler failed", "handler", f.Handler, "error", f.Err)
	}
	if err != nil {
		if ctx.Err() != nil {
			return attemptResult{end: aborted(ctx)}, nil
		}
		return attemptResult{end: failed(err)}, nil
	}
	if cfg.Provider == "" || cfg.Model == "" {
		return attemptResult{end: failed(errors.New("the request config has no provider or model"))}, nil
	}
	if cfg.MaxTokens != nil {
		// The route's output cap bounds every request: a request handler
		// or route maxTokens above what the model accepts would be refused.
		if n, clamped := a.cur.route.ClampOutput(*cfg.MaxTokens); clamped {
			a.log.Warn("max tokens clamped to the route's output cap", "asked", *cfg.MaxTokens, "cap", n, "model", a.cur.route.Model)
			cfg.MaxTokens = &n
		}
	}
	if err := a.logHeader(cfg, startsRequestSeries); err != nil {
		return attemptResult{}, err
	}
	if err := a.logContext(cfg); err != nil {
		return attemptResult{}, err
	}
	lr, err := logRequest(l, a.s.id)
	if err != nil {
		return attemptResult{}, err
	}
	if err := a.s.Flush(); err != nil {
		return attemptResult{}, err
	}
	// Encoded from the log's own messages, which the cache may know from
	// the previous request; the model is handed a copy.
	sent, err := a.enc.EncodeRequest(lr)
	if err != nil {
		return attemptResult{end: failed(err)}, nil
	}
	req := cloneRequest(lr)
	modified := false
	snap := newSentRequest(lr, sent)
	cctx, chat := a.tel.startChat(ctx, cfg, a.at)
	cctx = context.WithValue(cctx, sentBodyKey{}, snap)
	result, serr := a.modelChain(snap, &modified)(cctx, req, a.onDelta)
	a.tel.endChat(chat, cfg, result, serr)
	if modified || !snap.unchanged(req) {
		// The request is immutable: a model, middleware or interceptor that
		// changed it (or handed the model another one) broke the
		// reconstruction guarantee, so the step fails loudly.
		if err := a.settleAttempt(turn, step, result); err != nil {
			return attemptResult{}, err
		}
		return attemptResult{end: failed(errRequestModified)}, nil
	}
	if serr == nil && result != nil {
		if err := a.settle(turn, step, cfg, result, false); err != nil {
			return attemptResult{}, err
		}
		a.overflow = 0
		return attemptResult{calls: toolCalls(result.Content), maxTokens: result.FinishReason == llm.FinishMaxTokens}, nil
	}
	// Failure or cancellation: record what was delivered.
	if ctx.Err() != nil {
		if result != nil && delivered(result.Content) {
			err = a.settle(turn, step, cfg, result, true)
		} else {
			err = a.settleAttempt(turn, step, result)
		}
		if err != nil {
			return attemptResult{}, err
		}
		return attemptResult{end: aborted(ctx)}, nil
	}
	if err := a.settleAttempt(turn, step, result); err != nil {
		return attemptResult{}, err
	}
	dec, failures, werr := a.RequestErrorChain.Run(ctx, RequestError{Turn: turn, Step: step, Err: serr, Code: errorCode(serr)})
	for _, f := range failures {
		a.log.Warn("request-error handler failed", "handler", f.Handler, "error", f.Err)
	}
	if werr == nil && dec.Retry && ctx.Err() == nil {
		return attemptResult{retry: true}, nil
	}
	if ctx.Err() != nil {
		return attemptResult{end: aborted(ctx)}, nil
	}
	return attemptResult{end: failed(serr)}, nil
}

// onDelta hands a streamed piece to Config.OnDelta and, tagged, to the
// session's delta subscriptions.
func (a *Agent) onDelta(d llm.Delta) {
	if a.cfg.OnDelta != nil {
		a.cfg.OnDelta(d)
	}
	a.s.publishDelta(Delta{Turn: a.at.turn, Step: a.at.step, Attempt: a.at.attempt, Delta: d})
}

// defaultConfig is the agent/request default: the route's config.
func (a *Agent) defaultConfig() surface.CallConfig {
	c := surface.CallConfig{Provider: a.cur.route.Provider, Model: a.cur.route.Model, ReasoningEffort: a.cur.route.ReasoningEffort}
	if a.cur.route.MaxTokens > 0 {
		mt := a.cur.route.MaxTokens
		c.MaxTokens = &mt
	}
	return c
}

// logHeader logs request/header per spec 7.2 and 7.3.
func (a *Agent) logHeader(cfg surface.CallConfig, startsRequestSeries bool) error {
	l := a.s.log
	h := surface.Header{Config: cfg, Tools: a.cur.schemas}.Canonical()
	gen := l.ContentGeneration()
	series := startsRequestSeries || gen != a.baseGen
	latest := l.Header()
	ev := surface.HeaderEvent{Header: h}
	switch {
	case a.built == 0 && latest == nil:
		ev.Reason = surface.ReasonInitial
	case a.built == 0:
		ev.Reason = surface.ReasonResume
	case latest == nil || !h.Equal(*latest):
		ev.Reason, ev.StartsSeries = surface.ReasonChange, series
	case series:
		ev.Reason = surface.ReasonSeries
	}
	a.baseGen = gen
	a.built++
	if ev.Reason == "" {
		return nil
	}
	_, err := a.s.append(surface.TypeRequestHeader, ev, surface.Op{}, nil)
	return err
}

// logContext logs request/context when the route's facts changed (7.4).
func (a *Agent) logContext(cfg surface.CallConfig) error {
	rc := RequestContext{Provider: cfg.Provider, Model: cfg.Model, ContextWindow: a.cur.route.ContextWindow}
	if a.cur.route.InHistory {
		rc.SystemPromptUpdate = "in-history"
	}
	if a.lastCtx != nil && *a.lastCtx == rc {
		return nil
	}
	if _, err := a.s.append(surface.TypeRequestContext, rc, surface.Op{}, nil); err != nil {
		return err
	}
	a.lastCtx = &rc
	return nil
}

// settle appends the assistant/message of an attempt.
func (a *Agent) settle(turn, step int64, cfg surface.CallConfig, r *llm.Result, interrupted bool) error {
	content := r.Content
	if interrupted {
		content = slices.DeleteFunc(slices.Clone(content), func(b surface.Block) bool { return b.Type == surface.BlockToolCall })
	}
	if content == nil {
		content = []surface.Block{}
	}
	msg := surface.Message{ID: a.s.newID(), Role: surface.RoleAssistant,
		Source:  surface.Source{Kind: "model", Provider: cfg.Provider, Model: cfg.Model},
		Content: content}
	_, err := a.s.append(surface.TypeAssistantMessage, surface.StepMessage{Turn: turn, Step: step, Message: msg,
		Stream: streamOf(r), Usage: r.Usage, Interrupted: interrupted}, surface.Append, nil)
	return err
}

// settleAttempt appends assistant/attempt for an attempt that produced no
// surface message.
func (a *Agent) settleAttempt(turn, step int64, r *llm.Result) error {
	_, err := a.s.append(surface.TypeAssistantAttempt, Attempt{turn, step, streamOf(r)}, surface.Op{}, nil)
	return err
}

func streamOf(r *llm.Result) jsontext.Value {
	if r == nil || len(r.Stream) == 0 {
		return jsontext.Value(`{}`)
	}
	return r.Stream
}

func delivered(content []surface.Block) bool {
	for _, b := range content {
		if (b.Type == surface.BlockText || b.Type == surface.BlockReasoning) && b.Text != "" {
			return true
		}
	}
	return false
}

func toolCalls(content []surface.Block) []surface.Block {
	var calls []surface.Block
	for _, b := range content {
		if b.Type == surface.BlockToolCall {
			calls = append(calls, b)
		}
	}
	return calls
}

func aborted(ctx context.Context) *surface.EndReason {
	cause := context.Cause(ctx)
	if cause == nil {
		cause = ctx.Err()
	}
	return &surface.EndReason{Kind: surface.EndAborted, Reason: cause.Error()}
}

func failed(err error) *surface.EndReason {
	code := errorCode(err)
	if code == "" {
		code = "UNKNOWN"
	}
	return &surface.EndReason{Kind: surface.EndError, Error: &surface.CallError{Message: err.Error(), Code: code}}
}

// errorCode returns the stable code of a model failure, or "".
func errorCode(err error) string {
	var e *llm.Error
	if errors.As(err, &e) {
		return string(e.Code)
	}
	return ""
}
