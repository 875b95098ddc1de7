package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/hashicorp/go-hclog"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/waterfall"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Config configures an Agent.
type Config struct {
	Route Route
	Model llm.Model
	// Prompt renders the system prompt; nil renders an empty prompt (node 0
	// is still reserved).
	Prompt SystemPromptProvider
	// Sections are the prompt sections contributed by configuration.
	Sections []Section
	// Runtime returns the runtime-context sections for a step (nil: none).
	Runtime func() []Section
	// Data is host data given to the prompt provider (date, environment, ...).
	Data  map[string]string
	Tools []Tool
	// Compactors act in the pre-step waterfall (pressure), on a
	// context-overflow failure, and on manual compaction, in order.
	Compactors []CompactionProvider
	Meter      Meter
	// Summarizer serves compaction providers' summarization calls; nil uses
	// Model on the conversation's route, or the model of SummaryModels
	// whose route names the call's provider and model.
	Summarizer Summarizer
	// SummaryModels are the models of the summarize routes the user
	// configured, besides the conversation's.
	SummaryModels []SummaryModel
	Logger        hclog.Logger
	// OnDelta receives streamed output as it arrives, synchronously on the
	// driver's goroutine (it delays the stream while it runs). Other
	// goroutines follow the stream with Session.SubscribeDeltas.
	OnDelta func(llm.Delta)
	// MaxSteps bounds the steps of one turn (default 64).
	MaxSteps int
	// MaxOverflowRetries bounds context-overflow recoveries per turn
	// (default 1; negative disables).
	MaxOverflowRetries int
	// MaxRetries bounds retries of rate-limited, server-error and
	// broken-stream attempts per step (default 2; negative disables).
	MaxRetries int
	// MaxRetryWait caps the wait before a retry, whatever the provider's
	// Retry-After says (default 30s; configuration key retry.maxWait). A
	// capped wait is recorded on the llm/retry event.
	MaxRetryWait time.Duration
	// StepBudget bounds the total time the providers' calls of one step may
	// take (prompt rendering, compaction, including its summarization); a
	// provider that runs past it fails like any other and the step goes
	// on. 0 means no bound beyond each call's own deadline.
	StepBudget time.Duration
	// ToolTimeout bounds one tool call (default DefaultToolTimeout;
	// negative: no bound). The loop enforces it even against a tool that
	// ignores its context: past the deadline the call gets an error result
	// (code TOOL_TIMEOUT) and the loop moves on; a tool still running is
	// abandoned (its goroutine is left to finish on its own and its result
	// is dropped). The result's text names the configuration key,
	// tools.timeout.
	ToolTimeout time.Duration
	// ParallelTools bounds how many of a step's tool calls run at once
	// (default 1: one after the other). Above 1, the calls start in model
	// order; all their tool/call events are logged before the first one
	// starts, and their tool/results in call order, whatever order they
	// finish in. Tools (and tool interceptors) must then be safe for
	// concurrent use and read the session through Snapshot, not Log.
	ParallelTools int
	// ToolTimeouts overrides ToolTimeout per tool name (key
	// tools.timeouts.NAME); a negative value means no bound.
	ToolTimeouts map[string]time.Duration
	// ModelInterceptors wrap each model call, the first outermost (it
	// runs first and sees the result last); see ModelInterceptor.
	ModelInterceptors []ModelInterceptor
	// ToolInterceptors wrap each call of an offered tool, the first
	// outermost, inside the call's timeout; see ToolInterceptor.
	ToolInterceptors []ToolInterceptor
	// CompactionBudget bounds each compaction, automatic or manual: its
	// summarize calls, their tokens and its wall clock (defaults
	// DefaultMaxSummarizeCalls, DefaultMaxSummarizeTokens,
	// DefaultCompactionWall).
	CompactionBudget CompactionBudget
	// TracerProvider receives the agent's OpenTelemetry spans: one
	// invoke_agent span per turn, with its steps, model attempts (chat),
	// tool calls (execute_tool), compactions and provider calls below it,
	// following the GenAI semantic conventions (docs/embedding.md lists
	// them). nil records no span. The host never uses the global provider.
	TracerProvider trace.TracerProvider
	// MeterProvider receives the agent's OpenTelemetry metrics (token
	// usage, model call duration, provider call duration and failures).
	// nil records none. It is unrelated to Meter, the token meter.
	MeterProvider metric.MeterProvider
	// AgentName names the agent in its telemetry (gen_ai.agent.name, and
	// the invoke_agent span's name); "" leaves it unnamed.
	AgentName string
}

