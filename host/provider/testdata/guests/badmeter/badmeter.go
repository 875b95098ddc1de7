// Package badmeter is a hostile test token meter. Its measurement is what
// its configuration's "attack" names:
//
//   - "negative": a node priced -5 tokens;
//   - "huge": two nodes priced 2^62 tokens each, whose sum overflows int64;
//   - "tokenizer": a tokenizer name with a control character;
//   - "total": a total of 7 tokens while its breakdown prices 1,870;
//   - "ghost": a node at a seq that is no node of the surface;
//   - "rewind": the events observed as its log revision on the first
//     measure, 3 fewer on every later one;
//   - anything else: an honest, empty measurement.
package badmeter

import (
	"strconv"

	"github.com/weirhost/weir/host/provider/testdata/guests/guestconf"
	"github.com/weirhost/weir/sdk"
	"github.com/weirhost/weir/sdk/abi"
)

var attack string

func configure(raw []byte) (err error) {
	attack, err = guestconf.Attack(raw)
	return err
}

type meter struct{}

// Observe keeps the number of events seen as the state: a decimal.
func (meter) Observe(h *sdk.Host, req *sdk.ObserveRequest) ([]byte, error) {
	n, _ := strconv.ParseInt(string(req.State), 10, 64)
	return strconv.AppendInt(nil, n+int64(len(req.Events)), 10), nil
}

// measured counts this instance's measure calls.
var measured int

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
	case "total":
		m.Breakdown = abi.Breakdown{SystemTokens: 7, MessageTokens: 1863}
		m.Baseline.Tokens, m.TotalTokens = 7, 7
	case "ghost":
		m.Nodes = []abi.NodeTokens{{Seq: 1 << 30, Tokens: 3}}
		m.SurfaceTokens, m.Baseline.Tokens, m.TotalTokens = 3, 3, 3
	case "rewind":
		n, _ := strconv.ParseInt(string(req.State), 10, 64)
		if measured > 0 {
			n -= 3
		}
		m.LogRevision = n
	}
	measured++
	return m, nil
}

// Plugin is the plugin under the name a test loads it by.
func Plugin(name string) sdk.Plugin {
	return sdk.Plugin{Name: name, Version: "1.0.0", Configure: configure, Meter: meter{}}
}
