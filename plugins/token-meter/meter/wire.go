package meter

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/sdk/jsonobj"
)

// The small event data objects of the projections are read with jsonobj
// instead of the reflective unmarshaler: the same inputs accepted and
// refused as json.Unmarshal into the structs it replaced (wire_test.go),
// unknown members skipped.

// shadowPrice is the shadow price of a compaction/summary or
// compaction/prune: shadowedRange and shadowedTokenCount.
type shadowPrice struct {
	hasRange   bool
	start, end *int64
	count      *int64
}

func decodeShadowPrice(raw []byte) (shadowPrice, error) {
	var sp shadowPrice
	err := jsonobj.Members(raw, func(name string, v jsontext.Value) error {
		switch name {
		case "shadowedRange":
			sp.hasRange, sp.start, sp.end = v.Kind() != 'n', nil, nil
			return jsonobj.Members(v, func(name string, v jsontext.Value) error {
				switch name {
				case "start":
					var err error
					sp.start, err = jsonobj.Int(v)
					return err
				case "end":
					var err error
					sp.end, err = jsonobj.Int(v)
					return err
				}
				return nil
			})
		case "shadowedTokenCount":
			var err error
			sp.count, err = jsonobj.Int(v)
			return err
		}
		return nil
	})
	return sp, err
}

// decodeContextWindow reads the contextWindow of a request/context.
func decodeContextWindow(raw []byte) (*int64, error) {
	var w *int64
	err := jsonobj.Members(raw, func(name string, v jsontext.Value) error {
		if name == "contextWindow" {
			var err error
			w, err = jsonobj.Int(v)
			return err
		}
		return nil
	})
	return w, err
}
