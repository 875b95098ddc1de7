package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// Configuration keys of the compaction budget (host/config, sandbox
// section); errors name them.
const (
	KeyMaxSummarizeCalls  = "sandbox.compaction.maxSummarizeCalls"
	KeyMaxSummarizeTokens = "sandbox.compaction.maxSummarizeTokens"
	KeyCompactionWall     = "sandbox.compaction.wallClock"
)

// Defaults of CompactionBudget.
const (
	DefaultMaxSummarizeCalls  = 8
	DefaultMaxSummarizeTokens = 200_000
	DefaultCompactionWall     = 180 * time.Second
)

// CompactionBudget bounds one compaction, automatic or manual: the
// summarize calls its provider makes, the tokens they use, and the wall
// clock of the whole compaction, time inside summarize included. A zero
// field takes its default; a negative one removes that bound.
type CompactionBudget struct {
	// MaxCalls is the most summarize calls one compaction may make.
	MaxCalls int
	// MaxTokens caps the tokens (input, cache read and write, output) of
	// its summarize calls together. The call that crosses the cap
	// completes (its tokens are spent); any later call is refused.
	MaxTokens int64
	// WallClock bounds the compaction from the provider's call to its
	// return, summarization included.
	WallClock time.Duration
}

func (b CompactionBudget) withDefaults() CompactionBudget {
	if b.MaxCalls == 0 {
		b.MaxCalls = DefaultMaxSummarizeCalls
	}
	if b.MaxTokens == 0 {
		b.MaxTokens = DefaultMaxSummarizeTokens
	}
	if b.WallClock == 0 {
		b.WallClock = DefaultCompactionWall
	}
	return b
}

// KeyStepBudget is the configuration key of Config.StepBudget.
const KeyStepBudget = "sandbox.stepBudget"

// ErrBudget matches every *BudgetError.
var ErrBudget = errors.New("budget exceeded")

// BudgetError is a provider that ran past a budget: Scope is "compaction"
// (CompactionBudget) or "step" (Config.StepBudget), Rule says which bound,
// Key is its configuration key.
type BudgetError struct {
	Plugin string
	Scope  string
	Rule   string
	Key    string
	Limit  string
	Used   string
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("%s budget exceeded: provider %q: %s: %s; the limit is %s (%s)",
		e.Scope, e.Plugin, e.Rule, e.Used, e.Limit, e.Key)
}

// Is makes errors.Is(err, ErrBudget) true.
func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

// TypePluginCall records one model call a plugin caused (a summarize call
// of a compaction provider): written by the host, ignorable, after the
// compaction's own events. `host request --at SEQ` rebuilds its request.
const TypePluginCall = "plugin/call"

// PluginCall is the data of a plugin/call event.
type PluginCall struct {
	Plugin string `json:"plugin"`
	Kind   string `json:"kind"`
	// Call is the host import: "summarize".
	Call string `json:"call"`
	// Reason is why the compaction ran: pressure, context-overflow, manual, region.
	Reason string `json:"reason"`
	// CompactionID is the compaction's id, when its proposals named one.
	CompactionID string `json:"compactionId,omitzero"`
	Turn         int64  `json:"turn,omitzero"`
	Step         int64  `json:"step,omitzero"`
	// N numbers the calls of one compaction from 1.
	N       int          `json:"n"`
	Request CallEnvelope `json:"request"`
	// Asked is what the plugin asked for where the host sent otherwise
	// (the route's provider, model and output cap).
	Asked *CallAsked `json:"asked,omitzero"`
	// Outcome is "ok", "error" (the model call failed) or "refused" (past
	// the budget; the model was not called). Refused counts the refused
	// calls this record stands for.
	Outcome      string         `json:"outcome"`
	Error        string         `json:"error,omitzero"`
	Refused      int            `json:"refused,omitzero"`
	FinishReason string         `json:"finishReason,omitzero"`
	Usage        *surface.Usage `json:"usage,omitzero"`
	DurationMs   int64          `json:"durationMs"`
}

