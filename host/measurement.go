package host

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/weirhost/weir/surface"
)

// RuleMeasurement is the rule a token meter's measurement breaks when its
// counts are negative, out of bounds, overflow when summed or do not add
// up, or its tokenizer name is not a short printable string.
const RuleMeasurement surface.Rule = "meter/measurement"

// MaxTokenizerName bounds the tokenizer name of a measurement, in bytes.
const MaxTokenizerName = 64

// ErrBadMeasurement is the error of a measurement that failed
// ValidateMeasurement. It also matches ErrNotGranted: a consumer treats
// the measurement as absent and prices the surface with its own
// estimate, as it does without a meter.
var ErrBadMeasurement error = badMeasurement{}

type badMeasurement struct{}

func (badMeasurement) Error() string        { return "bad measurement" }
func (badMeasurement) Is(target error) bool { return target == ErrNotGranted }

// MeasurementError is the error of ValidateMeasurement: the rule
// meter/measurement and what is wrong.
type MeasurementError struct{ Msg string }

func (e *MeasurementError) Error() string { return string(RuleMeasurement) + ": " + e.Msg }

// Is matches ErrBadMeasurement and, through it, ErrNotGranted.
func (e *MeasurementError) Is(target error) bool {
	return target == ErrBadMeasurement || target == ErrNotGranted
}

// ValidateMeasurement checks what a token meter says before the host
// believes it: every count (per node, both prices, the totals, the
// baseline and every breakdown category) is an integer from 0 to MaxCount;
// the node seqs are distinct (not ordered: a replaced head has the highest); the nodes' tokens, summed
// without overflow, equal SurfaceTokens; the breakdown's system, user,
// assistant and tool-result categories add up to at most MaxCount and, when
// the meter priced nodes and split its total, to SurfaceTokens (a meter
// that prices no nodes may report a coarse breakdown); TotalTokens is
// BaselineTokens plus SurfaceDeltaTokens (at least 0) and at least
// Breakdown.Tools plus SurfaceTokens (or the categories' sum, when larger);
// the estimate error is bounded by
// MaxCount either way; the tokenizer name is empty or a printable string of
// at most MaxTokenizerName bytes.
func ValidateMeasurement(m *Measurement) error {
	bad := func(format string, args ...any) error {
		return &MeasurementError{Msg: fmt.Sprintf(format, args...)}
	}
	if m == nil {
		return bad("no measurement")
	}
	counts := []struct {
		name string
		v    int64
	}{
		{"logRevision", m.LogRevision}, {"baselineTokens", m.BaselineTokens},
		{"totalTokens", m.TotalTokens}, {"surfaceTokens", m.SurfaceTokens},
		{"breakdown.system", m.Breakdown.System}, {"breakdown.user", m.Breakdown.User},
		{"breakdown.assistant", m.Breakdown.Assistant}, {"breakdown.toolResults", m.Breakdown.ToolResults},
		{"breakdown.tools", m.Breakdown.Tools},
	}
	for _, c := range counts {
		if c.v < 0 || c.v > MaxCount {
			return bad("%s is %d, not a count from 0 to %d", c.name, c.v, MaxCount)
		}
	}
	if d := m.SurfaceDeltaTokens; d < -MaxCount || d > MaxCount {
		return bad("surfaceDeltaTokens is %d, beyond ±%d", d, MaxCount)
	}
	if e := m.EstimateError; e != nil && (*e < -MaxCount || *e > MaxCount) {
		return bad("estimateError is %d, beyond ±%d", *e, MaxCount)
	}
	// Each term is at most MaxCount (2^40) and there are at most 2^22 of
	// them before the sum is checked again, so the running sum never
	// overflows int64.
	var sum int64
	seen := make(map[int64]int, len(m.Nodes))
	for i, n := range m.Nodes {
		if n.Tokens < 0 || n.Tokens > MaxCount || n.HeuristicTokens < 0 || n.HeuristicTokens > MaxCount {
			return bad("node %d (seq %d) is priced %d tokens (heuristic %d), not counts from 0 to %d",
				i, n.Seq, n.Tokens, n.HeuristicTokens, MaxCount)
		}
		// Seqs are distinct but not ordered: a replaced node 0 has a
		// higher seq than the history after it.
		if j, dup := seen[n.Seq]; dup {
			return bad("node %d has seq %d, like node %d", i, n.Seq, j)
		}
		seen[n.Seq] = i
		sum += n.Tokens
		if sum > MaxCount {
			return bad("the nodes' tokens add up to more than %d", MaxCount)
		}
	}
	if len(m.Nodes) > 0 && sum != m.SurfaceTokens {
		return bad("the nodes' tokens add up to %d, but surfaceTokens is %d", sum, m.SurfaceTokens)
	}
	b := m.Breakdown
	parts := b.System + b.User + b.Assistant + b.ToolResults // each at most 2^40: no overflow
	if parts > MaxCount {
		return bad("the breakdown's categories add up to %d, more than %d", parts, MaxCount)
	}
	if len(m.Nodes) > 0 && parts != m.SurfaceTokens && parts != 0 {
		return bad("the breakdown's system, user, assistant and tool-result tokens add up to %d, but surfaceTokens is %d",
			parts, m.SurfaceTokens)
	}
	// The total is the baseline plus the surface's change since it, at
	// least 0, and a request costs at least what its parts are priced:
	// the tools plus the surface (or the breakdown's categories, when the
	// meter prices no surface).
	if want := max(0, m.BaselineTokens+m.SurfaceDeltaTokens); m.TotalTokens != want {
		return bad("totalTokens is %d, but baselineTokens %d plus surfaceDeltaTokens %d is %d",
			m.TotalTokens, m.BaselineTokens, m.SurfaceDeltaTokens, want)
	}
	if priced := b.Tools + max(m.SurfaceTokens, parts); m.TotalTokens < priced {
		return bad("totalTokens is %d, less than the %d tokens its parts are priced (breakdown.tools %d plus the surface's %d)",
			m.TotalTokens, priced, b.Tools, max(m.SurfaceTokens, parts))
	}
	if t := m.Tokenizer; t != "" {
		if len(t) > MaxTokenizerName || !utf8.ValidString(t) {
			return bad("the tokenizer name is not a UTF-8 string of at most %d bytes", MaxTokenizerName)
		}
		for _, r := range t {
			if !unicode.IsPrint(r) {
				return bad("the tokenizer name %q has the unprintable character %U", t, r)
			}
		}
	}
	return nil
}