// PreStep is the value of the agent/pre-step waterfall: the claimed batch
// (read-only) and the decision handlers may replace.
type PreStep struct {
	Turn, Step int64
	Claimed    []*surface.Message
	Decision   Decision
}

// Decision is a pre-step decision: enter the step with Messages (the
// complete batch appended after step/start), or reject the turn.
type Decision struct {
	Reject       bool
	Messages     []*surface.Message
	StartsSeries bool
}

// RequestError is the value of the agent/request-error waterfall.
type RequestError struct {
	Turn, Step int64
	Err        error
	Code       string
	Retry      bool
}

// Agent drives turns over one session. One Agent is one loop instance: its
// first request logs a resume header when the log already has one.
type Agent struct {
	cfg Config
	s   *Session
	log hclog.Logger
	tel *telemetry // nil without a TracerProvider or MeterProvider

	// PreStepChain is the agent/pre-step waterfall.
	PreStepChain *waterfall.Chain[PreStep]
	// RequestChain is the agent/request waterfall over the call config.
	RequestChain *waterfall.Chain[surface.CallConfig]
	// RequestErrorChain is the agent/request-error waterfall.
	RequestErrorChain *waterfall.Chain[RequestError]

	// mu guards what other goroutines may change while a turn runs: the
	// queue and the settings (cfg.Sections, cfg.Route, the tools). The
	// turn reads the settings once per step into cur.
	mu sync.Mutex
	// queue holds the messages accepted by Run and Inject and not yet
	// committed, in the order of the calls; see claim and requeue.
	queue []*surface.Message
	cur   settings // the current step's settings (the turn's goroutine only)

	built    int
	baseGen  uint64
	lastCtx  *RequestContext
	rc       runtimeContext
	overflow int
	retries  int        // retries in the current step
	at       attemptRef // the model attempt under way, for tagging deltas
	budget   time.Time  // when the current step's provider budget runs out
	toolsBy  map[string]Tool
	schemas  []jsontext.Value
	enc      llm.EncodeCache // the wire forms of the previous request's messages

	// meterFails are the meter's failures not yet recorded in the log:
	// they happen while a commit or a compaction is under way, where an
	// event of the loop's would interleave with them, so they wait for
	// the end of the compaction or step (reportMeterFailures).
	meterMu    sync.Mutex
	meterFails []error
}

// meterFailed notes a failure of the token meter, to be recorded as a
// plugin/failure event (reportMeterFailures).
func (a *Agent) meterFailed(err error) {
	if err == nil || errors.Is(err, ErrNotGranted) {
		return
	}
	a.meterMu.Lock()
	a.meterFails = append(a.meterFails, err)
	a.meterMu.Unlock()
}

// reportMeterFailures records the meter's failures noted so far as
// plugin/failure events, like every other provider's.
func (a *Agent) reportMeterFailures() {
	a.meterMu.Lock()
	errs := a.meterFails
	a.meterFails = nil
	a.meterMu.Unlock()
	for _, err := range errs {
		a.s.ReportFailure(Proposer{Kind: ByMeter, ID: a.cfg.Meter.ID()}, err)
	}
}

// RequestContext is the data of request/context.
type RequestContext struct {
	Provider           string `json:"provider"`
	Model              string `json:"model"`
	ContextWindow      int64  `json:"contextWindow,omitzero"`
	SystemPromptUpdate string `json:"systemPromptUpdate,omitzero"`
}

// attemptRef names a model attempt: its turn, step and number in the step.
type attemptRef struct {
	turn, step int64
	attempt    int
}

