package meter

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/sdk/jsonobj"
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

// decodeSurface is readSurface for the data the scanner leaves to a
// full decoder: members read with jsonobj, unknown members skipped.
func decodeSurface(e *surface.Event, k nodeKind) (surfaceData, *Error) {
	d := surfaceData{kind: k}
	var content jsontext.Value
	if k == kindUser {
		var err error
		if content, err = MessageContent(e.Data); err != nil {
			return d, errorf(e, "data is not a message: %v", err)
		}
	} else {
		var turn, step *int64
		var msg bool
		err := jsonobj.Members(e.Data, func(name string, v jsontext.Value) (err error) {
			switch name {
			case "turn":
				turn, err = jsonobj.Int(v)
			case "step":
				step, err = jsonobj.Int(v)
			case "message":
				msg = v.Kind() != 'n'
				content, err = MessageContent(v)
			case "stream":
				d.stream = bytes.Clone(v)
			case "usage":
				d.usage, err = decodeUsage(v)
			}
			return err
		})
		if err != nil {
			return d, errorf(e, "data does not hold a message: %v", err)
		}
		if !msg {
			return d, errorf(e, "data.message is missing")
		}
		if turn != nil && step != nil {
			d.at, d.hasStep = stepRef{*turn, *step}, true
		}
	}
	if content.Kind() != '[' {
		return d, errorf(e, "message content must be an array")
	}
	d.content = content
	return d, nil
}

// MessageContent returns the raw content member of a message object (nil when
// absent or when raw is null).
func MessageContent(raw []byte) (jsontext.Value, error) {
	var content jsontext.Value
	err := jsonobj.Members(raw, func(name string, v jsontext.Value) error {
		if name == "content" {
			content = bytes.Clone(v) // v lives as long as the callback
		}
		return nil
	})
	return content, err
}

// decodeUsage reads a usage sample; null is nil.
func decodeUsage(raw jsontext.Value) (*surface.Usage, error) {
	if raw.Kind() == 'n' {
		return nil, nil
	}
	u := new(surface.Usage)
	err := jsonobj.Members(raw, func(name string, v jsontext.Value) error {
		var p *int64
		switch name {
		case "inputTokens":
			p = &u.Input
		case "outputTokens":
			p = &u.Output
		case "cacheReadTokens":
			p = &u.CacheRead
		case "cacheWriteTokens":
			p = &u.CacheWrite
		case "reasoningTokens":
			p = &u.Reasoning
		default:
			return nil
		}
		n, err := jsonobj.Int(v)
		*p = 0
		if n != nil {
			*p = *n
		}
		return err
	})
	return u, err
}

// readStep decodes the {turn, step} of a step/start or step/end.
func readStep(e *surface.Event) (stepRef, *Error) {
	if r, ok := scanStep(e.Data); ok {
		return r, nil
	}
	return decodeStep(e)
}

// decodeStep is readStep for the data the scanner leaves to a full
// decoder.
func decodeStep(e *surface.Event) (stepRef, *Error) {
	var turn, step *int64
	err := jsonobj.Members(e.Data, func(name string, v jsontext.Value) (err error) {
		switch name {
		case "turn":
			turn, err = jsonobj.Int(v)
		case "step":
			step, err = jsonobj.Int(v)
		}
		return err
	})
	if err != nil {
		return stepRef{}, errorf(e, "data is not {turn, step}: %v", err)
	}
	if turn == nil || step == nil {
		return stepRef{}, errorf(e, "%s needs data.turn and data.step", e.Type)
	}
	return stepRef{*turn, *step}, nil
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

// decodeContent is readContent for the content the scanner leaves to a
// full decoder: a JSON array of blocks (null is no blocks), each read by
// surface.Block.
func decodeContent(raw []byte) ([]surface.Block, error) {
	blocks, err := decodeBlocks(raw)
	if err != nil {
		return nil, errors.New("message content is unreadable: " + err.Error())
	}
	return blocks, nil
}

func decodeBlocks(raw []byte) ([]surface.Block, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	var blocks []surface.Block
	switch dec.PeekKind() {
	case 'n':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		blocks = []surface.Block{}
		for dec.PeekKind() != ']' {
			var b surface.Block
			if err := b.UnmarshalJSONFrom(dec); err != nil {
				return nil, err
			}
			blocks = append(blocks, b)
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
	default:
		if _, err := dec.ReadValue(); err != nil {
			return nil, err
		}
		return nil, errors.New("not a JSON array")
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = errors.New("trailing data after the JSON value")
		}
		return nil, err
	}
	return blocks, nil
}

// absent reports a JSON member that is missing or null.
func absent(v jsontext.Value) bool { return len(v) == 0 || v.Kind() == 'n' }
