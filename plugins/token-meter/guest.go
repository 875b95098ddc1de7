package tokenmeter

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/weirhost/weir/plugins/token-meter/meter"
	"github.com/weirhost/weir/sdk"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

// tokenMeter implements sdk.TokenMeter. It keeps the configuration and
// a few warm meters: the states it made, under the keys the host gave them
// (ObserveRequest.NextStateKey), so a request naming its state by key needs
// no restore. A request without a key restores the meter from its blob.
type tokenMeter struct {
	cfg  config
	warm []warmMeter // most recently used last
}

// warmMeter is a meter kept between calls under the host's key.
type warmMeter struct {
	key int64
	m   *meter.Meter
	c   *counting
}

// maxWarm bounds the warm meters of an instance (one per session served).
const maxWarm = 4

// acquire returns the meter of a request: the warm one under key (taken
// out of the cache: the caller puts it back when the call succeeded), else
// the one restored from state. A key the instance does not hold is
// sdk.ErrStateUnknown.
func (t *tokenMeter) acquire(h *sdk.Host, key int64, state []byte) (warmMeter, error) {
	if key != 0 {
		for i, w := range t.warm {
			if w.key == key {
				t.warm = append(t.warm[:i], t.warm[i+1:]...)
				w.c.h, w.c.err = h, nil
				return w, nil
			}
		}
		return warmMeter{}, fmt.Errorf("%w: no warm meter under key %d", sdk.ErrStateUnknown, key)
	}
	m, c, err := t.restore(h, state)
	return warmMeter{m: m, c: c}, err
}

// keep caches w under key, dropping the least recently used meter when full.
func (t *tokenMeter) keep(key int64, w warmMeter) {
	if key == 0 {
		return
	}
	w.key, w.c.h = key, nil
	if len(t.warm) >= maxWarm {
		t.warm = append(t.warm[:0], t.warm[1:]...)
	}
	t.warm = append(t.warm, w)
}

func (t *tokenMeter) Observe(h *sdk.Host, req *sdk.ObserveRequest) ([]byte, error) {
	w, err := t.acquire(h, req.StateKey, req.State)
	if err != nil {
		return nil, err
	}
	m, c := w.m, w.c
	// The events live as long as this call, unless the meter is kept warm.
	keep := req.NextStateKey != 0
	dec := surface.Decoder{Alias: !keep}
	for _, in := range req.Events {
		var err error
		switch {
		case in.HasData && in.Type != "" && in.Seq < m.Revision():
			continue // already folded
		case in.HasData && in.Type != "" && meter.Inert(in.Type):
			err = m.Skip(in.Seq, in.Type)
		case in.HasData && in.Type != "":
			// The host sent the parts the meter reads (minor 2): no need
			// to parse the line.
			e := surface.Event{Seq: in.Seq, Type: in.Type, Data: in.Data}
			if keep {
				e.Data = bytes.Clone(in.Data)
			}
			switch abi.IntentKind(in.SurfaceOp) {
			case abi.IntentAppend:
				e.Op = surface.Append
			case abi.IntentReplace:
				e.Op = surface.Replace(in.ReplaceStartSeq, in.ReplaceEndSeq)
			}
			err = m.Observe(e)
		case in.Type != "" && meter.Inert(in.Type):
			// Nothing of it is priced: the host's seq and type are enough
			// (the guest trusts its host, docs/abi.md 4.1).
			if in.Seq < m.Revision() {
				continue // already folded
			}
			err = m.Skip(in.Seq, in.Type)
		default:
			var e surface.Event
			if e, err = dec.Decode(in.JSON); err != nil {
				return nil, fmt.Errorf("event seq %d: %w", in.Seq, err)
			}
			if e.Seq < m.Revision() {
				continue // already folded
			}
			err = m.Observe(e)
		}
		if err != nil {
			if m.Err() == nil {
				return nil, err // a content the host could not give: try again later
			}
			// The event cannot be folded: the meter stops here, as the
			// native one does, and the blob keeps the stop.
			fmt.Fprintf(os.Stderr, "%s: %v\n", Name, err)
			break
		}
	}
	if c.err != nil {
		return nil, c.err
	}
	t.keep(req.NextStateKey, w)
	if req.StateOptional && req.NextStateKey != 0 {
		return nil, sdk.ErrStateKept
	}
	return m.AppendState(nil), nil
}

func (t *tokenMeter) Measure(h *sdk.Host, req *sdk.MeasureRequest) (*sdk.Measurement, error) {
	w, err := t.acquire(h, req.StateKey, req.State)
	if err != nil {
		return nil, err
	}
	m, c := w.m, w.c
	var override *surface.Header
	if req.HasHeaderOverride {
		h, err := surface.DecodeHeader(req.HeaderOverride)
		if err != nil {
			return nil, fmt.Errorf("header override: %w", err)
		}
		override = &h
	}
	measure := m.Measure
	if req.TotalsOnly {
		measure = m.MeasureTotals
	}
	got, err := measure(override)
	if err != nil {
		return nil, err
	}
	if c.err != nil {
		return nil, c.err
	}
	t.keep(req.StateKey, w)
	return toABI(&got), nil
}