// CallEnvelope is what a model request was built from: the call config,
// the messages (a logged surface message by seq, or inline) and the tools
// (those of a logged request/header by seq, or inline).
type CallEnvelope struct {
	// API is the wire protocol the call went out in (llm.API), when the
	// summarizer's model names one; "" reads as the API of the nearest
	// earlier attempt.
	API llm.API `json:"api,omitzero"`
	// Encoder is the version of the encoder that wrote the call's body
	// (llm.EncoderVersion); none reads as the encoder of the nearest
	// attempt.
	Encoder   int              `json:"encoder,omitzero"`
	Provider  string           `json:"provider"`
	Model     string           `json:"model"`
	MaxTokens int64            `json:"maxTokens,omitzero"`
	Messages  []CallMessage    `json:"messages"`
	ToolsFrom *int64           `json:"toolsFrom,omitzero"`
	Tools     []jsontext.Value `json:"tools,omitzero"`
}

// CallMessage is one message of a CallEnvelope: Seq names a logged event
// whose message was sent unchanged, else Message holds it.
type CallMessage struct {
	Seq     *int64           `json:"seq,omitzero"`
	Message *surface.Message `json:"message,omitzero"`
}

// request is the model request of a summarization call; the summarizer
// and the rebuild share it, so they build the same bytes.
func (r *SummaryRequest) request(sessionID string) *llm.Request {
	cfg := surface.CallConfig{Provider: r.Provider, Model: r.Model}
	if r.MaxTokens > 0 {
		mt := r.MaxTokens
		cfg.MaxTokens = &mt
	}
	return &llm.Request{Config: cfg, Messages: r.Messages, Tools: r.Tools, SessionID: sessionID}
}

// ledger accounts the summarize calls of one compaction.
type ledger struct {
	ctx    context.Context
	plugin string
	budget CompactionBudget

	calls   int   // model calls made
	tokens  int64 // their tokens
	refused int
	err     error // the first budget error
	records []PluginCall
}

func (l *ledger) fail(rule, key, limit, used string) error {
	if l.err == nil {
		l.err = &BudgetError{Plugin: l.plugin, Scope: "compaction", Rule: rule, Key: key, Limit: limit, Used: used}
	}
	return l.err
}

// admit refuses a call past the budget.
func (l *ledger) admit() error {
	switch {
	case l.budget.MaxCalls > 0 && l.calls >= l.budget.MaxCalls:
		return l.fail("summarize calls per compaction", KeyMaxSummarizeCalls,
			fmt.Sprintf("%d calls", l.budget.MaxCalls), fmt.Sprintf("%d calls made, one more asked", l.calls))
	case l.budget.MaxTokens > 0 && l.tokens >= l.budget.MaxTokens:
		return l.fail("summarize tokens per compaction", KeyMaxSummarizeTokens,
			fmt.Sprintf("%d tokens", l.budget.MaxTokens), fmt.Sprintf("%d tokens used", l.tokens))
	}
	return l.wall()
}

// wall reports the compaction's wall clock (or, for an automatic one, the
// step's budget) running out during the compaction.
func (l *ledger) wall() error {
	var be *BudgetError
	if errors.As(context.Cause(l.ctx), &be) {
		if l.err == nil {
			l.err = be
		}
		return be
	}
	return nil
}

// exceeded is the compaction's budget error, or nil.
func (l *ledger) exceeded() error {
	if l.err != nil {
		return l.err
	}
	return l.wall()
}

// summarize runs one call through the summarizer, within the budget, and
// records it.
func (v *View) summarizeBudgeted(ctx context.Context, req SummaryRequest) (*SummaryResult, error) {
	l := v.ledger
	if err := l.admit(); err != nil {
		l.refused++
		if l.refused == 1 {
			l.records = append(l.records, PluginCall{N: len(l.records) + 1, Request: v.envelope(&req), Asked: req.Asked,
				Outcome: "refused", Error: err.Error(), Refused: 1})
		} else {
			for i := len(l.records) - 1; i >= 0; i-- {
				if l.records[i].Outcome == "refused" {
					l.records[i].Refused++
					break
				}
			}
		}
		return nil, err
	}
	env := v.envelope(&req)
	start := v.s.now()
	res, err := v.tel.summarize(ctx, v.summarizer, req)
	rec := PluginCall{N: len(l.records) + 1, Request: env, Asked: req.Asked, Outcome: "ok", DurationMs: v.s.now() - start}
	l.calls++
	if res != nil && res.Usage != nil {
		u := *res.Usage
		rec.Usage = &u
		l.tokens += u.Total()
	}
	if res != nil {
		rec.FinishReason = res.FinishReason
	}
	if werr := l.wall(); werr != nil && err != nil {
		err = fmt.Errorf("%w (the summarize call was stopped: %v)", werr, err)
	}
	if err != nil {
		rec.Outcome, rec.Error = "error", err.Error()
	}
	l.records = append(l.records, rec)
	return res, err
}

