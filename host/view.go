package host

import (
	"context"
	"errors"

	"github.com/weirhost/weir/surface"
)

// View is the read access a provider has to its session while it is called,
// plus the capabilities its kind was granted. Providers never write through
// a View: what they want changed they return as proposals.
type View struct {
	s          *Session
	meter      Meter
	summarizer Summarizer
	// ledger accounts the summarize calls of the compaction the view
	// serves (nil: no budget, no records).
	ledger *ledger
	tel    *telemetry // the agent's instrumentation, nil without
	// meterFailed receives the meter's failures, which the agent records
	// as plugin/failure events after the compaction (nil: not recorded).
	meterFailed func(error)
}

// ErrNotGranted is returned by a capability the provider's kind lacks.
var ErrNotGranted = errors.New("capability not granted to this provider kind")

// SessionID is the session's id.
func (v *View) SessionID() string { return v.s.id }

// Nodes describes the surface nodes in order.
func (v *View) Nodes() []surface.NodeInfo { return v.s.log.Surface() }

// Message returns the message of a surface event.
func (v *View) Message(seq int64) (*surface.Message, bool) { return v.s.log.Message(seq) }

// Event returns a committed event.
func (v *View) Event(seq int64) (surface.Event, bool) { return v.s.log.Event(seq) }

// MessageData returns the JSON of the message at seq as its event's data
// holds it (surface.Log.MessageData: read only, shared).
func (v *View) MessageData(seq int64) ([]byte, bool) { return v.s.log.MessageData(seq) }

// Events returns the committed events (read-only, shared).
func (v *View) Events() []surface.Event { return v.s.log.Events() }

// Messages derives the current wire history.
func (v *View) Messages() []*surface.Message { return v.s.log.Messages() }

// Header is the latest logged request header, or nil.
func (v *View) Header() *surface.Header { return v.s.log.Header() }

// Generations returns replaceGeneration and contentGeneration.
func (v *View) Generations() (replace, content uint64) {
	return v.s.log.ReplaceGeneration(), v.s.log.ContentGeneration()
}

// NextSeq is the seq the next committed event will get.
func (v *View) NextSeq() int64 { return v.s.log.NextSeq() }

// OpenTurn returns the open turn and step (0 when none).
func (v *View) OpenTurn() (turn, step int64) { return v.s.log.OpenTurn() }

// NewID returns a fresh message id.
func (v *View) NewID() string { return v.s.newID() }

// Measure asks the session's token meter for a measurement.
func (v *View) Measure(ctx context.Context, header *surface.Header) (*Measurement, error) {
	if v.meter == nil {
		return nil, ErrNotGranted
	}
	m, err := v.tel.measure(ctx, v.meter, header)
	v.noteMeter(err)
	return m, err
}

// noteMeter hands a failure of the meter to the agent, which records it.
func (v *View) noteMeter(err error) {
	if err != nil && v.meterFailed != nil {
		v.meterFailed(err)
	}
}

// TotalMeter is a Meter that answers the total of its measurement under
// the logged header more cheaply than a whole measurement.
type TotalMeter interface {
	MeasureTotal(ctx context.Context) (int64, error)
}

// MeasureTotal is the total tokens of the session meter's measurement
// under the logged header (Measurement.TotalTokens).
func (v *View) MeasureTotal(ctx context.Context) (int64, error) {
	if v.meter == nil {
		return 0, ErrNotGranted
	}
	if t, ok := v.meter.(TotalMeter); ok {
		n, err := v.tel.measureTotal(ctx, v.meter, t)
		v.noteMeter(err)
		return n, err
	}
	m, err := v.tel.measure(ctx, v.meter, nil)
	if err != nil {
		v.noteMeter(err)
		return 0, err
	}
	if m == nil {
		return 0, ErrNotGranted
	}
	return m.TotalTokens, nil
}

// Summarize calls the model through the host (compaction providers only).
// The calls count against the compaction's budget (CompactionBudget): a
// call past it is refused with a *BudgetError and reaches no model. Each
// call is recorded (plugin/call) once the compaction is over.
func (v *View) Summarize(ctx context.Context, req SummaryRequest) (*SummaryResult, error) {
	if v.summarizer == nil {
		return nil, ErrNotGranted
	}
	if v.ledger == nil {
		return v.tel.summarize(ctx, v.summarizer, req)
	}
	return v.summarizeBudgeted(ctx, req)
}

// MaxSummarizeTokens is the token budget of the compaction's summarize
// calls together (CompactionBudget.MaxTokens, sandbox.compaction.maxSummarizeTokens);
// no single call can use more output than that. 0 when unbounded.
func (v *View) MaxSummarizeTokens() int64 {
	if v.ledger == nil || v.ledger.budget.MaxTokens < 0 {
		return 0
	}
	return v.ledger.budget.MaxTokens
}

// Exceeded is the error of a compaction that ran past its budget (a
// refused summarize call, or the wall clock), else nil. A compaction past
// its budget is a failure of its provider whatever the provider returned.
func (v *View) Exceeded() error {
	if v.ledger == nil {
		return nil
	}
	return v.ledger.exceeded()
}
