package abi

import "strconv"

// Version of the ABI. The guest's weir_abi_version export must return Major;
// Minor grows with additive changes and is exchanged in init and describe.
// Minor 1 added Measurement.estimate_error and tokenizer and the user,
// assistant and tool-result split of Breakdown. Minor 2 added
// Description.events, the ignorable event types a plugin declares, and the
// cost work: Description.render_on_change and warm_state, state keys on
// meter requests (ObserveRequest.state_key, next_state_key, state_optional,
// ObserveResult.state_kept, MeasureRequest.state_key, totals_only),
// StatusStateUnknown and CompactionResult.idle_below_tokens, the parts of
// an observed event beside its JSON (Event.data, surface_op,
// replace_start_seq, replace_end_seq) and the totals-only measurement
// answered with a fold (ObserveRequest.measure_totals,
// ObserveResult.totals); and compaction.region (method 35, declared in
// Description.methods, with CompactionRequest.region_start_seq and
// region_end_seq) and the event import.
const (
	Major uint32 = 1
	Minor uint32 = 2
)

// Names of the guest exports.
const (
	ExportVersion    = "weir_abi_version" // () -> i32
	ExportInput      = "weir_input"       // (size i32) -> i32 pointer
	ExportCall       = "weir_call"        // (method i32, len i32) -> i64 packed
	ExportMemory     = "memory"
	ExportInitialize = "_initialize" // wasip1 reactor initialisation
)

// ImportModule is the namespace of the host imports.
const ImportModule = "weir"

// Names of the host imports in ImportModule.
const (
	ImportSurfaceNodes = "surface_nodes" // (buf, limit i32) -> i32
	ImportMessage      = "message"       // (seq i64, buf, limit i32) -> i32
	ImportGenerations  = "generations"   // (buf, limit i32) -> i32
	ImportHeader       = "header"        // (buf, limit i32) -> i32
	ImportMeasure      = "measure"       // (buf, limit i32) -> i32
	ImportSummarize    = "summarize"     // (req, req_len, buf, limit i32) -> i32
	ImportCountTokens  = "count_tokens"  // (name, name_len, text, text_len i32) -> i64
	ImportLastError    = "last_error"    // (buf, limit i32) -> i32
	ImportEvent        = "event"         // (seq i64, buf, limit i32) -> i32; minor 2
)

// Imports lists every host import name, in a fixed order.
var Imports = []string{
	ImportSurfaceNodes, ImportMessage, ImportGenerations, ImportHeader,
	ImportMeasure, ImportSummarize, ImportCountTokens, ImportLastError,
	ImportEvent,
}

// Host import status codes. A host import returns a non-negative length on
// success, or one of these.
const (
	HostNotGranted  int32 = -1 // the import is not available to this call
	HostNotFound    int32 = -2 // the requested item does not exist
	HostBadArgument int32 = -3 // a pointer/length was out of bounds or a request did not decode
	HostFailed      int32 = -4 // the host failed; last_error has the reason
	HostCancelled   int32 = -5 // the call's deadline passed or it was cancelled
)

// HostStatusText names a host import status code.
func HostStatusText(code int64) string {
	switch int32(code) {
	case HostNotGranted:
		return "not granted"
	case HostNotFound:
		return "not found"
	case HostBadArgument:
		return "bad argument"
	case HostFailed:
		return "host failed"
	case HostCancelled:
		return "cancelled"
	}
	return "status " + strconv.FormatInt(code, 10)
}

// Kind is a provider kind.
type Kind uint32

// Provider kinds.
const (
	KindUnspecified  Kind = 0
	KindSystemPrompt Kind = 1
	KindCompaction   Kind = 2
	KindTokenMeter   Kind = 3
)

// Kinds lists the provider kinds, in order.
var Kinds = []Kind{KindSystemPrompt, KindCompaction, KindTokenMeter}

func (k Kind) String() string {
	switch k {
	case KindUnspecified:
		return "unspecified"
	case KindSystemPrompt:
		return "system-prompt"
	case KindCompaction:
		return "compaction"
	case KindTokenMeter:
		return "token-meter"
	}
	return "kind(" + strconv.FormatUint(uint64(k), 10) + ")"
}

// Method is a dispatcher method number. Numbers 1-15 are lifecycle methods;
// each provider kind k owns the block 16*k .. 16*k+15.
type Method uint32

