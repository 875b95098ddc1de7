package abi

// Go forms of the messages in weir.proto. Field comments live in the .proto.
// Optional fields carry a Has flag: absent and empty differ for them.

// Response is the output frame of every dispatcher call.
type Response struct {
	Status Status
	Error  string
	Result []byte
}

// Route names a model.
type Route struct {
	Provider string
	Model    string
}

// KeyValue is one entry of ordered string data.
type KeyValue struct {
	Key   string
	Value string
}

// IntentKind says how a proposed event enters the surface.
type IntentKind uint8

// Surface intents.
const (
	IntentNone    IntentKind = iota // log-only: no surfaceOp
	IntentAppend                    // surfaceOp "append"
	IntentReplace                   // surfaceOp replace StartSeq..EndSeq
)

func (k IntentKind) String() string {
	switch k {
	case IntentNone:
		return "none"
	case IntentAppend:
		return "append"
	case IntentReplace:
		return "replace"
	}
	return "intent(?)"
}

// Intent is the surface intent of a proposal. StartSeq and EndSeq are
// meaningful for IntentReplace only.
type Intent struct {
	Kind     IntentKind
	StartSeq int64
	EndSeq   int64
}

// Proposal is an event a plugin asks the host to append.
type Proposal struct {
	Type   string
	Data   []byte // JSON
	Intent Intent
	// SourceEventSeqs is meaningful when HasSourceEventSeqs is set; a present
	// but empty list is representable (and rejected by the host's admission).
	SourceEventSeqs    []int64
	HasSourceEventSeqs bool
	Ignorable          bool
}

// InitRequest is the input of method init.
type InitRequest struct {
	Plugin   string
	Config   []byte
	AbiMajor uint32
	AbiMinor uint32
}

// InitResult is the result of method init.
type InitResult struct{}

// DescribeRequest is the input of method describe.
type DescribeRequest struct{}

// Description is the result of method describe.
type Description struct {
	Name     string
	Version  string
	Kinds    []Kind
	AbiMinor uint32
	Sdk      string
	// Events are the ignorable event types the plugin may propose besides
	// its kind's own (minor 2); absent for an older guest.
	Events []string
	// RenderOnChange (minor 2): prompt.render is a pure function of its
	// request, so the host may reuse the last prompt for the same request.
	RenderOnChange bool
	// WarmState (minor 2): the meter understands state keys.
	WarmState bool
	// Methods (minor 2) are the optional methods the plugin implements
	// (MethodCompactionRegion); absent for an older guest.
	Methods []Method
}

// Provides reports whether the description lists kind.
func (d *Description) Provides(kind Kind) bool {
	for _, k := range d.Kinds {
		if k == kind {
			return true
		}
	}
	return false
}

// Implements reports whether the description lists the optional method m.
func (d *Description) Implements(m Method) bool {
	for _, x := range d.Methods {
		if x == m {
			return true
		}
	}
	return false
}

// Section is one keyed section of a prompt assembly.
type Section struct {
	Key  string
	Text string
}

// RenderRequest is the input of prompt.render.
type RenderRequest struct {
	Sections []Section
	Route    Route
	HostData []KeyValue
}

// RenderResult is the result of prompt.render.
type RenderResult struct {
	Prompt string
}

// Limits are the capacity figures of the routed model.
type Limits struct {
	ContextWindow    int64
	DefaultMaxTokens int64
}

// Failure is a request error being recovered from.
type Failure struct {
	Code    string
	Message string
}

// CompactionRequest is the input of the three compaction methods.
type CompactionRequest struct {
	Turn      int64
	Step      int64
	Route     Route
	Limits    Limits
	CommandID string
	Failure   Failure
	State     []byte
	// RegionStartSeq and RegionEndSeq (minor 2, compaction.region only)
	// are the first and last seq of the surface nodes to compact.
	RegionStartSeq int64
	RegionEndSeq   int64
}

// CompactionResult is the result of the three compaction methods.
type CompactionResult struct {
	Proposals []Proposal
	State     []byte // meaningful when HasState
	HasState  bool
	// IdleBelowTokens (minor 2, prestep only), meaningful when HasIdleBelowTokens:
	// plugin has nothing to do before a step while the measured total stays
	// below it and the header, route, limits and state are those of this call.
	IdleBelowTokens    int64
	HasIdleBelowTokens bool
}

