// Command badmeter is a hostile test token meter. Its measurement is what
// its configuration's "attack" names:
//
//   - "negative": a node priced -5 tokens;
//   - "huge": two nodes priced 2^62 tokens each, whose sum overflows int64;
//   - "tokenizer": a tokenizer name with a control character;
//   - anything else: an honest, empty measurement.
package main

import (
	"encoding/json"

	"github.com/weirhost/weir/sdk"
	"github.com/weirhost/weir/sdk/abi"
)

var attack string

func configure(raw []byte) error {
	var c struct {
		Attack string `json:"attack"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &c); err != nil {
			return err
		}
	}
	attack = c.Attack
	return nil
}

type meter struct{}

func (meter) Observe(h *sdk.Host, req *sdk.ObserveRequest) ([]byte, error) {
	return []byte("seen"), nil
}

func (meter) Measure(h *sdk.Host, req *sdk.MeasureRequest) (*sdk.Measurement, error) {
	m := &sdk.Measurement{Baseline: abi.Baseline{Kind: abi.BaselineEstimated}}
	switch attack {
	case "negative":
		m.Nodes = []abi.NodeTokens{{Seq: 0, Tokens: -5, HeuristicTokens: 1}}
		m.SurfaceTokens, m.TotalTokens = 0, 0
	case "huge":
		m.Nodes = []abi.NodeTokens{{Seq: 0, Tokens: 1 << 62}, {Seq: 1, Tokens: 1 << 62}}
		m.SurfaceTokens, m.TotalTokens = 0, 0
	case "tokenizer":
		m.Tokenizer = "evil\x00name"
	}
	return m, nil
}

func init() {
	sdk.Register(sdk.Plugin{Name: "badmeter", Version: "1.0.0", Configure: configure, Meter: meter{}})
}

func main() {}