// envelope records req by reference where it can: messages that are
// logged surface messages by seq, the latest header's tools by its seq.
func (v *View) envelope(req *SummaryRequest) CallEnvelope {
	env := CallEnvelope{Encoder: llm.EncoderVersion, Provider: req.Provider, Model: req.Model, MaxTokens: req.MaxTokens, Messages: make([]CallMessage, len(req.Messages))}
	if a, ok := v.summarizer.(interface {
		APIFor(provider, model string) llm.API
	}); ok {
		env.API = a.APIFor(req.Provider, req.Model)
	}
	log := v.s.log
	byID := map[string]int64{}
	for _, n := range log.Surface() {
		if m, ok := log.Message(n.Seq); ok {
			byID[m.ID] = n.Seq
		}
	}
	for i, m := range req.Messages {
		if seq, ok := byID[m.ID]; ok {
			lm, _ := log.Message(seq)
			a, err1 := eventData(m)
			b, err2 := eventData(lm)
			if err1 == nil && err2 == nil && bytes.Equal(a, b) {
				env.Messages[i] = CallMessage{Seq: &seq}
				continue
			}
		}
		env.Messages[i] = CallMessage{Message: m}
	}
	if len(req.Tools) > 0 {
		if seq, h := latestHeader(log); h != nil && slices.EqualFunc(h.Tools, req.Tools, func(a, b jsontext.Value) bool { return bytes.Equal(a, b) }) {
			env.ToolsFrom = &seq
		} else {
			env.Tools = req.Tools
		}
	}
	return env
}

// latestHeader returns the latest logged request/header and its seq.
func latestHeader(l *surface.Log) (int64, *surface.Header) {
	h := l.Header()
	if h == nil {
		return 0, nil
	}
	evs := l.Events()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == surface.TypeRequestHeader {
			return evs[i].Seq, h
		}
	}
	return 0, nil
}

// recordCalls appends the plugin/call records of a compaction.
func (a *Agent) recordCalls(l *ledger, by Proposer, reason CompactionReason, ps []surface.Proposal) {
	if len(l.records) == 0 {
		return
	}
	id := compactionID(ps)
	turn, step := a.s.log.OpenTurn()
	for _, r := range l.records {
		r.Plugin, r.Kind, r.Call, r.Reason, r.CompactionID, r.Turn, r.Step = by.ID, string(by.Kind), "summarize", string(reason), id, turn, step
		data, err := surface.Data(r)
		if err == nil {
			_, err = a.s.Propose(Proposer{Kind: ByLoop}, surface.Proposal{Type: TypePluginCall, Data: data, Ignorable: true})
		}
		if err != nil {
			a.log.Warn("could not record a plugin's model call", "plugin", by.ID, "error", err)
			return
		}
	}
	// The calls left the process: make their records durable now, as the
	// compaction's own events are.
	if err := a.s.Flush(); err != nil {
		a.log.Warn("could not persist a plugin's model calls", "plugin", by.ID, "error", err)
	}
}

// compactionID is the id of the first compaction/start among ps.
func compactionID(ps []surface.Proposal) string {
	for _, p := range ps {
		if p.Type != surface.TypeCompactionStart {
			continue
		}
		var d struct {
			ID string `json:"compactionId"`
		}
		if unmarshal(p.Data, &d) == nil {
			return d.ID
		}
	}
	return ""
}

// CallRequest rebuilds the model request a plugin/call event records,
// from the log before it.
func CallRequest(events []surface.Event, seq int64, sessionID string) (*llm.Request, error) {
	return CallRequestIn(nil, events, seq, sessionID)
}

