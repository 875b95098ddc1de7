package native

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/plugins/token-meter/meter"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/sdk/tokenizer/openai"
	"github.com/weirhost/weir/surface"
)

// ID is the meter's provider id.
const ID = "token-meter"

// Meter is a host.Meter backed by package meter. It is safe for
// concurrent use.
type Meter struct {
	mu sync.Mutex
	m  *meter.Meter
}

var _ host.Meter = (*Meter)(nil)

// Counters are the tokenizers the host adds to the meter's built-in ones,
// by every name a route may give them.
func Counters() map[string]tokenizer.Counter {
	return map[string]tokenizer.Counter{
		"o200k_base":  openai.O200kBase,
		"o200k":       openai.O200kBase,
		"cl100k_base": openai.Cl100kBase,
		"cl100k":      openai.Cl100kBase,
	}
}

// New returns a meter for one session. cfg's Reassemble defaults to the
// LLM layer's reassembly, and the OpenAI tokenizers are added to its
// Counters unless cfg already names them.
func New(cfg meter.Config) (*Meter, error) {
	if cfg.Reassemble == nil {
		cfg.Reassemble = Reassemble
	}
	counters := Counters()
	maps.Copy(counters, cfg.Counters)
	cfg.Counters = counters
	m, err := meter.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Meter{m: m}, nil
}

// Reassemble returns the provider output blocks of a stream record.
func Reassemble(stream []byte) ([]surface.Block, error) {
	r, err := llm.Reassemble(stream)
	if err != nil {
		return nil, err
	}
	return r.Content, nil
}

// ID returns "token-meter".
func (*Meter) ID() string { return ID }

// Observe folds events in order. Events the meter already folded are
// skipped, so the host may hand over the whole log and then each new
// event. It stops at the first event that cannot be folded and returns its
// error; the meter stays at that event (see meter.Meter.Observe).
func (a *Meter) Observe(events []surface.Event) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range events {
		if events[i].Seq < a.m.Revision() {
			continue
		}
		if err := a.m.Observe(events[i]); err != nil {
			return err
		}
	}
	return nil
}

// Measure returns the measurement under header (the logged header when
// nil).
func (a *Meter) Measure(ctx context.Context, header *surface.Header) (*host.Measurement, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("token meter: measure: %w", err)
	}
	a.mu.Lock()
	got, err := a.m.Measure(header)
	a.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return Convert(got), nil
}

// Convert returns m as the host's measurement type.
func Convert(m meter.Measurement) *host.Measurement {
	out := &host.Measurement{
		LogRevision:        m.LogRevision,
		Baseline:           m.Baseline,
		BaselineTokens:     m.BaselineTokens,
		SurfaceDeltaTokens: m.SurfaceDeltaTokens,
		TotalTokens:        m.TotalTokens,
		SurfaceTokens:      m.SurfaceTokens,
		Nodes:              make([]host.NodeTokens, len(m.Nodes)),
		Breakdown:          host.Breakdown(m.Breakdown),
		EstimateError:      m.EstimateError,
		Tokenizer:          m.Tokenizer,
	}
	for i, n := range m.Nodes {
		out.Nodes[i] = host.NodeTokens(n)
	}
	return out
}
