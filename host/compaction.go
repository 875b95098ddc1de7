package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// compact asks one compaction provider to act and admits its proposals all
// or nothing. A rejected proposal leaves the log unchanged and is returned.
// The compaction runs within its budget (Config.CompactionBudget), and
// within the step's for automatic ones; a compaction past its budget is
// the provider's failure and proposes nothing. The summarize calls it made
// are recorded as plugin/call events after its own events.
func (a *Agent) compact(ctx context.Context, c CompactionProvider, reason CompactionReason) error {
	return a.compactWith(ctx, c, CompactionRequest{Reason: reason})
}

// runCompaction is compact with a whole request; the host fills its Turn
// and Route. compactWith traces it.
func (a *Agent) runCompaction(ctx context.Context, c CompactionProvider, req CompactionRequest) error {
	reason := req.Reason
	if reason != CompactManual && reason != CompactRegion {
		var cancel context.CancelFunc
		ctx, cancel = a.withBudget(ctx, c.ID())
		defer cancel()
	}
	if ctx.Err() != nil {
		// Cancelled, or the step's budget is spent already: the provider
		// is not to blame, and not called.
		a.log.Warn("compaction skipped: no time left", "provider", c.ID(), "cause", context.Cause(ctx))
		return context.Cause(ctx)
	}
	b := a.cfg.CompactionBudget
	if b.WallClock > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, b.WallClock, &BudgetError{Plugin: c.ID(), Scope: "compaction",
			Rule: "wall clock per compaction", Key: KeyCompactionWall, Limit: b.WallClock.String(), Used: b.WallClock.String() + " elapsed"})
		defer cancel()
	}
	turn, _ := a.s.log.OpenTurn()
	led := &ledger{ctx: ctx, plugin: c.ID(), budget: b}
	view := &View{s: a.s, meter: a.cfg.Meter, summarizer: a.summarizer(), ledger: led, tel: a.tel, meterFailed: a.meterFailed}
	defer a.reportMeterFailures() // after the compaction's own events
	by := compactionProposer(c)
	req.Turn, req.Route = turn, a.cur.route
	ps, err := a.tel.compact(ctx, c, view, req)
	if berr := led.exceeded(); berr != nil && !errors.Is(err, ErrBudget) {
		// Whatever the provider made of the refusal, the compaction failed.
		if err != nil {
			err = fmt.Errorf("%w (the provider then failed: %v)", berr, err)
		} else {
			err = berr
		}
	}
	if err != nil {
		if led.refused > 1 {
			err = fmt.Errorf("%w; %d summarize calls were refused", err, led.refused)
		}
		err = fmt.Errorf("compaction provider %q: %w", c.ID(), err)
		a.recordCalls(led, by, reason, nil)
		a.s.ReportFailure(by, err)
		return err
	}
	if len(ps) == 0 {
		a.recordCalls(led, by, reason, nil)
		return nil
	}
	_, err = a.s.Propose(by, ps...)
	if err != nil {
		a.recordCalls(led, by, reason, nil)
		a.s.ReportFailure(by, err)
		return err
	}
	a.recordCalls(led, by, reason, ps)
	return nil
}

// overflowHandler is the request-error handler that recovers from a
// context-overflow failure by compacting, and asks for a retry only when
// the surface was actually rewritten.
func (a *Agent) overflowHandler(ctx context.Context, in RequestError) (RequestError, error) {
	if in.Code != llm.CodeContextOverflow || ctx.Err() != nil || a.overflow >= a.cfg.MaxOverflowRetries {
		return in, nil
	}
	before := a.s.log.ReplaceGeneration()
	var errs []error
	for _, c := range a.cfg.Compactors {
		if err := a.compact(ctx, c, CompactOverflow); err != nil {
			errs = append(errs, err)
		}
	}
	if a.s.log.ReplaceGeneration() != before && ctx.Err() == nil {
		a.overflow++
		in.Retry = true
		return in, nil
	}
	return in, errors.Join(errs...)
}

