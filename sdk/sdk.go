package sdk

import "github.com/weirhost/weir/sdk/abi"

// Version identifies this SDK in Description.Sdk.
const Version = "weir-go-sdk/1.0"

// Request and result types, shared with the host through package abi.
type (
	RenderRequest     = abi.RenderRequest
	Section           = abi.Section
	Route             = abi.Route
	KeyValue          = abi.KeyValue
	CompactionRequest = abi.CompactionRequest
	CompactionResult  = abi.CompactionResult
	Proposal          = abi.Proposal
	Intent            = abi.Intent
	ObserveRequest    = abi.ObserveRequest
	Event             = abi.Event
	EventData         = abi.EventData
	MeasureRequest    = abi.MeasureRequest
	Measurement       = abi.Measurement
	NodeTokens        = abi.NodeTokens
	Node              = abi.Node
	Generations       = abi.Generations
	SummarizeRequest  = abi.SummarizeRequest
	SummarizeResult   = abi.SummarizeResult
)

// SystemPromptProvider renders the system prompt from the host's assembly.
type SystemPromptProvider interface {
	RenderPrompt(h *Host, req *RenderRequest) (string, error)
}

// CompactionProvider proposes compactions. PreStep runs before each step,
// Manual when a user asks for compaction, Overflow when the model refused a
// request as too long. A nil result proposes nothing and keeps the state.
type CompactionProvider interface {
	PreStep(h *Host, req *CompactionRequest) (*CompactionResult, error)
	Manual(h *Host, req *CompactionRequest) (*CompactionResult, error)
	Overflow(h *Host, req *CompactionRequest) (*CompactionResult, error)
}

// RegionCompactor is a CompactionProvider that also compacts a range of
// the surface on request (compaction.region, ABI minor 2): req carries
// RegionStartSeq and RegionEndSeq, the first and last seq of the current
// surface nodes to compact. A registered compaction provider that
// implements it is declared in describe (Description.Methods); the host
// never asks one that does not.
type RegionCompactor interface {
	CompactionProvider
	Region(h *Host, req *CompactionRequest) (*CompactionResult, error)
}

// TokenMeter counts the session's tokens. Observe folds newly committed
// events into the state blob and returns the new blob; Measure answers from
// the state blob.
type TokenMeter interface {
	Observe(h *Host, req *ObserveRequest) (state []byte, err error)
	Measure(h *Host, req *MeasureRequest) (*Measurement, error)
}

// Plugin is what a plugin registers. At least one provider must be set.
type Plugin struct {
	Name    string
	Version string
	// Configure receives the plugin configuration (JSON, possibly empty) once
	// per instance, before any provider call. An error fails the load.
	Configure func(config []byte) error
	// Events declares the ignorable event types the plugin may propose
	// besides its kind's own (a compaction plugin's compaction/*): the host
	// refuses a proposal of any type not declared, and a declared type
	// only as an ignorable, log-only event.
	Events []string
	// RenderOnChange promises that RenderPrompt is a pure function of its
	// request and the configuration: the host then calls it only when the
	// request changed, and reuses the last prompt otherwise (ABI minor 2).
	RenderOnChange bool
	// WarmState says the meter understands state keys (ABI minor 2): a
	// request may name its state by ObserveRequest.StateKey or
	// MeasureRequest.StateKey alone, which the meter answers from a state
	// it kept in memory (under an earlier NextStateKey) or with
	// ErrStateUnknown; with StateOptional set, Observe may return
	// ErrStateKept instead of the blob. See docs/abi.md.
	WarmState bool
	// ABIMinor, when set, is the ABI minor the plugin declares in describe
	// instead of the SDK's (abi.Minor), for a plugin written to the rules
	// of an older minor (docs/abi.md, section 9.2). Such a plugin must use
	// only what its minor has.
	ABIMinor *uint32

	SystemPrompt SystemPromptProvider
	Compaction   CompactionProvider
	Meter        TokenMeter
}

func (p *Plugin) kinds() []abi.Kind {
	var ks []abi.Kind
	if p.SystemPrompt != nil {
		ks = append(ks, abi.KindSystemPrompt)
	}
	if p.Compaction != nil {
		ks = append(ks, abi.KindCompaction)
	}
	if p.Meter != nil {
		ks = append(ks, abi.KindTokenMeter)
	}
	return ks
}

// methods lists the optional methods the plugin implements.
func (p *Plugin) methods() []abi.Method {
	if _, ok := p.Compaction.(RegionCompactor); ok {
		return []abi.Method{abi.MethodCompactionRegion}
	}
	return nil
}

var registered *dispatcher

// Register installs a plugin. Call it from an init function of the main
// package, once per plugin the module holds: most modules hold one.
//
// A module may hold several plugins under distinct names (Weir's
// first-party module holds its three, so that the host compiles one
// module instead of three). The host's init call then selects the plugin
// whose Name is the name the host loads it under, and answers describe
// only after that init (docs/abi.md, section 2). With one plugin nothing
// changes: it serves under any name, and describe may come first.
//
// Register panics when no provider is set, when a name is registered
// twice, and when a module of several plugins has one without a name.
func Register(p Plugin) {
	if len(p.kinds()) == 0 {
		panic("sdk: Register: plugin " + p.Name + " sets no provider")
	}
	if registered == nil {
		registered = newDispatcher(p, wasmHost())
		return
	}
	registered.add(p)
}
