package host

import (
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/surface"
)

// Typed forms of the core events' data. Payload decodes an event into the
// one of its type; the loop writes these same types. Reading them ignores
// members a type does not name, so a log written by a newer host still
// decodes.

// StepRef is the data of turn/start (Turn only), step/start and step/end.
type StepRef struct {
	Turn int64 `json:"turn"`
	Step int64 `json:"step,omitzero"`
}

// ToolCallData is the data of tool/call: the loop is about to run the call
// (its result follows as a tool/result naming CallID).
type ToolCallData struct {
	Turn      int64  `json:"turn"`
	Step      int64  `json:"step"`
	CallID    string `json:"callId"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Attempt is the data of assistant/attempt: a model attempt that produced
// no surface message (it failed before any content); Stream is its
// recorded stream.
type Attempt struct {
	Turn   int64          `json:"turn"`
	Step   int64          `json:"step"`
	Stream jsontext.Value `json:"stream"`
}

// Retry is the data of llm/retry: the failed attempt's error and the wait
// before attempt Retry+1 of the step.
type Retry struct {
	Turn    int64             `json:"turn"`
	Step    int64             `json:"step"`
	Retry   int               `json:"retry"`
	Failure surface.CallError `json:"failure"`
	WaitMs  int64             `json:"waitMs"`
	// RetryAfterMs is what the provider asked for, recorded only when the
	// host waits less (its cap, RetryWaitKey); Note says so in words.
	RetryAfterMs int64  `json:"retryAfterMs,omitzero"`
	Note         string `json:"note,omitzero"`
}

// CompactionStart is the data of compaction/start. Turn is the turn the
// compaction runs in, nil (null) for a manual compaction between turns.
type CompactionStart struct {
	ID              string `json:"compactionId"`
	SourceCommandID string `json:"sourceCommandId,omitzero"`
	Turn            *int64 `json:"turn"`
}

// SeqRange is an inclusive range of seqs.
type SeqRange struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// CompactionSummary is the data of compaction/summary: the summary of the
// nodes ShadowedSeqs (ShadowedRange is their first and last), which the
// checkpoint right after it replaces.
type CompactionSummary struct {
	ID              string `json:"compactionId"`
	SourceCommandID string `json:"sourceCommandId,omitzero"`
	// Summary is the summary text: a JSON string, or an array of text
	// blocks (both are written; SummaryText reads either).
	Summary            jsontext.Value  `json:"summary"`
	RawOutput          []surface.Block `json:"rawOutput,omitzero"`
	LLMStreamCall      bool            `json:"llmStreamCall,omitzero"`
	ShadowedRange      SeqRange        `json:"shadowedRange"`
	ShadowedSeqs       []int64         `json:"shadowedSeqs"`
	ShadowedTokenCount int64           `json:"shadowedTokenCount"`
	Provider           string          `json:"provider,omitzero"`
	Model              string          `json:"model,omitzero"`
	MaxTokens          int64           `json:"maxTokens,omitzero"`
	Usage              *surface.Usage  `json:"usage,omitzero"`
}

// SummaryText is the summary's text, whichever form it was written in.
func (c *CompactionSummary) SummaryText() string {
	var s string
	if json.Unmarshal(c.Summary, &s) == nil {
		return s
	}
	var blocks []surface.Block
	if json.Unmarshal(c.Summary, &blocks) == nil {
		return surface.TextOf(blocks)
	}
	return ""
}

// CompactionEnd is the data of compaction/end. Error is set when the
// compaction failed after its start (the surface is then unchanged).
type CompactionEnd struct {
	ID              string `json:"compactionId"`
	SourceCommandID string `json:"sourceCommandId,omitzero"`
	Turn            *int64 `json:"turn"`
	Error           string `json:"error,omitzero"`
	TokensBefore    int64  `json:"tokensBefore,omitzero"`
	TokensAfter     int64  `json:"tokensAfter,omitzero"`
	Warning         string `json:"warning,omitzero"`
}

// CompactionPrune is the data of compaction/prune: the tool results about
// to be shortened by the rewrites after it.
type CompactionPrune struct {
	ShadowedRange      SeqRange `json:"shadowedRange"`
	ShadowedSeqs       []int64  `json:"shadowedSeqs,omitzero"`
	ShadowedTokenCount int64    `json:"shadowedTokenCount"`
	Bytes              int64    `json:"bytes,omitzero"`
}

// EndSeed is the data of session/end-seed: the seeded prefix of a session
// ends here. Inherited marks an end-seed copied from an ancestor session.
type EndSeed struct {
	Inherited bool `json:"inherited,omitzero"`
}

// Payload decodes the data of e into the typed form of its type and
// returns a pointer to it:
//
//	turn/start, step/start, step/end             *StepRef
//	turn/end                                     *surface.TurnEnd
//	system/message, assistant/message,
//	tool/result                                  *surface.StepMessage
//	user/message                                 *surface.Message
//	assistant/attempt                            *Attempt
//	tool/call                                    *ToolCallData
//	request/header                               *surface.HeaderEvent
//	request/context                              *RequestContext
//	llm/retry                                    *Retry
//	compaction/start, summary, end, prune        *CompactionStart, *CompactionSummary, *CompactionEnd, *CompactionPrune
//	plugin/failure, plugin/call                  *PluginFailure, *PluginCall
//	session/end-seed                             *EndSeed
//
// Any other type (one a plugin declared) is returned as its raw data, a
// jsontext.Value. The error says which event did not decode.
func Payload(e surface.Event) (any, error) {
	var v any
	switch e.Type {
	case surface.TypeTurnStart, surface.TypeStepStart, surface.TypeStepEnd:
		v = new(StepRef)
	case surface.TypeTurnEnd:
		v = new(surface.TurnEnd)
	case surface.TypeSystemMessage, surface.TypeAssistantMessage, surface.TypeToolResult:
		v = new(surface.StepMessage)
	case surface.TypeUserMessage:
		v = new(surface.Message)
	case surface.TypeAssistantAttempt:
		v = new(Attempt)
	case surface.TypeToolCall:
		v = new(ToolCallData)
	case surface.TypeRequestHeader:
		v = new(surface.HeaderEvent)
	case surface.TypeRequestContext:
		v = new(RequestContext)
	case surface.TypeLLMRetry:
		v = new(Retry)
	case surface.TypeCompactionStart:
		v = new(CompactionStart)
	case surface.TypeCompactionSummary:
		v = new(CompactionSummary)
	case surface.TypeCompactionEnd:
		v = new(CompactionEnd)
	case surface.TypeCompactionPrune:
		v = new(CompactionPrune)
	case surface.TypePluginFailure:
		v = new(PluginFailure)
	case TypePluginCall:
		v = new(PluginCall)
	case surface.TypeEndSeed:
		v = new(EndSeed)
	default:
		return jsontext.Value(e.Data), nil
	}
	if err := json.Unmarshal(e.Data, v); err != nil {
		return nil, fmt.Errorf("event %d (%s): data: %w", e.Seq, e.Type, err)
	}
	return v, nil
}
