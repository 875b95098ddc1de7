package llm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// StreamVersion is the version of the stream record format.
const StreamVersion = 1

// The stream record is the compact, timed, lossless form of one attempt's
// provider stream, stored in assistant/message.stream and
// assistant/attempt.stream. The format is the same for every API: an
// attempt of the Anthropic or Gemini adapter has "api":"anthropic" or
// "api":"gemini" right after "v" (none means the OpenAI-compatible
// protocol), and its chunks are that API's payloads (Anthropic's with
// their event names); "done" is then the time of message_stop (Anthropic)
// or of the end of the stream after a finishReason (Gemini). "enc" is the
// version of the encoder that wrote the request body (EncoderVersion;
// none means version 1, the records written before the member existed).
// A streamed reply:
//
//	{"v":1,"enc":2,"sent":<unix ms>,"chunks":[[<ms>,<chunk>],[<ms>,<chunk>,"<event>"],...],"first":<ms>,"done":<ms>}
//
// a refused request:
//
//	{"v":1,"enc":2,"sent":<unix ms>,"status":429,"headers":{"Retry-After":"2"},"body":<JSON or string>,
//	 "error":{"t":<ms>,"code":"RATE_LIMIT","message":"..."}}
//
// Times are whole milliseconds since the request was sent, except "sent":
// the instant the client dispatched the request, in Unix milliseconds
// (the offline model, which sends nothing, writes none). "first" is the
// time of the first content delta, the first payload that delivered text,
// reasoning or a piece of a tool call (its id, name or arguments): the
// time to first token. It is absent when no content arrived, and in
// records written before the member existed. "chunks" holds
// every SSE data payload in arrival order, verbatim when it is valid JSON
// and as a JSON string otherwise; a third element names the SSE event when
// the server named it. Comments and keepalives carry nothing and are not
// kept. "done" is the time of the [DONE] sentinel (or of the whole body,
// when a server ignored stream:true and sent one chat.completion, recorded
// as the single chunk). "status", "headers" (Retry-After, Retry-After-Ms,
// Content-Type, X-Request-Id) and "body" (compacted) are present only for a
// non-2xx response. "error" is present when the attempt failed: it is how
// the attempt ended, as the client reported it; a broken stream has both
// "chunks" and "error". Members appear in the order v, api, enc, sent,
// status, headers, body, chunks, first, done, error, each only when it has
// a value. "sent" and "first" are metadata of the reply: nothing rebuilt
// from the log (a request body, a reassembled reply) reads them. The
// API key never appears: it is replaced by "[redacted]" wherever a server
// echoed it.
type recorder struct {
	b      []byte
	chunks int
	first  int64 // the first content delta's time, -1 before it
}

// newRecorder starts the record of an attempt of api whose body encoder
// version enc wrote.
func newRecorder(api API, enc int) *recorder {
	r := &recorder{b: make([]byte, 0, 1024), first: -1}
	r.b = append(r.b, `{"v":1`...)
	if api != "" && api != APIOpenAI {
		r.b = append(r.b, `,"api":`...)
		r.str(string(api))
	}
	r.b = append(r.b, `,"enc":`...)
	r.b = strconv.AppendInt(r.b, int64(enc), 10)
	return r
}

// dispatched records the instant the request was sent; it comes before
// anything the response brings.
func (r *recorder) dispatched(t time.Time) {
	r.b = append(r.b, `,"sent":`...)
	r.b = strconv.AppendInt(r.b, t.UnixMilli(), 10)
}

// delivered notes the time of a payload, the first content delta when
// content says the payload delivered some and none came before.
func (r *recorder) delivered(ms int64, content bool) {
	if content && r.first < 0 {
		r.first = ms
	}
}

// response records a non-2xx response.
func (r *recorder) response(status int, h http.Header, body []byte) {
	r.b = append(r.b, `,"status":`...)
	r.b = strconv.AppendInt(r.b, int64(status), 10)
	first := true
	for _, k := range []string{"Retry-After", "Retry-After-Ms", "Content-Type", "X-Request-Id", "Request-Id"} {
		v := h.Get(k)
		if v == "" {
			continue
		}
		if first {
			r.b = append(r.b, `,"headers":{`...)
			first = false
		} else {
			r.b = append(r.b, ',')
		}
		r.str(http.CanonicalHeaderKey(k))
		r.b = append(r.b, ':')
		r.str(v)
	}
	if !first {
		r.b = append(r.b, '}')
	}
	r.b = append(r.b, `,"body":`...)
	if jsontext.Value(body).IsValid() && len(body) > 0 {
		c, err := jsontext.AppendFormat(nil, body)
		if err == nil {
			r.b = append(r.b, c...)
			return
		}
	}
	r.str(string(sanitize(body)))
}

