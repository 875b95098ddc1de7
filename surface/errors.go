package surface

import (
	"errors"
	"fmt"
)

// Rule names the admission rule an event broke. Rules are stable strings:
// callers and tests may match on them.
type Rule string

// The rules an event can break.
const (
	RuleEnvelope    Rule = "envelope"         // 2.1: keys, seq, time, data, ignorable
	RuleLossless    Rule = "lossless-json"    // 2.1: data must be plain, lossless JSON
	RuleContiguous  Rule = "contiguity"       // 1: seq must equal the log length
	RuleUnknownType Rule = "unknown-type"     // 3.4: unknown type without ignorable
	RuleEligibility Rule = "eligibility"      // 2.2: surface keys only on surface types
	RuleSurfaceOp   Rule = "surface-op"       // 4.1: shape of surfaceOp
	RuleSources     Rule = "source-seqs"      // 4.2: shape of sourceEventSeqs
	RuleRange       Rule = "replace-range"    // 4.3: replace endpoints on the surface, in order
	RuleCoverage    Rule = "coverage"         // 4.2: a replace cites every shadowed node
	RuleToolRewrite Rule = "tool-rewrite"     // 4.6: tool-result rewrite limits
	RuleSystemHead  Rule = "system-head"      // 4.5: node 0 holds the system prompt
	RulePayload     Rule = "payload"          // 3.3: type-specific data shape
	RuleHeader      Rule = "request-header"   // 3.3, 7.1: request/header shape
	RuleEnclosure   Rule = "enclosure"        // 14: turn/step numbering and enclosure
	RuleReentrant   Rule = "reentrant-append" // 3.2: append from an observer
	RuleSeedMarker  Rule = "end-seed"         // 3.5: only the constructor writes end-seed
)

// Error is the error of a rejected event. Seq is the event's seq (or the
// expected seq for contiguity errors); it is -1 when the seq is unknown
// (an unparsable line).
type Error struct {
	Seq  int64
	Type string // event type, when known
	Rule Rule
	Msg  string
}

func (e *Error) Error() string {
	var b []byte
	if e.Seq >= 0 {
		b = fmt.Appendf(b, "seq %d", e.Seq)
	} else {
		b = append(b, "event"...)
	}
	if e.Type != "" {
		b = fmt.Appendf(b, " (%s)", e.Type)
	}
	b = fmt.Appendf(b, ": %s: %s", e.Rule, e.Msg)
	return string(b)
}

func errorf(seq int64, typ string, rule Rule, format string, args ...any) *Error {
	return &Error{Seq: seq, Type: typ, Rule: rule, Msg: fmt.Sprintf(format, args...)}
}

// RuleOf reports the rule of an *Error or a *PairingError in err's chain, or "" when there is none.
func RuleOf(err error) Rule {
	var e *Error
	if errors.As(err, &e) {
		return e.Rule
	}
	var pe *PairingError
	if errors.As(err, &pe) {
		return pe.Rule
	}
	return ""
}

// headMsg is the stable fragment of every system-head rejection.
const headMsg = "surface node 0 holds the protected system prompt"