// restore rebuilds the session's meter from its blob, with counters and a
// content source bound to this call's host.
func (t *tokenMeter) restore(h *sdk.Host, state []byte) (*meter.Meter, *counting, error) {
	c := &counting{h: h}
	m, err := meter.Restore(t.cfg.meterConfig(c), state)
	return m, c, err
}

// meterConfig is the meter's configuration; c binds the host counters
// (nil: counters that only carry their names, for validation).
func (cfg config) meterConfig(c *counting) meter.Config {
	mc := meter.Config{Routes: cfg.Routes, Fallback: cfg.Fallback, Counters: map[string]tokenizer.Counter{}}
	for _, names := range [][2]string{{"o200k_base", "o200k_base"}, {"o200k", "o200k_base"},
		{"cl100k_base", "cl100k_base"}, {"cl100k", "cl100k_base"}} {
		mc.Counters[names[0]] = hostCounter{name: names[1], c: c}
	}
	if cfg.Counting == countOnHost {
		mc.DeepSeek = hostCounter{name: meter.DeepSeekV3, c: c, local: tokenizer.DeepSeekV3}
	}
	if c != nil {
		mc.Content = c.content
	}
	return mc
}

// counting is one call's access to the host: token counts and message
// contents. The first failure sticks in err and fails the call.
type counting struct {
	h      *sdk.Host
	err    error
	denied bool // the host does not grant count_tokens: count in the guest
}

// hostCounter counts with the host's native tokenizer of that name, or
// with local when the host does not grant count_tokens.
type hostCounter struct {
	name  string
	c     *counting
	local func() *tokenizer.Tokenizer // nil: the host is the only counter
}

func (hc hostCounter) Name() string { return hc.name }

func (hc hostCounter) Count(text string) int {
	c := hc.c
	if c.err != nil {
		return 0
	}
	if !c.denied {
		n, err := c.h.CountTokens(hc.name, text)
		switch {
		case err == nil:
			return n
		case errors.Is(err, sdk.ErrNotGranted) && hc.local != nil:
			c.denied = true
		default:
			c.err = fmt.Errorf("count tokens with %s: %w", hc.name, err)
			return 0
		}
	}
	return hc.local().Count(text)
}

// content returns the content array of the surface node holding seq. The
// host answers from its current surface, which may be ahead of the events
// observed so far: a node a later event shadowed is gone (ErrNoContent).
func (c *counting) content(seq int64) ([]byte, error) {
	raw, err := c.h.Message(seq)
	if errors.Is(err, sdk.ErrNotFound) {
		return nil, fmt.Errorf("%w: %v", meter.ErrNoContent, err)
	}
	if err != nil {
		return nil, err
	}
	content, err := meter.MessageContent(raw)
	if err != nil {
		return nil, errors.New("message of seq " + strconv.FormatInt(seq, 10) + ": " + err.Error())
	}
	return content, nil
}

var baselines = map[string]abi.BaselineKind{
	meter.BaselineNone:      abi.BaselineNone,
	meter.BaselineEstimated: abi.BaselineEstimated,
	meter.BaselineUsage:     abi.BaselineUsage,
}

// toABI converts a measurement to the ABI's form.
func toABI(m *meter.Measurement) *sdk.Measurement {
	out := &sdk.Measurement{
		LogRevision:        m.LogRevision,
		Baseline:           abi.Baseline{Kind: baselines[m.Baseline], Tokens: m.BaselineTokens},
		SurfaceDeltaTokens: m.SurfaceDeltaTokens,
		TotalTokens:        m.TotalTokens,
		SurfaceTokens:      m.SurfaceTokens,
		Nodes:              make([]abi.NodeTokens, len(m.Nodes)),
		Breakdown: abi.Breakdown{SystemTokens: m.Breakdown.System, ToolsTokens: m.Breakdown.Tools,
			MessageTokens: m.Breakdown.User + m.Breakdown.Assistant + m.Breakdown.ToolResults,
			UserTokens:    m.Breakdown.User, AssistantTokens: m.Breakdown.Assistant, ToolResultTokens: m.Breakdown.ToolResults},
		Tokenizer: m.Tokenizer,
	}
	if m.EstimateError != nil {
		out.EstimateError, out.HasEstimateError = *m.EstimateError, true
	}
	for i, n := range m.Nodes {
		out.Nodes[i] = abi.NodeTokens{Seq: n.Seq, Tokens: n.Tokens, HeuristicTokens: n.HeuristicTokens}
	}
	return out
}