// NewAgent attaches a loop instance to a session. An interrupted turn left
// by a crash is repaired first. On a session a turn is running on, it
// returns an error matching ErrBusy.
func NewAgent(s *Session, cfg Config) (*Agent, error) {
	if cfg.Model == nil {
		return nil, errors.New("agent: no model configured")
	}
	if cfg.Route.Provider == "" || cfg.Route.Model == "" {
		return nil, errors.New("agent: the route needs a provider and a model")
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 64
	}
	if cfg.MaxOverflowRetries == 0 {
		cfg.MaxOverflowRetries = 1
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 2
	}
	if cfg.MaxRetryWait == 0 {
		cfg.MaxRetryWait = 30 * time.Second
	}
	cfg.CompactionBudget = cfg.CompactionBudget.withDefaults()
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.ToolTimeout == 0 {
		cfg.ToolTimeout = DefaultToolTimeout
	}
	a := &Agent{cfg: cfg, s: s, log: cfg.Logger, toolsBy: map[string]Tool{}, tel: newTelemetry(cfg, s.id),
		PreStepChain:      waterfall.New(waterfall.Config[PreStep]{Name: "agent/pre-step", Policy: waterfall.Skip}),
		RequestChain:      waterfall.New(waterfall.Config[surface.CallConfig]{Name: "agent/request", Policy: waterfall.Abort, Clone: cloneConfig}),
		RequestErrorChain: waterfall.New(waterfall.Config[RequestError]{Name: "agent/request-error", Policy: waterfall.Skip}),
	}
	if err := a.SetTools(cfg.Tools...); err != nil {
		return nil, err
	}
	// Attaching repairs the log and registers observers: not while another
	// agent drives the session.
	release, err := s.acquire("attach an agent")
	if err != nil {
		return nil, err
	}
	defer release()
	a.cur = a.settings()
	a.rc.plugin = a.promptID()
	if _, err := s.Repair(); err != nil {
		return nil, err
	}
	a.rc.restore(s.log)
	a.baseGen = s.log.ContentGeneration()
	a.lastCtx = latestContext(s.log)
	s.log.Observe(func(e surface.Event) { a.rc.observe(s.log, e) })
	if cfg.Meter != nil {
		if err := a.tel.observe(cfg.Meter, s.log.Events()); err != nil {
			a.log.Warn("token meter failed to fold the log", "meter", cfg.Meter.ID(), "error", err)
			a.meterFailed(err)
		}
		s.log.Observe(func(e surface.Event) {
			if err := a.tel.observe(cfg.Meter, []surface.Event{e}); err != nil {
				a.log.Warn("token meter failed to fold an event", "meter", cfg.Meter.ID(), "seq", e.Seq, "error", err)
				a.meterFailed(err)
			}
		})
	}
	for i, c := range cfg.Compactors {
		c := c
		_, err := a.PreStepChain.Add("compaction:"+c.ID(), func(ctx context.Context, in PreStep) (PreStep, error) {
			return in, a.compactWith(ctx, c, CompactionRequest{Reason: CompactPressure, Step: in.Step})
		}, waterfall.Priority(-1000+i))
		if err != nil {
			return nil, err
		}
	}
	if cfg.MaxRetries > 0 {
		if _, err := a.RequestErrorChain.Add("llm/retry", a.retryHandler, waterfall.Priority(1000)); err != nil {
			return nil, err
		}
	}
	if len(cfg.Compactors) > 0 && cfg.MaxOverflowRetries > 0 {
		_, err := a.RequestErrorChain.Add("compaction:overflow", a.overflowHandler, waterfall.Priority(-1000))
		if err != nil {
			return nil, err
		}
	}
	return a, nil
}

func (a *Agent) promptID() string {
	if a.cfg.Prompt != nil {
		return a.cfg.Prompt.ID()
	}
	return "system-prompt"
}

// cloneConfig gives each request handler its own copy of the config, so a
// handler cannot change a value another one returned.
func cloneConfig(c surface.CallConfig) surface.CallConfig {
	if c.Temperature != nil {
		t := *c.Temperature
		c.Temperature = &t
	}
	if c.MaxTokens != nil {
		m := *c.MaxTokens
		c.MaxTokens = &m
	}
	c.Stop = slices.Clone(c.Stop)
	return c
}

// settings is what a step reads of the agent's changeable configuration.
type settings struct {
	route    Route
	sections []Section
	schemas  []jsontext.Value
	toolsBy  map[string]Tool
}

// settings returns the current settings; the setters replace the slices and
// the map rather than change them, so the copy stays valid.
func (a *Agent) settings() settings {
	a.mu.Lock()
	defer a.mu.Unlock()
	return settings{route: a.cfg.Route, sections: a.cfg.Sections, schemas: a.schemas, toolsBy: a.toolsBy}
}

// SetTools replaces the tools offered from the next step on. A change of
// tools is a header change. It is safe to call from any goroutine, also
// while a turn runs.
func (a *Agent) SetTools(tools ...Tool) error {
	by := map[string]Tool{}
	var schemas []jsontext.Value
	for _, t := range tools {
		if _, dup := by[t.Name()]; dup {
			return fmt.Errorf("agent: two tools are named %q", t.Name())
		}
		schema := t.Schema()
		if !schema.IsValid() || schema.Kind() != '{' {
			return fmt.Errorf("agent: tool %q has an invalid schema", t.Name())
		}
		by[t.Name()] = t
		schemas = append(schemas, schema)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.toolsBy, a.schemas, a.cfg.Tools = by, schemas, slices.Clone(tools)
	return nil
}

// SetSections replaces the configured prompt sections from the next step on.
// It is safe to call from any goroutine, also while a turn runs.
func (a *Agent) SetSections(sections []Section) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cfg.Sections = slices.Clone(sections)
}

