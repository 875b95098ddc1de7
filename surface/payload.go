package surface

import (
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// payload is what admission learns from an event's data: the turn/step
// numbers the enclosure checker needs, the shape facts the fold needs, and
// for surface events the raw message, decoded on first use.
type payload struct {
	msgRaw     []byte   // surface events: the message object within Data
	msg        *Message // decoded msgRaw, nil until first read
	turn, step int64    // 0 when absent
	hasTurn    bool
	hasStep    bool
	calls      int32        // tool-call blocks of an assistant message
	header     *EpochHeader // request/header
	callID     string       // tool/call, tool/result
	errCode    string       // tool/result error.code
}

// parsePayload validates e's data as lossless JSON and checks it against
// the rules of section 3.3 for e's type, in one pass over the bytes.
func parsePayload(e *Event) (payload, *Error) {
	ps := &parser{b: e.Data}
	f := ps.scanData(e.Type)
	if ps.err == "" && ps.peek() != 0 {
		ps.fail(RuleEnvelope, "data after the JSON object")
	}
	if ps.err != "" {
		return payload{}, dataError(e, ps)
	}
	return payloadFrom(e, &f)
}

// dataError reports data that is not one lossless JSON object.
func dataError(e *Event, ps *parser) *Error {
	if len(e.Data) == 0 {
		return errorf(e.Seq, e.Type, RuleEnvelope, "missing data")
	}
	if ps.rule == RuleEnvelope && ps.err == errNotObject {
		return errorf(e.Seq, e.Type, RuleEnvelope, "data is not an object")
	}
	return errorf(e.Seq, e.Type, RuleLossless, "data is not valid lossless JSON: %s at byte %d", ps.err, ps.at)
}

const errNotObject = "data is not an object"

// payloadFrom applies the type-specific rules to scanned data.
func payloadFrom(e *Event, f *dataFacts) (payload, *Error) {
	p := payload{turn: f.turn, step: f.step, hasTurn: f.hasTurn, hasStep: f.hasStep}
	bad := func(format string, args ...any) (payload, *Error) {
		return payload{}, errorf(e.Seq, e.Type, RulePayload, format, args...)
	}
	if f.numErr != "" {
		return bad("%s", f.numErr)
	}
	m := &f.msg
	switch e.Type {
	case TypeUserMessage, TypeSystemMessage, TypeAssistantMessage, TypeToolResult:
		if !f.hasMsg {
			return bad("data.message is missing or not an object")
		}
		if m.bad != "" {
			return bad("%s", m.bad)
		}
		role := RoleUser
		switch e.Type {
		case TypeSystemMessage:
			role = RoleSystem
		case TypeAssistantMessage:
			role = RoleAssistant
		}
		if err := m.check(role); err != "" {
			return bad("%s", err)
		}
		p.msgRaw = f.msgRaw
	}
	switch e.Type {
	case TypeSystemMessage:
		if string(m.kind) != "plugin" || len(m.plugin) == 0 {
			return bad("system message source must be {kind:\"plugin\", plugin:<id>}, got kind %q", m.kind)
		}
	case TypeAssistantMessage:
		if string(m.kind) != "model" || len(m.provider) == 0 || len(m.model) == 0 {
			return bad("assistant message source must be {kind:\"model\", provider, model}")
		}
		if f.interrupted != 0 && f.interrupted != 't' {
			return bad("interrupted must be exactly true")
		}
		p.calls = m.calls
	case TypeToolResult:
		if string(m.kind) != "tool" || len(m.callID) == 0 {
			return bad("tool result source must be {kind:\"tool\", callId}")
		}
		if m.blocks != 1 || string(m.firstType) != BlockToolResult {
			return bad("tool result content must be exactly one tool-result block")
		}
		if string(m.firstCallID) != string(m.callID) {
			return bad("tool-result block toolCallId %q differs from source callId %q", m.firstCallID, m.callID)
		}
		if f.errKind != 0 && f.errKind != 'n' && !m.firstIsError {
			return bad("a tool result with error must have isError true")
		}
		p.callID, p.errCode = string(m.callID), f.errCode
	case TypeRequestHeader:
		d, err := decodeHeaderData(e.Data)
		if err != nil {
			return payload{}, errorf(e.Seq, e.Type, RuleHeader, "data is not a request header: %v", err)
		}
		h, bad := d.Header.check()
		if bad != "" {
			return payload{}, errorf(e.Seq, e.Type, RuleHeader, "%s", bad)
		}
		if d.Reason == nil {
			return payload{}, errorf(e.Seq, e.Type, RuleHeader, "reason is missing")
		}
		switch *d.Reason {
		case ReasonInitial, ReasonResume, ReasonChange, ReasonSeries:
		default:
			return payload{}, errorf(e.Seq, e.Type, RuleHeader, "reason %q is not one of initial, resume, change, series", *d.Reason)
		}
		p.header = &h
	case TypeToolCall:
		if !f.hasCallID || len(f.callID) == 0 || !f.hasName {
			return bad("tool/call needs callId and name")
		}
		p.callID = string(f.callID)
	}
	return p, nil
}

// msgFacts are the members of a message that validation needs.
type msgFacts struct {
	id, role, kind, plugin, provider, model, callID []byte
	hasContent                                      bool
	blocks                                          int
	calls                                           int32
	firstType, firstCallID                          []byte
	firstIsError                                    bool
	bad                                             string // a member of the wrong JSON kind
}

// dataFacts are the members of event data that admission needs.
type dataFacts struct {
	turn, step       int64
	hasTurn, hasStep bool
	numErr           string
	msg              msgFacts
	msgRaw           []byte
	hasMsg           bool
	errKind          byte
	errCode          string
	interrupted      byte
	callID, name     []byte
	hasCallID        bool
	hasName          bool
}

// scanData validates data as lossless JSON and reads, in the same pass,
// the members admission needs for an event of type typ.
func (p *parser) scanData(typ string) dataFacts {
	var f dataFacts
	data := p.b
	if p.peek() != '{' {
		p.fail(RuleEnvelope, errNotObject)
		return f
	}
	if typ == TypeUserMessage {
		p.message(0, &f.msg)
		f.msgRaw, f.hasMsg = data[:p.i], true
	} else {
		p.object(0, func(key []byte) {
			switch string(key) {
			case "turn":
				f.turn, f.hasTurn = p.stepNumber(&f.numErr, "turn")
			case "step":
				f.step, f.hasStep = p.stepNumber(&f.numErr, "step")
			case "message":
				if p.peek() == '{' {
					s := p.i
					p.message(1, &f.msg)
					f.msgRaw, f.hasMsg = p.b[s:p.i], true
				} else {
					p.value(1)
				}
			case "error":
				f.errKind = p.peek()
				if f.errKind == '{' {
					p.object(1, func(k []byte) {
						if string(k) == "code" && p.peek() == '"' {
							f.errCode = str(p.str())
						} else {
							p.value(2)
						}
					})
				} else {
					p.value(1)
				}
			case "interrupted":
				f.interrupted = p.peek()
				p.value(1)
			case "callId":
				var bad string
				f.hasCallID = p.peek() == '"'
				f.callID = p.strOrNull(1, "callId", &bad)
			case "name":
				var bad string
				f.hasName = p.peek() == '"'
				f.name = p.strOrNull(1, "name", &bad)
			default:
				p.value(1)
			}
		})
	}
	return f
}

// stepNumber reads a turn or step number.
func (p *parser) stepNumber(errOut *string, name string) (int64, bool) {
	if p.peek() == 'n' {
		p.literal("null")
		return 0, false
	}
	if c := p.peek(); c != '-' && (c < '0' || c > '9') {
		p.value(1)
		*errOut = name + " must be a non-negative integer"
		return 0, false
	}
	v := p.number()
	n, err := strconv.ParseInt(string(v), 10, 64)
	if (err != nil || n < 0) && p.err == "" {
		*errOut = name + " must be a non-negative integer, got " + string(v)
		return 0, false
	}
	return n, true
}

// message walks a message object, recording the facts of 3.3 and checking
// that every member Message and Block decode into has the right JSON kind.
func (p *parser) message(depth int, f *msgFacts) {
	p.object(depth, func(key []byte) {
		switch string(key) {
		case "id":
			f.id = p.strOrNull(depth+1, "message id", &f.bad)
		case "role":
			f.role = p.strOrNull(depth+1, "message role", &f.bad)
		case "source":
			switch p.peek() {
			case '{':
				p.object(depth+1, func(k []byte) {
					switch string(k) {
					case "kind":
						f.kind = p.strOrNull(depth+2, "source.kind", &f.bad)
					case "plugin":
						f.plugin = p.strOrNull(depth+2, "source.plugin", &f.bad)
					case "provider":
						f.provider = p.strOrNull(depth+2, "source.provider", &f.bad)
					case "model":
						f.model = p.strOrNull(depth+2, "source.model", &f.bad)
					case "callId":
						f.callID = p.strOrNull(depth+2, "source.callId", &f.bad)
					default:
						p.value(depth + 2)
					}
				})
			case 'n':
				p.literal("null")
			default:
				if f.bad == "" {
					f.bad = "message source must be an object"
				}
				p.value(depth + 1)
			}
		case "content":
			switch p.peek() {
			case '[':
				f.hasContent = true
				p.array(depth+1, func() {
					b := p.block(depth+2, &f.bad)
					if f.blocks == 0 {
						f.firstType, f.firstIsError, f.firstCallID = b.typ, b.isError, b.callID
					}
					if string(b.typ) == BlockToolCall {
						f.calls++
					}
					f.blocks++
				})
			case 'n':
				p.literal("null")
			default:
				if f.bad == "" {
					f.bad = "message content must be an array"
				}
				p.value(depth + 1)
			}
		default:
			p.value(depth + 1)
		}
	})
}

type blockFacts struct {
	typ     []byte
	isError bool
	callID  []byte
}

// block walks one content block. Member kinds matter only for the block
// types this build knows; other blocks are carried as they are.
func (p *parser) block(depth int, bad *string) blockFacts {
	var b blockFacts
	if p.peek() != '{' {
		if *bad == "" {
			*bad = "a content block must be an object"
		}
		p.value(depth)
		return b
	}
	var kindErr, typeErr string
	p.object(depth, func(key []byte) {
		c := p.peek()
		switch string(key) {
		case "type":
			if c == '"' {
				b.typ = p.strBytes()
			} else {
				typeErr = "a content block's type must be a string"
				p.value(depth + 1)
			}
		case "text", "id", "name", "arguments":
			if c != '"' && c != 'n' && kindErr == "" {
				kindErr = "content block member \"" + string(key) + "\" must be a string"
			}
			p.value(depth + 1)
		case "toolCallId":
			switch c {
			case '"':
				b.callID = p.strBytes()
			case 'n':
				p.literal("null")
			default:
				if kindErr == "" {
					kindErr = "content block member \"toolCallId\" must be a string"
				}
				p.value(depth + 1)
			}
		case "isError":
			switch c {
			case 't':
				b.isError = true
				p.literal("true")
			case 'f':
				p.literal("false")
			case 'n':
				p.literal("null")
			default:
				if kindErr == "" {
					kindErr = "content block member \"isError\" must be a boolean"
				}
				p.value(depth + 1)
			}
		case "content":
			switch c {
			case '[':
				var inner string
				p.array(depth+1, func() { p.block(depth+2, &inner) })
				if inner != "" && kindErr == "" {
					kindErr = inner
				}
			case 'n':
				p.literal("null")
			default:
				if kindErr == "" {
					kindErr = "content block member \"content\" must be an array"
				}
				p.value(depth + 1)
			}
		default:
			p.value(depth + 1)
		}
	})
	switch {
	case typeErr != "" && *bad == "":
		*bad = typeErr
	case kindErr != "" && *bad == "":
		switch string(b.typ) {
		case BlockText, BlockReasoning, BlockToolCall, BlockToolResult:
			*bad = kindErr
		}
	}
	return b
}

// check applies the common message rules of 3.3.
func (f *msgFacts) check(role string) string {
	switch {
	case len(f.id) == 0:
		return "message id must be a non-empty string"
	case len(f.kind) == 0:
		return "message source must have a non-empty kind"
	case !f.hasContent:
		return "message content must be an array"
	case string(f.role) != role:
		return "message role must be " + role + ", got " + quote(string(f.role))
	}
	return ""
}

// message decodes (once) and returns the message of event i of the window.
func (l *Log) message(i int64) *Message {
	p := &l.pay[i]
	if p.msg == nil && p.msgRaw != nil {
		var m Message
		if err := decodeMessage(p.msgRaw, &m); err != nil {
			// Admission checked every member's kind, so this cannot happen
			// for a committed event.
			panic("surface: committed message at seq " + strconv.FormatInt(l.events[i].Seq, 10) + " does not decode: " + err.Error())
		}
		p.msg = &m
	}
	return p.msg
}

func quote(s string) string {
	b, _ := jsontext.AppendQuote(nil, s)
	return string(b)
}
