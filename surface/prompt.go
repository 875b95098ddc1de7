package surface

import (
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// PromptOptions are the inputs of a system-prompt projection besides the
// rendered text (6.3, 6.4).
type PromptOptions struct {
	// InHistory is true when the prepared route reads the latest system
	// message at any position as the effective prompt.
	InHistory bool
	// StartsSeries is true when the request about to be built starts a new
	// prompt-cache series.
	StartsSeries bool
	// Plugin is the system-prompt provider's id, recorded as the source.
	Plugin string
	// NewID returns a fresh message id.
	NewID func() string
}

// PromptCommit is one system/message the loop appends, in order.
type PromptCommit struct {
	Message Message
	Op      Op
	Sources []int64
}

type systemNode struct {
	seq    int64
	text   string
	opaque bool // multi-block or non-text content: equal to no render
}

func (n systemNode) equals(s string) bool { return !n.opaque && n.text == s }
func (n systemNode) empty() bool          { return !n.opaque && n.text == "" }

// ProjectSystemPrompt decides how the rendered prompt reaches the surface
// (SystemPromptProjection). It reads the current surface and returns zero or
// more commits: an append when no system/message survives (even for an
// empty render, which reserves the head); otherwise, in replacement mode,
// empty-content replaces of later non-empty system nodes followed by a
// replace of the first surviving system node when its text differs; on the
// in-history route with a continuing series, an append when the latest
// effective prompt differs. It changes nothing.
func (l *Log) ProjectSystemPrompt(rendered string, o PromptOptions) []PromptCommit {
	var nodes []systemNode
	for _, n := range l.fold.nodes {
		if n.kind != KindSystem {
			continue
		}
		m := l.message(n.seq - l.fold.base)
		sn := systemNode{seq: n.seq}
		switch {
		case len(m.Content) == 0:
		case len(m.Content) == 1 && m.Content[0].Type == BlockText:
			sn.text = m.Content[0].Text
		default:
			sn.opaque = true
		}
		nodes = append(nodes, sn)
	}
	if len(nodes) == 0 {
		return []PromptCommit{newPrompt(rendered, Append, nil, o)}
	}
	head := nodes[0]
	if !o.InHistory || o.StartsSeries || rendered == "" {
		var out []PromptCommit
		for _, n := range nodes[1:] {
			if !n.empty() {
				out = append(out, newPrompt("", Replace(n.seq, n.seq), []int64{n.seq}, o))
			}
		}
		if !head.equals(rendered) {
			out = append(out, newPrompt(rendered, Replace(head.seq, head.seq), []int64{head.seq}, o))
		}
		return out
	}
	latest := head
	for _, n := range nodes {
		if !n.empty() {
			latest = n
		}
	}
	if latest.equals(rendered) {
		return nil
	}
	return []PromptCommit{newPrompt(rendered, Append, nil, o)}
}

func newPrompt(text string, op Op, sources []int64, o PromptOptions) PromptCommit {
	return PromptCommit{Message: SystemMessage(o.NewID(), o.Plugin, text), Op: op, Sources: sources}
}

// SystemMessage returns a system message from plugin holding text: content
// is empty for "" and exactly one text block otherwise.
func SystemMessage(id, plugin, text string) Message {
	content := []Block{}
	if text != "" {
		content = []Block{Text(text)}
	}
	return Message{ID: id, Role: RoleSystem, Source: Source{Kind: "plugin", Plugin: plugin}, Content: content}
}

// StepMessage is the data of system/message, assistant/message and
// tool/result events: a message inside a turn's step.
type StepMessage struct {
	Turn        int64          `json:"turn"`
	Step        int64          `json:"step"`
	Message     Message        `json:"message"`
	Stream      jsontext.Value `json:"stream,omitzero"`
	Usage       *Usage         `json:"usage,omitzero"`
	Interrupted bool           `json:"interrupted,omitzero"`
	Error       *ToolError     `json:"error,omitzero"`
	Meta        jsontext.Value `json:"meta,omitzero"`
}

// Usage is provider-reported token usage. Buckets are disjoint: Input is
// uncached input; Reasoning is already inside Output.
type Usage struct {
	Input      int64 `json:"inputTokens"`
	Output     int64 `json:"outputTokens"`
	CacheRead  int64 `json:"cacheReadTokens,omitzero"`
	CacheWrite int64 `json:"cacheWriteTokens,omitzero"`
	Reasoning  int64 `json:"reasoningTokens,omitzero"`
}

// DecodeUsage decodes token usage from b, which must hold exactly one JSON
// value, an object: what json.Unmarshal into a Usage reads, read without
// reflection. Members it does not know are ignored; null leaves a count 0.
func DecodeUsage(b []byte) (Usage, error) {
	var u Usage
	if err := checkValue(b); err != nil {
		return u, err
	}
	raw := trimSpace(b)
	switch kindOf(raw) {
	case 'n':
		return u, nil
	case '{':
	default:
		return u, wireErr("usage", "an object or null", raw)
	}
	var err error
	members(raw, func(k, v []byte) bool {
		var dst *int64
		switch string(name(k)) {
		case "inputTokens":
			dst = &u.Input
		case "outputTokens":
			dst = &u.Output
		case "cacheReadTokens":
			dst = &u.CacheRead
		case "cacheWriteTokens":
			dst = &u.CacheWrite
		case "reasoningTokens":
			dst = &u.Reasoning
		default:
			return true
		}
		switch kindOf(v) {
		case 'n':
		case '0':
			n, perr := strconv.ParseInt(string(v), 10, 64)
			if perr != nil {
				err = &wireError{Member: "usage." + str(k), Want: "an integer within the int64 range", Got: '0'}
			}
			*dst = n
		default:
			err = wireErr("usage."+str(k), "an integer or null", v)
		}
		return err == nil
	})
	if err != nil {
		return Usage{}, err
	}
	return u, nil
}

// MarshalJSONTo writes u as its struct tags say (the counts after the
// first two only when not zero), without reflection.
func (u Usage) MarshalJSONTo(enc *jsontext.Encoder) error {
	w := writer{enc: enc}
	w.tok(jsontext.BeginObject)
	w.int("inputTokens", u.Input)
	w.int("outputTokens", u.Output)
	for _, c := range [...]struct {
		name string
		n    int64
	}{{"cacheReadTokens", u.CacheRead}, {"cacheWriteTokens", u.CacheWrite}, {"reasoningTokens", u.Reasoning}} {
		if c.n != 0 {
			w.int(c.name, c.n)
		}
	}
	w.tok(jsontext.EndObject)
	return w.err
}

// Total is input + cache read + cache write + output.
func (u Usage) Total() int64 { return u.Input + u.CacheRead + u.CacheWrite + u.Output }

// ToolError is the error of a failed tool/result.
type ToolError struct {
	Name   string `json:"name"`
	Code   string `json:"code"`
	Reason string `json:"reason,omitzero"`
}

// Data encodes v as event data: deterministic JSON. It fails for values
// that have no lossless JSON form (NaN, infinities, channels, functions).
// It is the one function of the package that uses json's reflection, and
// nothing else in the package calls it: a plugin that does not call it
// does not link the reflective marshaler. Messages and blocks encode
// without reflection (Message.MarshalJSONTo, AppendMessage).
func Data(v any) ([]byte, error) {
	return json.Marshal(v, json.Deterministic(true))
}