// CallRequestIn is CallRequest with l, when not nil, the log of
// events[:seq] already folded (a reader walking the log in order keeps
// one instead of restoring the prefix for every call).
func CallRequestIn(l *surface.Log, events []surface.Event, seq int64, sessionID string) (*llm.Request, error) {
	if seq < 0 || seq >= int64(len(events)) || events[seq].Type != TypePluginCall {
		return nil, fmt.Errorf("seq %d is not a %s event", seq, TypePluginCall)
	}
	var c PluginCall
	if err := unmarshal(events[seq].Data, &c); err != nil {
		return nil, fmt.Errorf("seq %d: %s: %w", seq, TypePluginCall, err)
	}
	if c.Outcome == "refused" {
		return nil, fmt.Errorf("seq %d: the call was refused by the compaction budget and never sent: %s", seq, c.Error)
	}
	if l == nil {
		var err error
		if l, err = surface.Restore(events[:seq]); err != nil {
			return nil, err
		}
	} else if l.NextSeq() != seq {
		return nil, fmt.Errorf("seq %d: the log given holds events up to seq %d, not the call's prefix", seq, l.NextSeq())
	}
	req := SummaryRequest{Provider: c.Request.Provider, Model: c.Request.Model, MaxTokens: c.Request.MaxTokens}
	for i, m := range c.Request.Messages {
		switch {
		case m.Seq != nil:
			lm, ok := l.Message(*m.Seq)
			if !ok {
				return nil, fmt.Errorf("seq %d: message %d names seq %d, which holds no message", seq, i, *m.Seq)
			}
			req.Messages = append(req.Messages, cloneMessage(lm))
		case m.Message != nil:
			req.Messages = append(req.Messages, m.Message)
		default:
			return nil, fmt.Errorf("seq %d: message %d has neither a seq nor a message", seq, i)
		}
	}
	switch {
	case c.Request.ToolsFrom != nil:
		at := *c.Request.ToolsFrom
		if at < 0 || at >= seq || events[at].Type != surface.TypeRequestHeader {
			return nil, fmt.Errorf("seq %d: toolsFrom %d is not an earlier request/header", seq, at)
		}
		var hd surface.HeaderEvent
		if err := unmarshal(events[at].Data, &hd); err != nil {
			return nil, fmt.Errorf("seq %d: request/header %d: %w", seq, at, err)
		}
		req.Tools = hd.Header.Tools
	default:
		req.Tools = c.Request.Tools
	}
	r := req.request(sessionID)
	r.API, r.Encoder = c.Request.API, c.Request.Encoder
	return r, nil
}

// PluginUsage sums the model calls one plugin caused in a session.
type PluginUsage struct {
	Plugin string `json:"plugin"`
	Kind   string `json:"kind"`
	// Calls are the model calls made (Failed of them failed); Refused
	// the calls refused by the budget, which reached no model.
	Calls      int           `json:"calls"`
	Failed     int           `json:"failed"`
	Refused    int           `json:"refused"`
	Usage      surface.Usage `json:"usage"`
	DurationMs int64         `json:"durationMs"`
}

// PluginCalls sums the plugin/call events of a log per plugin, in order
// of first appearance.
func PluginCalls(events []surface.Event) []PluginUsage {
	var out []PluginUsage
	at := map[string]int{}
	for i := range events {
		if events[i].Type != TypePluginCall {
			continue
		}
		var c PluginCall
		if unmarshal(events[i].Data, &c) != nil {
			continue
		}
		key := c.Kind + "\x00" + c.Plugin
		k, ok := at[key]
		if !ok {
			k = len(out)
			at[key] = k
			out = append(out, PluginUsage{Plugin: c.Plugin, Kind: c.Kind})
		}
		u := &out[k]
		switch c.Outcome {
		case "refused":
			u.Refused += max(c.Refused, 1)
			continue
		case "error":
			u.Failed++
		}
		u.Calls++
		u.DurationMs += c.DurationMs
		if c.Usage != nil {
			u.Usage.Input += c.Usage.Input
			u.Usage.Output += c.Usage.Output
			u.Usage.CacheRead += c.Usage.CacheRead
			u.Usage.CacheWrite += c.Usage.CacheWrite
			u.Usage.Reasoning += c.Usage.Reasoning
		}
	}
	return out
}
