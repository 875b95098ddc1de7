package meter

import (
	"errors"
	"fmt"
	"sort"

	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

// Config configures a Meter.
type Config struct {
	// Routes names the tokenizer that prices each route. A key is
	// "provider/model" or "provider" (every model of that provider); the
	// exact route wins. Without an entry, provider "deepseek" is priced with
	// "deepseek-v3" and every other provider with Fallback.
	Routes map[string]string
	// Fallback is the tokenizer of routes without an entry (other than
	// DeepSeek's) and of measurements with no header; "heuristic" when
	// empty.
	Fallback string
	// Counters adds tokenizers by name to the built-in "heuristic" and
	// "deepseek-v3", e.g. OpenAI's o200k_base for the host. Their messages
	// are framed as OpenAI's chat format frames them (3 tokens each).
	Counters map[string]tokenizer.Counter
	// Reassemble rebuilds the provider's output blocks from the stream
	// record of an assistant/message (the host fills it with the LLM
	// layer's reassembly). When nil, the durable message stands in for the
	// provider output; that is exact whenever the loop stored the output
	// unchanged, its normal case. A WebAssembly guest gets reassembly
	// through a host import or a small copy of the record reader later;
	// the meter itself stays free of the host.
	Reassemble func(stream []byte) ([]surface.Block, error)
	// DeepSeek, when set, counts for the built-in "deepseek-v3" tokenizer
	// instead of the embedded one, with DeepSeek's chat framing. It must
	// count exactly as tokenizer.DeepSeekV3 does: a WebAssembly guest
	// passes one that asks the host's native tokenizer through an import.
	DeepSeek tokenizer.Counter
	// Content returns the content array (JSON) of the surface node holding
	// seq. A meter restored from a state blob (Restore) keeps no message
	// contents; it asks Content for the nodes it must price under another
	// tokenizer than the one that priced them (a header changing the route,
	// a measurement under another route's header). Without Content such a
	// meter fails to reprice. An error wrapping ErrNoContent says the node
	// has left the source's surface since (an event the meter has yet to
	// fold shadowed it): the meter keeps the node's price, which it drops
	// when it folds that event.
	Content func(seq int64) ([]byte, error)
}

// ErrNoContent is what Config.Content wraps for a node that is no longer on
// the surface it reads.
var ErrNoContent = errors.New("the node is no longer on the surface")

// ProviderDeepSeek is the provider whose routes default to the DeepSeek V3
// tokenizer.
const ProviderDeepSeek = "deepseek"

// resolver maps routes to pricers.
type resolver struct {
	deepseek tokenizer.Counter // counts for DeepSeekV3; nil: the embedded tokenizer
	routes   map[string]string
	fallback string
	counters map[string]tokenizer.Counter
	pricers  map[string]*pricer // by configured name
}

func newResolver(cfg Config) (*resolver, error) {
	r := &resolver{deepseek: cfg.DeepSeek, routes: map[string]string{}, fallback: cfg.Fallback,
		counters: map[string]tokenizer.Counter{}, pricers: map[string]*pricer{}}
	if r.fallback == "" {
		r.fallback = Heuristic
	}
	for name, c := range cfg.Counters {
		if c == nil {
			return nil, fmt.Errorf("token meter: config: counter %q is nil", name)
		}
		if name == Heuristic || name == DeepSeekV3 {
			return nil, fmt.Errorf("token meter: config: counter %q shadows a built-in tokenizer", name)
		}
		r.counters[name] = c
	}
	if !r.known(r.fallback) {
		return nil, fmt.Errorf("token meter: config: fallback tokenizer %q is unknown (known: %v)", r.fallback, r.names())
	}
	for route, name := range cfg.Routes {
		if route == "" {
			return nil, fmt.Errorf("token meter: config: a route key is empty")
		}
		if !r.known(name) {
			return nil, fmt.Errorf("token meter: config: route %q names unknown tokenizer %q (known: %v)", route, name, r.names())
		}
		r.routes[route] = name
	}
	return r, nil
}

func (r *resolver) known(name string) bool {
	_, ok := r.counters[name]
	return ok || name == Heuristic || name == DeepSeekV3
}

func (r *resolver) names() []string {
	out := []string{Heuristic, DeepSeekV3}
	for n := range r.counters {
		out = append(out, n)
	}
	sort.Strings(out[2:])
	return out
}

// name returns the tokenizer name of the route of h.
func (r *resolver) name(h *surface.Header) string {
	if h == nil {
		return r.fallback
	}
	c := &h.Config
	if n, ok := r.routes[c.Provider+"/"+c.Model]; ok {
		return n
	}
	if n, ok := r.routes[c.Provider]; ok {
		return n
	}
	if c.Provider == ProviderDeepSeek {
		return DeepSeekV3
	}
	return r.fallback
}

// pricer returns the pricer of the route of h, creating it (and loading its
// tokenizer) on first use.
func (r *resolver) pricer(h *surface.Header) *pricer {
	name := r.name(h)
	if p, ok := r.pricers[name]; ok {
		return p
	}
	var p *pricer
	switch name {
	case Heuristic:
		p = newPricer(nil)
	case DeepSeekV3:
		if r.deepseek != nil {
			p = newPricer(r.deepseek)
			p.name, p.framing = DeepSeekV3, framingDeepSeek
		} else {
			p = newPricer(tokenizer.DeepSeekV3())
		}
	default:
		p = newPricer(r.counters[name])
	}
	r.pricers[name] = p
	return p
}