// SetRoute switches the model route from the next model request on. It is
// safe to call from any goroutine, also while a turn runs.
func (a *Agent) SetRoute(r Route) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cfg.Route = r
}

// Route is the agent's current route.
func (a *Agent) Route() Route {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cfg.Route
}

// Session returns the agent's session.
func (a *Agent) Session() *Session { return a.s }

func latestContext(l *surface.Log) *RequestContext {
	evs := l.Events()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == surface.TypeRequestContext {
			var rc RequestContext
			if err := unmarshal(evs[i].Data, &rc); err == nil {
				return &rc
			}
		}
	}
	return nil
}

// Inject queues a message for the next step of the running turn (or the
// first step of the next turn when none runs). It is safe to call from any
// goroutine, also while a turn runs: a turn that would have ended takes
// another step for a message injected before it decided to end.
//
// Queued messages enter the log in the order of the Inject and Run calls
// that queued them. A queued message is never dropped: it is committed by
// a step, or it stays queued (Pending counts it, TakePending hands it
// back) when the turn ends before a step committed it (docs/embedding.md,
// "Queued messages", lists each way a turn ends).
func (a *Agent) Inject(m *surface.Message) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.queue = append(a.queue, m)
}

// Pending reports how many queued messages (from Inject, or from a Run
// whose turn ended before committing them) no step has committed yet. It
// is safe to call from any goroutine; while a turn runs the answer may be
// stale by the time it is read.
func (a *Agent) Pending() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.queue)
}

// TakePending removes the queued messages no step has committed and
// returns them in queue order: they will not be sent unless queued again.
// It is safe to call from any goroutine; while a turn runs, a message the
// running step already claimed is not among them (it is committed by that
// step, or queued again if the step ends first).
func (a *Agent) TakePending() []*surface.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := a.queue
	a.queue = nil
	return q
}

// UserMessage returns a user message holding text. It is safe to call from
// any goroutine.
func (a *Agent) UserMessage(text string) *surface.Message {
	return &surface.Message{ID: a.s.NewID(), Role: surface.RoleUser, Source: surface.Source{Kind: "user"},
		Content: []surface.Block{surface.Text(text)}}
}

// TurnResult reports how a turn ended.
type TurnResult struct {
	Turn   int64
	Reason surface.EndReason
	Steps  int
}

// Run queues the given user messages after any already queued and runs
// turns while the queue holds work. It returns the last turn's result. The
// error is non-nil only when the session itself failed (a log write, an
// invariant), was busy or closed, or ctx was already done; model and tool
// failures end the turn with an error reason instead (see TurnResult.Err).
//
// A turn that ends without completing (failed, aborted, blocked) stops
// Run. A queued message its step did not commit stays queued, ahead of
// later ones: Pending counts it and TakePending hands it back; nothing
// queued is dropped.
//
// One turn runs on a session at a time: Run on a session whose turn is
// running (on this agent or another) returns at once with an error
// matching ErrBusy and queues nothing; on a closed session, one matching
// ErrClosed. On a context already done, Run returns its error, queues
// nothing and logs nothing. Cancel a running turn through the context
// given to its Run.
func (a *Agent) Run(ctx context.Context, msgs ...*surface.Message) (*TurnResult, error) {
	if err := ctx.Err(); err != nil {
		if cause := context.Cause(ctx); cause != err {
			return nil, fmt.Errorf("session %s: cannot run a turn: %w: %v", a.s.id, err, cause)
		}
		return nil, fmt.Errorf("session %s: cannot run a turn: %w", a.s.id, err)
	}
	release, err := a.s.acquire("run a turn")
	if err != nil {
		return nil, err
	}
	defer release()
	a.mu.Lock()
	a.queue = append(a.queue, msgs...)
	a.mu.Unlock()
	var last *TurnResult
	for last == nil || a.Pending() > 0 {
		if last != nil && ctx.Err() != nil {
			break
		}
		res, err := a.tracedTurn(ctx)
		if err != nil {
			return res, err
		}
		last = res
		if res.Err() != nil {
			break
		}
	}
	return last, nil
}

// claim takes every queued message for the step about to run.
func (a *Agent) claim() []*surface.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	claimed := a.queue
	a.queue = nil
	return claimed
}

// requeue puts back, ahead of whatever was queued since, the messages a
// step claimed and did not commit.
func (a *Agent) requeue(claimed []*surface.Message) {
	if len(claimed) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.queue = append(slices.Clone(claimed), a.queue...)
}
