package inspect

import (
	"bytes"
	"fmt"
	"html/template"
	"math"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/host/eval"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// timeReply sets a settlement's time to first token and, when its stream
// record holds the dispatch instant, its wall time from the dispatch to
// the settlement at settled (epoch ms). A record without them (the
// offline model, logs written before the members existed) leaves the wall
// time measured from the event before the settlement.
func timeReply(first **int64, sent, wall *int64, settled int64, stream jsontext.Value) {
	if len(stream) == 0 {
		return
	}
	t := llm.TimingOf(stream)
	if t.First >= 0 {
		f := t.First
		*first = &f
	}
	if t.Sent > 0 {
		*sent, *wall = t.Sent, max(0, settled-t.Sent)
	}
}

// streamOf is the stream record of a settlement's data.
func streamOf(data []byte) jsontext.Value {
	var d struct {
		Stream jsontext.Value `json:"stream"`
	}
	if json.Unmarshal(data, &d) != nil {
		return nil
	}
	return d.Stream
}

// usageOf is the provider usage of a settlement's data, read without
// decoding its message or its stream record.
func usageOf(data []byte) *surface.Usage {
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil
		}
		if tok.String() != "usage" {
			if dec.SkipValue() != nil {
				return nil
			}
			continue
		}
		v, err := dec.ReadValue()
		if err != nil {
			return nil
		}
		var u surface.Usage
		if json.Unmarshal(v, &u) != nil {
			return nil
		}
		return &u
	}
	return nil
}

// addUsage adds the usage a settlement's data reports to its turn's sum.
func (m *Model) addUsage(turn int64, data []byte) {
	u := usageOf(data)
	if u == nil {
		return
	}
	sum := m.turns[turn]
	if sum == nil {
		sum = &surface.Usage{}
		m.turns[turn] = sum
	}
	sum.Input += u.Input
	sum.Output += u.Output
	sum.CacheRead += u.CacheRead
	sum.CacheWrite += u.CacheWrite
	sum.Reasoning += u.Reasoning
}

// costOf prices usage with p: the cache read as cache hits, the rest of
// the input (the cache written included) as misses, and the output (eval's
// price table and its arithmetic). No prices or no usage: nil, so a page
// shows no cost rather than "$0".
func costOf(p *eval.Prices, u *surface.Usage) *eval.Cost {
	if p == nil || u == nil {
		return nil
	}
	c := p.Cost(u.Input+u.CacheRead+u.CacheWrite, u.CacheRead, u.Output)
	return &c
}

// costFunc is the template function "cost" of a server pricing with p.
func costFunc(p *eval.Prices) template.FuncMap {
	return template.FuncMap{"cost": func(u *surface.Usage) *eval.Cost { return costOf(p, u) }}
}

// dollars renders an estimated cost: cents above a dollar, else at least
// four decimals and two significant digits (a request costs fractions of
// a cent).
func dollars(f float64) string {
	switch {
	case f <= 0:
		return "$0"
	case f >= 1:
		return fmt.Sprintf("$%.2f", f)
	}
	d := max(4, 1-int(math.Floor(math.Log10(f))))
	if d > 8 {
		return "< $0.00000001"
	}
	return fmt.Sprintf("$%.*f", d, f)
}