// EventData is the answer of the event import (minor 2): one committed
// event's type and its data member as stored.
type EventData struct {
	Seq  int64
	Type string
	Data []byte
}

// Event is one committed event given to a token meter.
type Event struct {
	Seq  int64
	Type string
	JSON []byte
	// Data, SurfaceOp, ReplaceStartSeq and ReplaceEndSeq (minor 2) are
	// parts of JSON the host sends along when HasData: the bytes of the
	// event's data member and its surface op (an IntentKind: none, append,
	// replace ReplaceStartSeq..ReplaceEndSeq). A guest that needs no more
	// reads them instead of parsing JSON.
	Data            []byte
	HasData         bool
	SurfaceOp       uint32
	ReplaceStartSeq int64
	ReplaceEndSeq   int64
}

// ObserveRequest is the input of meter.observe.
type ObserveRequest struct {
	State  []byte
	Events []Event
	// StateKey (minor 2), when not 0, names the state the events fold into;
	// State is then empty or that state's blob. NextStateKey names the
	// state the call makes. StateOptional lets the result keep the state.
	StateKey      int64
	NextStateKey  int64
	StateOptional bool
	// MeasureTotals (minor 2) asks for the totals-only measurement of the
	// new state in ObserveResult.Totals.
	MeasureTotals bool
}

// ObserveResult is the result of meter.observe.
type ObserveResult struct {
	State []byte
	// StateKept (minor 2): the plugin kept the new state under the
	// request's NextStateKey and sent no blob.
	StateKept bool
	// Totals (minor 2), when HasTotals, is the measurement the request's
	// MeasureTotals asked for.
	Totals    Measurement
	HasTotals bool
}

// MeasureRequest is the input of meter.measure.
type MeasureRequest struct {
	State             []byte
	HeaderOverride    []byte // meaningful when HasHeaderOverride
	HasHeaderOverride bool
	StateKey          int64 // minor 2: as in ObserveRequest
	TotalsOnly        bool  // minor 2: the nodes may be left out
}

// Baseline is the baseline of a measurement.
type Baseline struct {
	Kind   BaselineKind
	Tokens int64
}

// NodeTokens is the price of one surface node.
type NodeTokens struct {
	Seq             int64
	Tokens          int64
	HeuristicTokens int64
}

// Breakdown splits a measurement by category. MessageTokens is the sum of
// UserTokens, AssistantTokens and ToolResultTokens when the meter sends
// that split (minor 1); a meter that does not leaves the three at 0.
type Breakdown struct {
	SystemTokens     int64
	ToolsTokens      int64
	MessageTokens    int64
	UserTokens       int64
	AssistantTokens  int64
	ToolResultTokens int64
}

// HasSplit reports whether the message split is usable: it adds up to
// MessageTokens. A meter without the split sends zeros, which add up only
// when there are no message tokens to split.
func (b *Breakdown) HasSplit() bool {
	return b.UserTokens+b.AssistantTokens+b.ToolResultTokens == b.MessageTokens
}

// Measurement is a token meter snapshot (behaviour spec 12.2).
type Measurement struct {
	LogRevision        int64
	Baseline           Baseline
	SurfaceDeltaTokens int64
	TotalTokens        int64
	SurfaceTokens      int64
	Nodes              []NodeTokens
	Breakdown          Breakdown
	// EstimateError is the meter's estimate of the last call with usage
	// minus that usage's total; meaningful when HasEstimateError (minor 1).
	EstimateError    int64
	HasEstimateError bool
	// Tokenizer names the tokenizer that priced Nodes[i].Tokens (minor 1).
	Tokenizer string
}

// Node describes one surface node.
type Node struct {
	Seq         int64
	Type        string
	Role        string
	Size        int64
	ContentHash []byte
	Tokens      int64 // meaningful when HasTokens
	HasTokens   bool
}

// NodeList is the payload of the surface_nodes import.
type NodeList struct {
	Nodes []Node
}

// Generations is the payload of the generations import.
type Generations struct {
	Replace   int64
	Content   int64
	LogLength int64
}

// SummarizeRequest is the request of the summarize import.
type SummarizeRequest struct {
	Messages    [][]byte
	Tools       []byte
	Instruction string
	Route       Route
	MaxTokens   int64
}

// SummarizeResult is the payload of the summarize import.
type SummarizeResult struct {
	Text          []string
	RawOutput     []byte
	Usage         []byte
	Route         Route
	FinishReason  string
	LLMStreamCall bool
}