func (r *recorder) str(s string) {
	r.b, _ = jsontext.AppendQuote(r.b, s)
}

// chunk records one data payload.
func (r *recorder) chunk(ms int64, p []byte, isJSON bool, name string) {
	if r.chunks == 0 {
		r.b = append(r.b, `,"chunks":[`...)
	} else {
		r.b = append(r.b, ',')
	}
	r.chunks++
	r.b = append(r.b, '[')
	r.b = strconv.AppendInt(r.b, ms, 10)
	r.b = append(r.b, ',')
	if isJSON {
		r.b = append(r.b, p...)
	} else {
		r.str(string(p))
	}
	if name != "" {
		r.b = append(r.b, ',')
		r.str(name)
	}
	r.b = append(r.b, ']')
}

func (r *recorder) closeChunks() {
	if r.chunks > 0 {
		r.b = append(r.b, ']')
		r.chunks = -1
	}
}

// finish closes the record; done < 0 means no [DONE] was received.
func (r *recorder) finish(done int64, failure *Error, failMS int64) jsontext.Value {
	r.closeChunks()
	if r.first >= 0 {
		r.b = append(r.b, `,"first":`...)
		r.b = strconv.AppendInt(r.b, r.first, 10)
	}
	if done >= 0 {
		r.b = append(r.b, `,"done":`...)
		r.b = strconv.AppendInt(r.b, done, 10)
	}
	if failure != nil {
		r.b = append(r.b, `,"error":{"t":`...)
		r.b = strconv.AppendInt(r.b, failMS, 10)
		r.b = append(r.b, `,"code":`...)
		r.str(failure.Code)
		r.b = append(r.b, `,"message":`...)
		r.str(failure.Error())
		r.b = append(r.b, '}')
	}
	r.b = append(r.b, '}')
	return jsontext.Value(r.b)
}

// StreamInfo is what a stream record says about how its attempt ended.
type StreamInfo struct {
	// API is the protocol of the recorded payloads: the record's "api"
	// member, empty for the OpenAI-compatible protocol.
	API API
	// Encoder is the version of the encoder that wrote the request body:
	// the record's "enc" member, 1 when it has none.
	Encoder int
	// Status is the HTTP status of a non-2xx response, else 0.
	Status int
	// Done reports that the [DONE] sentinel arrived.
	Done bool
	// Chunks counts the recorded data payloads.
	Chunks int
	// Code is the error code of a failed attempt, else "".
	Code string
	// Message is the recorded error message of a failed attempt.
	Message string
}

// Timing is when an attempt was sent and when its reply began, as its
// stream record says.
type Timing struct {
	// Sent is the instant the request was dispatched, in Unix
	// milliseconds; 0 when the record does not say (the offline model,
	// records written before the member existed).
	Sent int64
	// First is the time to first token: milliseconds from the dispatch to
	// the first content delta; -1 when unknown (no content arrived, or
	// the record predates the member).
	First int64
}

