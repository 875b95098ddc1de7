package meter

import (
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/surface"
)

// Error is the error of an event the meter cannot fold, or of a
// measurement asked of a meter stopped at such an event.
type Error struct {
	Seq  int64
	Type string
	Msg  string

	// load marks a failure to load a restored node's content: the event
	// itself is fine, so the meter does not stop at it.
	load bool
}

func (e *Error) Error() string {
	return fmt.Sprintf("token meter: seq %d (%s): %s", e.Seq, e.Type, e.Msg)
}

func errorf(e *surface.Event, format string, args ...any) *Error {
	return &Error{Seq: e.Seq, Type: e.Type, Msg: fmt.Sprintf(format, args...)}
}

// stepRef is a turn/step pair.
type stepRef struct{ turn, step int64 }

// surfaceData is what the meter reads from a surface event.
type surfaceData struct {
	kind    nodeKind
	at      stepRef
	hasStep bool
	content []byte // the message's content array
	// blocks is content decoded, when the scanner decoded it with the data.
	blocks []surface.Block
	stream jsontext.Value
	usage  *surface.Usage
}

type messageWire struct {
	Content jsontext.Value `json:"content"`
}

type stepMessageWire struct {
	Turn    *int64         `json:"turn"`
	Step    *int64         `json:"step"`
	Message *messageWire   `json:"message"`
	Stream  jsontext.Value `json:"stream"`
	Usage   *surface.Usage `json:"usage"`
}

type stepWire struct {
	Turn *int64 `json:"turn"`
	Step *int64 `json:"step"`
}

// lazy returns the content's blocks, decoded at most once.
func (d *surfaceData) lazy() *lazyBlocks {
	return &lazyBlocks{raw: d.content, blocks: d.blocks, done: d.blocks != nil}
}

// readSurface decodes the parts of a surface event's data the meter prices.
func readSurface(e *surface.Event, k nodeKind) (surfaceData, *Error) {
	if d, ok := scanSurface(e.Data, k); ok {
		return d, nil
	}
	return decodeSurface(e, k)
}

// decodeSurface is readSurface with the reflection-based decoder.
func decodeSurface(e *surface.Event, k nodeKind) (surfaceData, *Error) {
	d := surfaceData{kind: k}
	var content jsontext.Value
	if k == kindUser {
		var m messageWire
		if err := json.Unmarshal(e.Data, &m); err != nil {
			return d, errorf(e, "data is not a message: %v", err)
		}
		content = m.Content
	} else {
		var w stepMessageWire
		if err := json.Unmarshal(e.Data, &w); err != nil {
			return d, errorf(e, "data does not hold a message: %v", err)
		}
		if w.Message == nil {
			return d, errorf(e, "data.message is missing")
		}
		content, d.stream, d.usage = w.Message.Content, w.Stream, w.Usage
		if w.Turn != nil && w.Step != nil {
			d.at, d.hasStep = stepRef{*w.Turn, *w.Step}, true
		}
	}
	if content.Kind() != '[' {
		return d, errorf(e, "message content must be an array")
	}
	d.content = content
	return d, nil
}

// readStep decodes the {turn, step} of a step/start or step/end.
func readStep(e *surface.Event) (stepRef, *Error) {
	if r, ok := scanStep(e.Data); ok {
		return r, nil
	}
	return decodeStep(e)
}

// decodeStep is readStep with the reflection-based decoder.
func decodeStep(e *surface.Event) (stepRef, *Error) {
	var w stepWire
	if err := json.Unmarshal(e.Data, &w); err != nil {
		return stepRef{}, errorf(e, "data is not {turn, step}: %v", err)
	}
	if w.Turn == nil || w.Step == nil {
		return stepRef{}, errorf(e, "%s needs data.turn and data.step", e.Type)
	}
	return stepRef{*w.Turn, *w.Step}, nil
}

// readHeader decodes a request/header as its canonical header.
func readHeader(e *surface.Event) (*surface.Header, *Error) {
	h, err := surface.FoldHeader([]surface.Event{*e}, nil)
	if err != nil {
		return nil, errorf(e, "unreadable request header: %v", err)
	}
	if h == nil {
		return nil, errorf(e, "request/header holds no header")
	}
	return h, nil
}

// readContent decodes a message's content array.
func readContent(raw []byte) ([]surface.Block, error) {
	if blocks, ok := scanContent(raw); ok {
		return blocks, nil
	}
	return decodeContent(raw)
}

// decodeContent is readContent with the reflection-based decoder.
func decodeContent(raw []byte) ([]surface.Block, error) {
	var blocks []surface.Block
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("message content is unreadable: %w", err)
	}
	return blocks, nil
}

// absent reports a JSON member that is missing or null.
func absent(v jsontext.Value) bool { return len(v) == 0 || v.Kind() == 'n' }
