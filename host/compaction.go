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
func (a *Agent) compact(ctx context.Context, c CompactionProvider, reason CompactionReason) error {
	if reason != CompactManual {
		var cancel context.CancelFunc
		ctx, cancel = a.withBudget(ctx)
		defer cancel()
	}
	turn, _ := a.s.log.OpenTurn()
	view := &View{s: a.s, meter: a.cfg.Meter, summarizer: a.summarizer()}
	by := compactionProposer(c)
	ps, err := c.Compact(ctx, view, CompactionRequest{Reason: reason, Turn: turn, Route: a.cfg.Route})
	if err != nil {
		err = fmt.Errorf("compaction provider %q: %w", c.ID(), err)
		a.s.ReportFailure(by, err)
		return err
	}
	if len(ps) == 0 {
		return nil
	}
	if _, err = a.s.Propose(by, ps...); err != nil {
		a.s.ReportFailure(by, err)
	}
	return err
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
func (a *Agent) CompactNow(ctx context.Context) (bool, error) {
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
	return &modelSummarizer{model: a.cfg.Model, session: a.s.id}
}

// modelSummarizer serves summarization through the conversation's model.
type modelSummarizer struct {
	model   llm.Model
	session string
}

func (m *modelSummarizer) Summarize(ctx context.Context, req SummaryRequest) (*SummaryResult, error) {
	cfg := surface.CallConfig{Provider: req.Provider, Model: req.Model}
	if req.MaxTokens > 0 {
		mt := req.MaxTokens
		cfg.MaxTokens = &mt
	}
	r, err := m.model.Stream(ctx, &llm.Request{Config: cfg, Messages: req.Messages, Tools: req.Tools, SessionID: m.session}, nil)
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
	wait = min(wait, a.cfg.MaxRetryWait)
	a.retries++
	if _, err := a.s.append(surface.TypeLLMRetry, retryData{Turn: in.Turn, Step: in.Step, Retry: a.retries,
		Failure: surface.CallError{Message: e.Error(), Code: e.Code}, WaitMs: wait.Milliseconds()}, surface.Op{}, nil); err != nil {
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

type retryData struct {
	Turn    int64             `json:"turn"`
	Step    int64             `json:"step"`
	Retry   int               `json:"retry"`
	Failure surface.CallError `json:"failure"`
	WaitMs  int64             `json:"waitMs"`
}