// TimingOf reads the record's "sent" and "first" members without
// replaying its chunks; a record it cannot read has an unknown timing.
func TimingOf(stream jsontext.Value) Timing {
	t := Timing{First: -1}
	dec := jsontext.NewDecoder(bytes.NewReader(stream), jsontext.AllowDuplicateNames(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return t
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return Timing{First: -1}
		}
		key := tok.String()
		if key != "sent" && key != "first" {
			if dec.SkipValue() != nil {
				return Timing{First: -1}
			}
			continue
		}
		v, err := dec.ReadValue()
		if err != nil {
			return Timing{First: -1}
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || n < 0 {
			continue
		}
		if key == "sent" {
			t.Sent = n
		} else {
			t.First = n
		}
	}
	return t
}

// Reassemble rebuilds a reply from a stream record: the output blocks,
// usage and finish reason exactly as the model that produced the record
// returned them, and Stream set to stream. It reads no network and is what
// the token meter uses to price provider output.
func Reassemble(stream jsontext.Value) (*Result, error) {
	r, _, err := ReassembleInfo(stream)
	return r, err
}

// ReassembleInfo is Reassemble that also reports how the attempt ended.
func ReassembleInfo(stream jsontext.Value) (*Result, StreamInfo, error) {
	var a assembler
	info, err := walkRecord(stream, &a)
	if err != nil {
		return nil, info, err
	}
	res := a.result(info.Done)
	res.Stream = stream
	return res, info, nil
}

// FinishOf is ReassembleInfo for a caller that needs only the finish
// reason: it returns the FinishReason of ReassembleInfo's result, the
// same StreamInfo and the same error, and skips the payloads of an
// OpenAI-compatible record that cannot bear on the finish (see
// assembler.finishOnly) and the assembly of the content.
func FinishOf(stream jsontext.Value) (FinishReason, StreamInfo, error) {
	a := assembler{finishOnly: true}
	info, err := walkRecord(stream, &a)
	if err != nil {
		return "", info, err
	}
	return a.finishReason(info.Done), info, nil
}

// walkRecord reads a stream record's members into info and replays its
// chunks into a.
func walkRecord(stream jsontext.Value, a *assembler) (StreamInfo, error) {
	info := StreamInfo{Encoder: encoderV1}
	// Payloads are checked strictly when replayed; the outer walk need not
	// track member names too.
	dec := jsontext.NewDecoder(bytes.NewReader(stream), jsontext.AllowDuplicateNames(true))
	bad := func(err error) (StreamInfo, error) {
		return info, fmt.Errorf("llm: stream record is not readable: %w", err)
	}
	if tok, err := dec.ReadToken(); err != nil {
		return bad(err)
	} else if tok.Kind() != '{' {
		return info, errors.New("llm: stream record is not a JSON object")
	}
	version := -1
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return bad(err)
		}
		key := tok.String()
		switch key {
		case "v", "enc", "status", "done":
			v, err := dec.ReadValue()
			if err != nil {
				return bad(err)
			}
			n, err := strconv.Atoi(string(v))
			if err != nil {
				return info, fmt.Errorf("llm: stream record member %q is %s, not an integer", key, v)
			}
			switch key {
			case "v":
				version = n
			case "enc":
				if n < encoderV1 {
					return info, fmt.Errorf("llm: stream record member \"enc\" is %d, not an encoder version", n)
				}
				info.Encoder = n
			case "status":
				info.Status = n
			default:
				info.Done = true
			}
		case "api":
			v, err := dec.ReadValue()
			if err != nil {
				return bad(err)
			}
			var s string
			if json.Unmarshal(v, &s) != nil {
				return info, fmt.Errorf("llm: stream record member \"api\" is %s, not a string", v)
			}
			api, err := ParseAPI(s)
			if err != nil || api == APIOpenAI {
				return info, fmt.Errorf("llm: stream record names API %q, which this build cannot read", s)
			}
			if info.Chunks > 0 {
				return info, errors.New(`llm: stream record member "api" follows its chunks`)
			}
			a.api, info.API = api, api
		case "chunks":
			if err := replayChunks(dec, a, &info); err != nil {
				return info, err
			}
		case "error":
			v, err := dec.ReadValue()
			if err != nil {
				return bad(err)
			}
			var e struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(v, &e); err != nil {
				return info, fmt.Errorf("llm: stream record error member: %w", err)
			}
			info.Code, info.Message = e.Code, e.Message
		default:
			if err := dec.SkipValue(); err != nil {
				return bad(err)
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return bad(err)
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return info, errors.New("llm: stream record has data after its object")
	}
	switch version {
	case StreamVersion:
	case -1:
		return info, errors.New(`llm: stream record has no "v" member`)
	default:
		return info, fmt.Errorf("llm: stream record version %d is not supported (want %d)", version, StreamVersion)
	}
	return info, nil
}

// chunkShapeError says that chunk i of a record is malformed.
type chunkShapeError int

func (i chunkShapeError) Error() string {
	return fmt.Sprintf("llm: stream record chunk %d is not [ms, payload] or [ms, payload, event]", int(i))
}

// replayChunks reads the "chunks" array into a.
func replayChunks(dec *jsontext.Decoder, a *assembler, info *StreamInfo) error {
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return errors.New(`llm: stream record "chunks" is not an array`)
	}
	var name, text []byte
	for i := 0; dec.PeekKind() != ']'; i++ {
		shape := chunkShapeError(i)
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
			return shape
		}
		if t, err := dec.ReadValue(); err != nil || t.Kind() != '0' {
			return shape
		}
		if dec.PeekKind() == ']' {
			return shape
		}
		p, err := dec.ReadValue()
		if err != nil {
			return shape
		}
		isJSON := p.Kind() != '"'
		if !isJSON {
			if text, err = jsontext.AppendUnquote(text[:0], p); err != nil {
				return fmt.Errorf("llm: stream record chunk %d: %w", i, err)
			}
			p = text
		} else {
			text = append(text[:0], p...)
			p = text
		}
		name = name[:0]
		if dec.PeekKind() != ']' {
			n, err := dec.ReadValue()
			if err != nil || n.Kind() != '"' {
				return fmt.Errorf("llm: stream record chunk %d has a non-string event name", i)
			}
			name, _ = jsontext.AppendUnquote(name, n)
		}
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != ']' {
			return shape
		}
		a.replay(p, isJSON, string(name))
		info.Chunks++
	}
	_, err := dec.ReadToken()
	return err
}