// Methods.
const (
	MethodInit               Method = 1
	MethodDescribe           Method = 2
	MethodPromptRender       Method = 16
	MethodCompactionPreStep  Method = 32
	MethodCompactionManual   Method = 33
	MethodCompactionOverflow Method = 34
	// MethodCompactionRegion (minor 2) is optional: the host calls it only
	// on a plugin whose Description.Methods lists it.
	MethodCompactionRegion Method = 35
	MethodMeterObserve     Method = 48
	MethodMeterMeasure     Method = 49
)

// Methods lists the defined methods, in numeric order.
var Methods = []Method{
	MethodInit, MethodDescribe, MethodPromptRender,
	MethodCompactionPreStep, MethodCompactionManual, MethodCompactionOverflow,
	MethodCompactionRegion, MethodMeterObserve, MethodMeterMeasure,
}

func (m Method) String() string {
	switch m {
	case MethodInit:
		return "init"
	case MethodDescribe:
		return "describe"
	case MethodPromptRender:
		return "prompt.render"
	case MethodCompactionPreStep:
		return "compaction.prestep"
	case MethodCompactionManual:
		return "compaction.manual"
	case MethodCompactionOverflow:
		return "compaction.overflow"
	case MethodCompactionRegion:
		return "compaction.region"
	case MethodMeterObserve:
		return "meter.observe"
	case MethodMeterMeasure:
		return "meter.measure"
	}
	return "method(" + strconv.FormatUint(uint64(m), 10) + ")"
}

// Kind returns the provider kind whose block holds m, or KindUnspecified for
// lifecycle methods.
func (m Method) Kind() Kind {
	if m < 16 {
		return KindUnspecified
	}
	return Kind(m / 16)
}

// Status is the outcome carried in Response.Status.
type Status uint32

// Statuses.
const (
	StatusOK          Status = 0
	StatusPluginError Status = 1
	StatusBadRequest  Status = 2
	StatusPanic       Status = 3
	StatusUnsupported Status = 4
	// StatusStateUnknown (minor 2): the request named a state by key alone
	// and the instance does not hold it.
	StatusStateUnknown Status = 5
)

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusPluginError:
		return "plugin error"
	case StatusBadRequest:
		return "bad request"
	case StatusPanic:
		return "panic"
	case StatusUnsupported:
		return "unsupported"
	case StatusStateUnknown:
		return "state unknown"
	}
	return "status(" + strconv.FormatUint(uint64(s), 10) + ")"
}

// BaselineKind is the kind of a measurement baseline.
type BaselineKind uint32

// Baseline kinds.
const (
	BaselineNone      BaselineKind = 0
	BaselineEstimated BaselineKind = 1
	BaselineUsage     BaselineKind = 2
)

func (k BaselineKind) String() string {
	switch k {
	case BaselineNone:
		return "none"
	case BaselineEstimated:
		return "estimated"
	case BaselineUsage:
		return "usage"
	}
	return "baseline(" + strconv.FormatUint(uint64(k), 10) + ")"
}

// Granted reports whether a call of the given provider kind may use the host
// import named imp. Lifecycle calls (KindUnspecified) get last_error only.
func Granted(kind Kind, imp string) bool {
	if imp == ImportLastError {
		return true
	}
	switch kind {
	case KindSystemPrompt:
		return imp == ImportCountTokens
	case KindCompaction:
		switch imp {
		case ImportSurfaceNodes, ImportMessage, ImportEvent, ImportGenerations, ImportHeader,
			ImportMeasure, ImportSummarize, ImportCountTokens:
			return true
		}
	case KindTokenMeter:
		switch imp {
		case ImportSurfaceNodes, ImportMessage, ImportEvent, ImportGenerations, ImportHeader,
			ImportCountTokens:
			return true
		}
	}
	return false
}

// MaxProposals is the most proposals one CompactionResult may carry.
const MaxProposals = 1024

// PackOutput packs an output frame location into the weir_call result.
func PackOutput(ptr, n uint32) uint64 { return uint64(ptr)<<32 | uint64(n) }

// UnpackOutput splits a weir_call result into pointer and length.
func UnpackOutput(v uint64) (ptr, n uint32) { return uint32(v >> 32), uint32(v) }
