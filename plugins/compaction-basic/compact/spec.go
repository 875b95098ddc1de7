package compact

import (
	"fmt"
	"math"
)

// Spec is the pressure budget of one target (resolveCompactSpec, 11.2).
type Spec struct {
	ContextWindow   int64
	Reserved        int64 // completion tokens reserved by the request
	MessageBudget   int64 // ContextWindow - Reserved
	PressureBudget  int64 // MessageBudget - HeadroomTokens
	ThresholdTokens int64 // compact when the measured total reaches this
	RetainTokens    int64 // verbatim tail kept by pressure compaction
}

// ConfigError is a target's configuration that yields no usable pressure
// budget. It is reported once per provider/model (see State).
type ConfigError struct {
	Provider, Model string
	Msg             string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("compaction config for %s/%s: %s", e.Provider, e.Model, e.Msg)
}

// ResolveSpec computes the pressure budget of policy p for a route with
// the given context window and reserved completion tokens:
//
//	messageBudget   = contextWindow - reserved              (must be > 0)
//	pressureBudget  = messageBudget - headroomTokens        (must be > 0)
//	thresholdTokens = floor(min(contextWindow*thresholdRatio, pressureBudget))
//	retainTokens    = retainTokens, else floor(messageBudget*retainRatio)
//	                  (must be < thresholdTokens)
//
// Provider and model only name the target in the error.
func ResolveSpec(p Policy, provider, model string, contextWindow, reserved int64) (Spec, error) {
	bad := func(format string, args ...any) (Spec, error) {
		return Spec{}, &ConfigError{Provider: provider, Model: model, Msg: fmt.Sprintf(format, args...)}
	}
	if contextWindow <= 0 {
		return bad("the route advertises no context window (got %d); pressure compaction needs a positive capacity", contextWindow)
	}
	s := Spec{ContextWindow: contextWindow, Reserved: reserved}
	s.MessageBudget = contextWindow - reserved
	if s.MessageBudget <= 0 {
		return bad("no message budget: context window %d minus reserved completion %d is %d", contextWindow, reserved, s.MessageBudget)
	}
	s.PressureBudget = s.MessageBudget - p.HeadroomTokens
	if s.PressureBudget <= 0 {
		return bad("no pressure budget: message budget %d minus headroomTokens %d is %d", s.MessageBudget, p.HeadroomTokens, s.PressureBudget)
	}
	s.ThresholdTokens = int64(math.Floor(math.Min(float64(contextWindow)*p.ThresholdRatio, float64(s.PressureBudget))))
	if p.HasRetainTokens {
		s.RetainTokens = p.RetainTokens
	} else {
		s.RetainTokens = int64(math.Floor(float64(s.MessageBudget) * p.RetainRatio))
	}
	if s.RetainTokens >= s.ThresholdTokens {
		return bad("retained tail %d tokens is not below the threshold %d tokens", s.RetainTokens, s.ThresholdTokens)
	}
	return s, nil
}
