// Package tokenmeter is Weir's first-party token meter: package meter
// (spec section 12) running as a WebAssembly token-meter provider. Weir
// ships it in its first-party module (plugins/firstparty); ./standalone
// builds it alone into a module of its own.
//
// meter.observe folds the newly committed events into the meter;
// meter.measure answers the measurement of spec 12.2 (under the request
// header override when one is given).
//
// # State
//
// Instances are disposable and a session's calls may land on any of them,
// so the meter's replay state lives in the state blob the host stores per
// session: every call restores the meter from the blob it is given
// (meter.Restore), and observe returns the new blob (Meter.AppendState). The
// blob holds no message contents, only a few bytes per surface node, so it
// stays far below the host's state limit for any surface a context window
// holds. When a route change (or a header override naming another route)
// makes the meter reprice the surface, it loads each node's content through
// the message import. The host batches observe calls and answers from its
// current surface, so a node an event later in the queue shadowed may be
// gone: it keeps its price until that event is folded (exact unless an
// assistant message between the two anchors a measurement on it, until the
// next one). An event the meter cannot fold stops it, as natively:
// the stop is kept in the blob (Measure then fails with its error) and
// reported on stderr, which the host logs at WARN.
//
// # Tokenizers
//
// Routes are priced as natively: DeepSeek routes with the DeepSeek V3
// tokenizer, others with the fixed estimator unless configured. DeepSeek V3
// is counted by the host's native tokenizer through the count_tokens
// import, falling back to the guest's embedded copy when the host does not
// grant the import; "counting": "guest" always counts in the guest. The host
// is the default: loading the embedded tokenizer costs a new instance about
// half a second (half the runtime's default 1 s meter deadline) against
// about 15 ms when the host counts, and folding a message costs 1.4 / 5.2 /
// 31 ms with host counting against 2.1 / 13 / 76 ms in the guest (300 B /
// 8 KiB / 64 KiB, 200-node session; BenchmarkObserve,
// BenchmarkFreshInstance). OpenAI's o200k_base and cl100k_base (also
// "o200k", "cl100k") are counted by the host only.
//
// # Configuration
//
//	{
//	  "routes": {"openai": "o200k_base", "acme/big": "deepseek-v3"},
//	  "fallback": "heuristic",
//	  "counting": "host"
//	}
//
// routes maps "provider/model" or "provider" to a tokenizer (heuristic,
// deepseek-v3, o200k_base, o200k, cl100k_base, cl100k); fallback prices the
// routes without an entry other than DeepSeek's (default heuristic);
// counting is "host" (default) or "guest". Unknown keys fail the load.
//
// # Differences from the native meter
//
//   - The provider's output is priced from the stored assistant message, not
//     reassembled from its stream record: the guest does not carry the LLM
//     layer. The two agree whenever the loop stored the output unchanged,
//     its normal case.
//
// The measurement carries everything the native one has: the estimate
// error, the tokenizer name and the user/assistant/tool-result split of the
// breakdown travel in the fields ABI minor 1 added.
package tokenmeter

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/plugins/token-meter/meter"
	"github.com/weirhost/weir/sdk"
	"github.com/weirhost/weir/sdk/jsonobj"
)

// Name is the plugin's name.
const Name = "token-meter"

// config is the plugin configuration.
type config struct {
	Routes   map[string]string
	Fallback string
	Counting string
}

// Where DeepSeek V3 is counted.
const (
	countOnHost  = "host"
	countInGuest = "guest"
)

func parseConfig(raw []byte) (config, error) {
	c := config{Counting: countOnHost}
	if len(raw) > 0 {
		if err := decodeConfig(raw, &c); err != nil {
			return c, errors.New("token meter config: " + err.Error())
		}
	}
	if c.Counting != countOnHost && c.Counting != countInGuest {
		return c, errors.New("token meter config: counting is " + strconv.Quote(c.Counting) +
			", want " + strconv.Quote(countOnHost) + " or " + strconv.Quote(countInGuest))
	}
	// Validate the tokenizer names as the meter will see them.
	if _, err := meter.New(c.meterConfig(nil)); err != nil {
		return c, err
	}
	return c, nil
}

// decodeConfig reads the configuration object into c: the members
// routes (an object of strings), fallback and counting; null leaves a
// member at its zero value (a null configuration, all of them), and any
// other member fails.
func decodeConfig(raw []byte, c *config) error {
	if string(bytes.TrimSpace(raw)) == "null" {
		*c = config{}
		return nil
	}
	return jsonobj.Members(raw, func(name string, v jsontext.Value) (err error) {
		switch name {
		case "routes":
			c.Routes = nil
			if v.Kind() == 'n' {
				return nil
			}
			c.Routes = map[string]string{}
			return jsonobj.Members(v, func(route string, v jsontext.Value) (err error) {
				c.Routes[route], err = jsonobj.String(v)
				return err
			})
		case "fallback":
			c.Fallback, err = jsonobj.String(v)
		case "counting":
			c.Counting, err = jsonobj.String(v)
		default:
			err = jsonobj.UnknownMember(name, "the configuration has routes, fallback and counting")
		}
		return err
	})
}

// Plugin is the plugin to register (sdk.Register).
func Plugin() sdk.Plugin {
	t := &tokenMeter{cfg: config{Counting: countOnHost}}
	return sdk.Plugin{
		Name:    Name,
		Version: "1.0.0",
		Configure: func(raw []byte) (err error) {
			t.cfg, err = parseConfig(raw)
			return err
		},
		Meter:     t,
		WarmState: true,
	}
}
