package host

import (
	"context"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// Section is one keyed part of an assembly, in order.
type Section struct {
	Key  string `json:"key"`
	Text string `json:"text"`
}

// Route is the model route a step is prepared for.
type Route struct {
	Provider string
	Model    string
	// ContextWindow is the route's context capacity in tokens; 0 when unknown.
	ContextWindow int64
	// MaxTokens is the completion cap sent with each request; 0 leaves it
	// to the provider.
	MaxTokens int64
	// ReasoningEffort is the thinking setting sent with each request (see
	// llm.ReasoningEfforts); "" leaves it to the provider.
	ReasoningEffort string
	// OutputCap is the most output tokens the route's model accepts per
	// request; 0 takes the model's known limit (llm.KnownLimits), if any.
	// See MaxOutput.
	OutputCap int64
	// InHistory is true when the model reads the latest system message at
	// any position as the effective prompt, so prompt changes may be
	// appended to history instead of replacing node 0.
	InHistory bool
}

// MaxOutput returns the effective output cap of the route: OutputCap when
// set, else the known output limit of its model, 0 when neither is known.
// Every model call on the route (the loop's and plugins' summarize calls)
// has its max tokens clamped to it (see ClampOutput).
func (r Route) MaxOutput() int64 {
	if r.OutputCap > 0 {
		return r.OutputCap
	}
	l, _ := llm.KnownLimits(r.Model)
	return l.Output
}

// ClampOutput returns n clamped to the route's MaxOutput, and whether it
// was clamped (n above a known cap).
func (r Route) ClampOutput(n int64) (int64, bool) {
	if c := r.MaxOutput(); c > 0 && n > c {
		return c, true
	}
	return n, false
}

// Assembly is the input of a step's prompt: ordered prompt sections, the
// runtime-context sections, the tools offered, host data and the route.
type Assembly struct {
	Sections []Section
	Runtime  []Section
	Tools    []jsontext.Value
	Data     map[string]string
	Route    Route
}

// SystemPromptProvider renders the system prompt from an assembly. The same
// inputs must give the same bytes: an unchanged prompt proposes nothing.
type SystemPromptProvider interface {
	ID() string
	Render(ctx context.Context, a *Assembly) (string, error)
}

// Meter answers token measurements of a session's surface.
type Meter interface {
	ID() string
	// Observe folds newly committed events, in order.
	Observe(events []surface.Event) error
	// Measure returns the current measurement.
	Measure(ctx context.Context, header *surface.Header) (*Measurement, error)
}

// Measurement is a token snapshot of the surface (spec 12.2).
type Measurement struct {
	LogRevision        int64        `json:"logRevision"`
	Baseline           string       `json:"baseline"` // "none", "usage" or "estimated"
	BaselineTokens     int64        `json:"baselineTokens"`
	SurfaceDeltaTokens int64        `json:"surfaceDeltaTokens"`
	TotalTokens        int64        `json:"totalTokens"`
	SurfaceTokens      int64        `json:"surfaceTokens"`
	Nodes              []NodeTokens `json:"nodes"`
	Breakdown          Breakdown    `json:"breakdown"`
	EstimateError      *int64       `json:"estimateError,omitzero"`
	Tokenizer          string       `json:"tokenizer,omitzero"`
}

// NodeTokens is the price of one surface node.
type NodeTokens struct {
	Seq             int64 `json:"seq"`
	Tokens          int64 `json:"tokens"`
	HeuristicTokens int64 `json:"heuristicTokens"`
}

// Breakdown splits the surface price by category.
type Breakdown struct {
	System      int64 `json:"system"`
	User        int64 `json:"user"`
	Assistant   int64 `json:"assistant"`
	ToolResults int64 `json:"toolResults"`
	Tools       int64 `json:"tools"`
}

// CompactionReason says why a compaction provider is asked to act.
type CompactionReason string

// Compaction reasons.
const (
	CompactPressure CompactionReason = "pressure"
	CompactOverflow CompactionReason = "context-overflow"
	CompactManual   CompactionReason = "manual"
	// CompactRegion asks for the compaction of the surface nodes
	// CompactionRequest.Start..End (Agent.CompactRegion); only a provider
	// that is a RegionCompactor saying so is asked.
	CompactRegion CompactionReason = "region"
)

// CompactionRequest is what a compaction provider is asked to do.
type CompactionRequest struct {
	Reason CompactionReason
	// Turn is the open turn owning the bracket; 0 for manual compaction.
	Turn int64
	// Step is the step about to start for pressure compaction (which runs
	// before the step's step/start); 0 for the others, which read the log's
	// open step.
	Step int64
	// Route is the conversation's route (the summarization default).
	Route Route
	// Start and End (CompactRegion only) are the first and last seq of the
	// current surface nodes to compact.
	Start, End int64
}

// CompactionProvider proposes surface replacements that shrink the surface.
// It reads the session through the view and returns its proposals; the host
// admits them all or nothing. Returning no proposals means "nothing to do".
type CompactionProvider interface {
	ID() string
	Compact(ctx context.Context, view *View, req CompactionRequest) ([]surface.Proposal, error)
}

// Summarizer is the model capability the host grants compaction providers.
type Summarizer interface {
	Summarize(ctx context.Context, req SummaryRequest) (*SummaryResult, error)
}

// SummaryRequest is a summarization call: the input messages (node 0's
// system message first when present, then the span) plus the instruction.
type SummaryRequest struct {
	Provider, Model string
	Messages        []*surface.Message
	Tools           []jsontext.Value
	MaxTokens       int64
	// Asked is what the proposer asked for when the host sent something
	// else (the route's provider and model, its output cap); nil when the
	// request is as asked. The plugin/call record keeps it.
	Asked *CallAsked
}

// CallAsked is the call config a proposer asked for in a summarize call
// the host overrode: a plugin does not choose the route or exceed its cap.
type CallAsked struct {
	Provider  string `json:"provider,omitzero"`
	Model     string `json:"model,omitzero"`
	MaxTokens int64  `json:"maxTokens,omitzero"`
}

// SummaryResult is the summarizer's output.
type SummaryResult struct {
	Content      []surface.Block
	Usage        *surface.Usage
	FinishReason string
	Provider     string
	Model        string
}
