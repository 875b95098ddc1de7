package surface

import "slices"

// MaxSeq is the largest seq a log may hold: the largest integer a JSON number
// carries without loss in every common reader (2^53-1).
const MaxSeq = 1<<53 - 1

// Event is one entry of a session log.
//
// Data is the type-specific payload as raw JSON bytes (always an object). It
// is kept exactly as written, so unknown fields and unknown content blocks
// survive every round trip. Callers must treat an Event's slices as
// read-only: the log shares them.
type Event struct {
	Type string
	Seq  int64
	Time int64 // Unix epoch milliseconds
	Data []byte

	// Op is how a surface event entered the surface; OpNone on log-only events.
	Op Op
	// Sources is sourceEventSeqs. nil means absent; a non-nil empty slice is
	// the (invalid) empty array.
	Sources []int64
	// Ignorable marks an informational event a reader may skip when it does
	// not know its type.
	Ignorable bool

	verbatim []byte // original line of an unknown ignorable event
	// checked marks data a Decoder already validated as lossless JSON.
	checked bool
	// pre is the payload a preparing Decoder already parsed; admission uses
	// it instead of parsing again and clears it.
	pre *prepared
}

// OpKind distinguishes the forms of surfaceOp.
type OpKind uint8

// The surfaceOp forms. OpNone is the absence of the key.
const (
	OpNone OpKind = iota
	OpAppend
	OpReplace
)

// Op is a surfaceOp: "append", or a replace of the inclusive positional range
// from the node holding Start to the node holding End.
type Op struct {
	Kind       OpKind
	Start, End int64
}

// Append is the append surfaceOp.
var Append = Op{Kind: OpAppend}

// Replace returns the replace surfaceOp for the range start..end.
func Replace(start, end int64) Op { return Op{Kind: OpReplace, Start: start, End: end} }

// Clone returns a deep copy of e.
func (e Event) Clone() Event {
	e.Data = slices.Clone(e.Data)
	e.verbatim = slices.Clone(e.verbatim)
	if e.Sources != nil {
		e.Sources = slices.Clone(e.Sources)
	}
	return e
}

// Event types of the v3 vocabulary used by Weir.
const (
	TypeSystemMessage    = "system/message"
	TypeUserMessage      = "user/message"
	TypeAssistantMessage = "assistant/message"
	TypeToolResult       = "tool/result"

	TypeTurnStart        = "turn/start"
	TypeTurnEnd          = "turn/end"
	TypeStepStart        = "step/start"
	TypeStepEnd          = "step/end"
	TypeAssistantAttempt = "assistant/attempt"
	TypeToolCall         = "tool/call"
	TypeRequestHeader    = "request/header"
	TypeRequestContext   = "request/context"
	TypeEndSeed          = "session/end-seed"

	TypeCompactionStart   = "compaction/start"
	TypeCompactionSummary = "compaction/summary"
	TypeCompactionEnd     = "compaction/end"
	TypeCompactionPrune   = "compaction/prune"
	TypeLLMRetry          = "llm/retry"

	// TypePluginFailure records a provider that failed or whose proposal
	// was rejected. Weir writes it with ignorable: true, since it is purely
	// informational.
	TypePluginFailure = "plugin/failure"
)

// Kind is the classification of an event type.
type Kind uint8

// Kinds of event types.
const (
	KindUnknown Kind = iota // outside the known vocabulary
	KindLogOnly             // known, never on the surface
	KindSystem
	KindUser
	KindAssistant
	KindToolResult
)

// IsSurface reports whether events of kind k are surface-eligible.
func (k Kind) IsSurface() bool { return k >= KindSystem }

var kinds = map[string]Kind{
	TypeSystemMessage:    KindSystem,
	TypeUserMessage:      KindUser,
	TypeAssistantMessage: KindAssistant,
	TypeToolResult:       KindToolResult,
}

func init() {
	for _, t := range []string{
		TypeTurnStart, TypeTurnEnd, TypeStepStart, TypeStepEnd, TypeAssistantAttempt,
		TypeToolCall, TypeRequestHeader, TypeRequestContext, TypeEndSeed,
		TypeCompactionStart, TypeCompactionSummary, TypeCompactionEnd, TypeCompactionPrune,
		TypeLLMRetry, TypePluginFailure,
	} {
		kinds[t] = KindLogOnly
	}
}

// typeName returns b as a string, without allocating for known types.
func typeName(b []byte) string {
	if s, ok := names[string(b)]; ok {
		return s
	}
	return string(b)
}

// names interns the known type names.
var names = map[string]string{}

func init() {
	for t := range kinds {
		names[t] = t
	}
}

// KindOf classifies an event type.
func KindOf(typ string) Kind { return kinds[typ] }

// Known reports whether typ belongs to the vocabulary this build implements.
func Known(typ string) bool { return kinds[typ] != KindUnknown }