// CompactNow runs manual compaction with every compaction provider, between
// turns. It reports whether the surface was rewritten.
//
// It is serialised with turns: while a turn runs on the session it
// returns an error matching ErrBusy.
func (a *Agent) CompactNow(ctx context.Context) (bool, error) {
	release, err := a.s.acquire("compact")
	if err != nil {
		return false, err
	}
	defer release()
	a.cur = a.settings()
	if t, _ := a.s.log.OpenTurn(); t != 0 {
		return false, fmt.Errorf("compaction is busy: turn %d is open", t)
	}
	before := a.s.log.ReplaceGeneration()
	for _, c := range a.cfg.Compactors {
		if err := a.compact(ctx, c, CompactManual); err != nil {
			return a.s.log.ReplaceGeneration() != before, err
		}
	}
	return a.s.log.ReplaceGeneration() != before, nil
}

func (a *Agent) summarizer() Summarizer {
	if a.cfg.Summarizer != nil {
		return a.cfg.Summarizer
	}
	return &modelSummarizer{model: a.cfg.Model, others: a.cfg.SummaryModels, session: a.s.id}
}

// SummaryModel is the model client of a summarize route.
type SummaryModel struct {
	Route Route
	Model llm.Model
}

// modelSummarizer serves summarization through the conversation's model,
// or the summary model whose route the call names.
type modelSummarizer struct {
	model   llm.Model
	others  []SummaryModel
	session string
}

// modelFor is the model that serves a call to provider and model.
func (m *modelSummarizer) modelFor(provider, model string) llm.Model {
	for _, o := range m.others {
		if o.Route.Provider == provider && o.Route.Model == model {
			return o.Model
		}
	}
	return m.model
}

// APIFor is the wire protocol of the model serving a call to provider and
// model, when it names one (the HTTP clients do; a scripted model does
// not).
func (m *modelSummarizer) APIFor(provider, model string) llm.API {
	if a, ok := m.modelFor(provider, model).(interface{ API() llm.API }); ok {
		return a.API()
	}
	return ""
}

func (m *modelSummarizer) Summarize(ctx context.Context, req SummaryRequest) (*SummaryResult, error) {
	r, err := m.modelFor(req.Provider, req.Model).Stream(ctx, req.request(m.session), nil)
	if err != nil {
		return nil, err
	}
	return &SummaryResult{Content: r.Content, Usage: r.Usage, FinishReason: string(r.FinishReason), Provider: req.Provider, Model: req.Model}, nil
}

// retryHandler retries transient failures (rate limit, server error, broken
// stream) up to MaxRetries times per step, waiting what the provider asked
// (capped), and records each retry as an llm/retry event.
func (a *Agent) retryHandler(ctx context.Context, in RequestError) (RequestError, error) {
	if in.Retry || a.retries >= a.cfg.MaxRetries {
		return in, nil
	}
	var e *llm.Error
	if !errors.As(in.Err, &e) {
		return in, nil
	}
	switch e.Code {
	case llm.CodeRateLimit, llm.CodeServer, llm.CodeBrokenStream:
	default:
		return in, nil
	}
	wait := e.RetryAfter
	if wait <= 0 {
		wait = time.Duration(a.retries+1) * 500 * time.Millisecond
	}
	data := Retry{Turn: in.Turn, Step: in.Step, Failure: surface.CallError{Message: e.Error(), Code: e.Code}}
	if e.RetryAfter > a.cfg.MaxRetryWait {
		// Say so: the provider asked for longer than the host will wait.
		data.RetryAfterMs = e.RetryAfter.Milliseconds()
		data.Note = fmt.Sprintf("the provider asked to wait %s (Retry-After); the host waits its cap of %s (%s)",
			e.RetryAfter, a.cfg.MaxRetryWait, RetryWaitKey)
		a.log.Warn("the provider asked for a longer wait than the retry cap; waiting the cap",
			"asked", e.RetryAfter, "waiting", a.cfg.MaxRetryWait, "key", RetryWaitKey)
	}
	wait = min(wait, a.cfg.MaxRetryWait)
	a.retries++
	data.Retry, data.WaitMs = a.retries, wait.Milliseconds()
	if _, err := a.s.append(surface.TypeLLMRetry, data, surface.Op{}, nil); err != nil {
		return in, err
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return in, nil
	case <-t.C:
	}
	in.Retry = true
	return in, nil
}

// RetryWaitKey is the configuration key of Config.MaxRetryWait.
const RetryWaitKey = "retry.maxWait"
