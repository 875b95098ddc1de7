package surface

import (
	"bytes"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
)

// Request header reasons (7.2).
const (
	ReasonInitial = "initial"
	ReasonResume  = "resume"
	ReasonChange  = "change"
	ReasonSeries  = "series"
)

// CallConfig is the model-call configuration of a request (LlmCallConfig).
type CallConfig struct {
	Provider        string   `json:"provider"`
	Model           string   `json:"model"`
	ReasoningEffort string   `json:"reasoningEffort,omitzero"`
	Temperature     *float64 `json:"temperature,omitzero"`
	MaxTokens       *int64   `json:"maxTokens,omitzero"`
	Stop            []string `json:"stop,omitzero"`
}

// AdapterDefaults marks config fields materialized from the model adapter's
// defaults rather than proposed by the caller.
type AdapterDefaults struct {
	ReasoningEffort bool `json:"reasoningEffort,omitzero"`
	MaxTokens       bool `json:"maxTokens,omitzero"`
}

// Header is the request header (EpochHeader): everything of a request that is
// not a message. It has no system field: the prompt lives on the surface.
// Tools are JSON tool schemas, compared by their bytes.
type Header struct {
	Config          CallConfig       `json:"config"`
	AdapterDefaults *AdapterDefaults `json:"adapterDefaults,omitzero"`
	Tools           []jsontext.Value `json:"tools,omitzero"`
}

// EpochHeader is the reference name of Header.
type EpochHeader = Header

// Canonical returns h with adapterDefaults dropped unless a marker is true
// and tools dropped when empty (7.1).
func (h Header) Canonical() Header {
	if h.AdapterDefaults != nil && !h.AdapterDefaults.ReasoningEffort && !h.AdapterDefaults.MaxTokens {
		h.AdapterDefaults = nil
	}
	if len(h.Tools) == 0 {
		h.Tools = nil
	}
	return h
}

// Equal reports whether h and o are equal headers (headerEquals): config
// field-wise, adapter-default markers, tools in order by their JSON bytes.
func (h Header) Equal(o Header) bool {
	a, b := h.Config, o.Config
	if a.Provider != b.Provider || a.Model != b.Model || a.ReasoningEffort != b.ReasoningEffort {
		return false
	}
	if !eqPtr(a.Temperature, b.Temperature) || !eqPtr(a.MaxTokens, b.MaxTokens) {
		return false
	}
	if (a.Stop == nil) != (b.Stop == nil) || !slices.Equal(a.Stop, b.Stop) {
		return false
	}
	var da, db AdapterDefaults
	if h.AdapterDefaults != nil {
		da = *h.AdapterDefaults
	}
	if o.AdapterDefaults != nil {
		db = *o.AdapterDefaults
	}
	if da != db {
		return false
	}
	return slices.EqualFunc(h.Tools, o.Tools, func(x, y jsontext.Value) bool { return bytes.Equal(x, y) })
}

func eqPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func (w *headerWire) check() (Header, string) {
	if w == nil {
		return Header{}, "data.header must be an object"
	}
	if w.System != nil {
		return Header{}, "header.system is not allowed in format v3: use system/message"
	}
	if w.Config == nil || w.Config.Provider == "" || w.Config.Model == "" {
		return Header{}, "header.config needs a non-empty provider and model"
	}
	h := Header{Config: *w.Config}
	if len(w.Tools) > 0 {
		if w.Tools.Kind() != '[' {
			return Header{}, "header.tools must be an array of tool schemas"
		}
		h.Tools = []jsontext.Value{}
		elements(w.Tools, func(v []byte) bool {
			h.Tools = append(h.Tools, bytes.Clone(v))
			return true
		})
		if len(h.Tools) == 0 {
			return Header{}, "header.tools, when present, must be non-empty"
		}
	}
	if len(w.AdapterDefaults) > 0 {
		switch w.AdapterDefaults.Kind() {
		case '{':
		case 'n':
			return Header{}, "header.adapterDefaults, when present, must be non-empty"
		default:
			return Header{}, "header.adapterDefaults must be an object"
		}
		h.AdapterDefaults = &AdapterDefaults{}
		bad := ""
		members(w.AdapterDefaults, func(key, v []byte) bool {
			k := str(key)
			switch {
			case kindOf(v) != 't':
				bad = "header.adapterDefaults." + k + " must be exactly true"
			case k == "reasoningEffort" && h.Config.ReasoningEffort == "":
				bad = "header.adapterDefaults marks reasoningEffort, which config lacks"
			case k == "reasoningEffort":
				h.AdapterDefaults.ReasoningEffort = true
			case k == "maxTokens" && h.Config.MaxTokens == nil:
				bad = "header.adapterDefaults marks maxTokens, which config lacks"
			case k == "maxTokens":
				h.AdapterDefaults.MaxTokens = true
			default:
				bad = "header.adapterDefaults has unknown key " + quote(k)
			}
			return bad == ""
		})
		if bad != "" {
			return Header{}, bad
		}
		if !h.AdapterDefaults.ReasoningEffort && !h.AdapterDefaults.MaxTokens {
			return Header{}, "header.adapterDefaults, when present, must be non-empty"
		}
	}
	return h.Canonical(), ""
}

// HeaderEvent is the data of a request/header event.
type HeaderEvent struct {
	Header       Header `json:"header"`
	Reason       string `json:"reason"`
	StartsSeries bool   `json:"startsSeries,omitzero"`
}

// FoldHeader returns the canonical header of the last request/header event in
// events, or from when there is none (foldRequestHeader).
func FoldHeader(events []Event, from *Header) (*Header, error) {
	h := from
	for i := range events {
		if events[i].Type != TypeRequestHeader {
			continue
		}
		p, err := parsePayload(&events[i])
		if err != nil {
			return nil, err
		}
		h = p.header
	}
	return h, nil
}

// DecodeHeader decodes a request header from b, which must hold exactly
// one JSON value, an object or null (the zero value): what json.Unmarshal into a Header reads, read
// without reflection (a plugin that decodes headers with it does not link
// the reflective decoder). Members it does not know are ignored and null
// leaves a field zero; it does not check the header's rules (admission
// does, 7.1).
func DecodeHeader(b []byte) (Header, error) {
	var h Header
	if err := checkValue(b); err != nil {
		return h, err
	}
	raw := trimSpace(b)
	switch kindOf(raw) {
	case 'n':
		return h, nil
	case '{':
	default:
		return h, wireErr("header", "an object or null", raw)
	}
	var w headerWire
	if err := w.decode(raw); err != nil {
		return h, err
	}
	if w.Config != nil {
		h.Config = *w.Config
	}
	switch kindOf(w.AdapterDefaults) {
	case 0, 'n':
	case '{':
		h.AdapterDefaults = &AdapterDefaults{}
		var err error
		members(w.AdapterDefaults, func(k, v []byte) bool {
			var dst *bool
			switch string(name(k)) {
			case "reasoningEffort":
				dst = &h.AdapterDefaults.ReasoningEffort
			case "maxTokens":
				dst = &h.AdapterDefaults.MaxTokens
			default:
				return true
			}
			switch kindOf(v) {
			case 't':
				*dst = true
			case 'f':
				*dst = false
			case 'n':
			default:
				err = wireErr("header.adapterDefaults."+str(k), "a boolean or null", v)
			}
			return err == nil
		})
		if err != nil {
			return Header{}, err
		}
	default:
		return Header{}, wireErr("header.adapterDefaults", "an object or null", w.AdapterDefaults)
	}
	switch kindOf(w.Tools) {
	case 0, 'n':
	case '[':
		h.Tools = []jsontext.Value{}
		elements(w.Tools, func(v []byte) bool {
			h.Tools = append(h.Tools, bytes.Clone(v))
			return true
		})
	default:
		return Header{}, wireErr("header.tools", "an array or null", w.Tools)
	}
	return h, nil
}
