package surface

import (
	"strconv"

	"github.com/go-json-experiment/json"
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

// scanned holds the members of a message-bearing data object.
type msgFacts struct {
	id, role, kind, plugin, provider, model, callID string
	content                                         []byte
	blocks                                          int
	calls                                           int32
	firstType, firstCallID                          string
	firstIsError                                    bool
}

// parsePayload checks data against the rules of section 3.3 for e's type.
// Data is valid JSON here, so the scanner reads only the members it needs.
func parsePayload(e *Event) (payload, *Error) {
	var p payload
	bad := func(format string, args ...any) (payload, *Error) {
		return payload{}, errorf(e.Seq, e.Type, RulePayload, format, args...)
	}
	var msgRaw, errRaw, interrupted []byte
	var callID, name []byte
	var numErr string
	members(e.Data, func(k, v []byte) bool {
		switch {
		case keyIs(k, "turn"):
			p.turn, p.hasTurn = stepNumber(v, &numErr, "turn")
		case keyIs(k, "step"):
			p.step, p.hasStep = stepNumber(v, &numErr, "step")
		case keyIs(k, "message"):
			msgRaw = v
		case keyIs(k, "error"):
			errRaw = v
		case keyIs(k, "interrupted"):
			interrupted = v
		case keyIs(k, "callId"):
			callID = v
		case keyIs(k, "name"):
			name = v
		}
		return true
	})
	if numErr != "" {
		return bad("%s", numErr)
	}
	switch e.Type {
	case TypeUserMessage:
		f, err := scanMessage(e.Data)
		if err == "" {
			err = f.check(RoleUser)
		}
		if err != "" {
			return bad("%s", err)
		}
		p.msgRaw = e.Data
	case TypeSystemMessage, TypeAssistantMessage, TypeToolResult:
		if kindOf(msgRaw) != '{' {
			return bad("data.message is missing or not an object")
		}
		f, err := scanMessage(msgRaw)
		if err != "" {
			return bad("%s", err)
		}
		p.msgRaw = msgRaw
		switch e.Type {
		case TypeSystemMessage:
			if err := f.check(RoleSystem); err != "" {
				return bad("%s", err)
			}
			if f.kind != "plugin" || f.plugin == "" {
				return bad("system message source must be {kind:\"plugin\", plugin:<id>}, got kind %q", f.kind)
			}
		case TypeAssistantMessage:
			if err := f.check(RoleAssistant); err != "" {
				return bad("%s", err)
			}
			if f.kind != "model" || f.provider == "" || f.model == "" {
				return bad("assistant message source must be {kind:\"model\", provider, model}")
			}
			if interrupted != nil && kindOf(interrupted) != 't' {
				return bad("interrupted must be exactly true")
			}
			p.calls = f.calls
		case TypeToolResult:
			if err := f.check(RoleUser); err != "" {
				return bad("%s", err)
			}
			if f.kind != "tool" || f.callID == "" {
				return bad("tool result source must be {kind:\"tool\", callId}")
			}
			if f.blocks != 1 || f.firstType != BlockToolResult {
				return bad("tool result content must be exactly one tool-result block")
			}
			if f.firstCallID != f.callID {
				return bad("tool-result block toolCallId %q differs from source callId %q", f.firstCallID, f.callID)
			}
			if errRaw != nil && kindOf(errRaw) != 'n' {
				if !f.firstIsError {
					return bad("a tool result with error must have isError true")
				}
				if kindOf(errRaw) == '{' {
					members(errRaw, func(k, v []byte) bool {
						if keyIs(k, "code") && kindOf(v) == '"' {
							p.errCode = str(v)
						}
						return true
					})
				}
			}
			p.callID = f.callID
		}
	case TypeRequestHeader:
		var d headerData
		if err := json.Unmarshal(e.Data, &d, decodeOpts); err != nil {
			return payload{}, errorf(e.Seq, e.Type, RuleHeader, "data is not a request header: %v", err)
		}
		h, err := d.Header.check()
		if err != "" {
			return payload{}, errorf(e.Seq, e.Type, RuleHeader, "%s", err)
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
		if kindOf(callID) != '"' || str(callID) == "" || kindOf(name) != '"' {
			return bad("tool/call needs callId and name")
		}
		p.callID = str(callID)
	}
	return p, nil
}

type headerData struct {
	Header       *headerWire    `json:"header"`
	Reason       *string        `json:"reason"`
	StartsSeries jsontext.Value `json:"startsSeries"`
}

var decodeOpts = json.JoinOptions(json.RejectUnknownMembers(false))

// stepNumber reads a turn or step number.
func stepNumber(v []byte, errOut *string, name string) (int64, bool) {
	if kindOf(v) == 'n' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n < 0 {
		*errOut = name + " must be a non-negative integer, got " + string(v)
		return 0, false
	}
	return n, true
}

// scanMessage reads the members of a message object that validation needs,
// and checks that the message decodes: every member Message and Block type
// (strings, booleans, arrays) has the JSON kind its Go field takes.
func scanMessage(obj []byte) (msgFacts, string) {
	var f msgFacts
	var err string
	strField := func(v []byte, what string, dst *string) {
		switch kindOf(v) {
		case '"':
			*dst = str(v)
		case 'n':
		default:
			if err == "" {
				err = what + " must be a string"
			}
		}
	}
	var source []byte
	members(obj, func(k, v []byte) bool {
		switch {
		case keyIs(k, "id"):
			strField(v, "message id", &f.id)
		case keyIs(k, "role"):
			strField(v, "message role", &f.role)
		case keyIs(k, "source"):
			source = v
		case keyIs(k, "content"):
			f.content = v
		}
		return err == ""
	})
	if err != "" {
		return f, err
	}
	switch kindOf(source) {
	case '{':
		members(source, func(k, v []byte) bool {
			switch {
			case keyIs(k, "kind"):
				strField(v, "source.kind", &f.kind)
			case keyIs(k, "plugin"):
				strField(v, "source.plugin", &f.plugin)
			case keyIs(k, "provider"):
				strField(v, "source.provider", &f.provider)
			case keyIs(k, "model"):
				strField(v, "source.model", &f.model)
			case keyIs(k, "callId"):
				strField(v, "source.callId", &f.callID)
			}
			return err == ""
		})
	case 0, 'n':
	default:
		err = "message source must be an object"
	}
	if err != "" {
		return f, err
	}
	if kindOf(f.content) == '[' {
		elements(f.content, func(b []byte) bool {
			typ, isErr, callID, e := scanBlock(b, 0)
			if e != "" {
				err = e
				return false
			}
			if f.blocks == 0 {
				f.firstType, f.firstIsError, f.firstCallID = typ, isErr, callID
			}
			if typ == BlockToolCall {
				f.calls++
			}
			f.blocks++
			return true
		})
	} else if f.content != nil && kindOf(f.content) != 'n' {
		err = "message content must be an array"
	}
	return f, err
}

// scanBlock checks one content block and returns its type and the
// tool-result facts.
func scanBlock(b []byte, depth int) (typ string, isError bool, callID string, err string) {
	if kindOf(b) != '{' {
		return "", false, "", "a content block must be an object"
	}
	if depth > 64 {
		return "", false, "", "content blocks nest too deeply"
	}
	members(b, func(k, v []byte) bool {
		if keyIs(k, "type") {
			if kindOf(v) != '"' {
				err = "a content block's type must be a string"
			} else {
				typ = str(v)
			}
			return false
		}
		return true
	})
	if err != "" {
		return
	}
	switch typ {
	case BlockText, BlockReasoning, BlockToolCall, BlockToolResult:
	default:
		return typ, false, "", "" // opaque: carried as is
	}
	members(b, func(k, v []byte) bool {
		kv := kindOf(v)
		switch {
		case keyIs(k, "text"), keyIs(k, "id"), keyIs(k, "name"), keyIs(k, "arguments"):
			if kv != '"' && kv != 'n' {
				err = "content block member " + string(k) + " must be a string"
			}
		case keyIs(k, "toolCallId"):
			if kv == '"' {
				callID = str(v)
			} else if kv != 'n' {
				err = "content block member \"toolCallId\" must be a string"
			}
		case keyIs(k, "isError"):
			switch kv {
			case 't':
				isError = true
			case 'f', 'n':
			default:
				err = "content block member \"isError\" must be a boolean"
			}
		case keyIs(k, "content"):
			switch kv {
			case '[':
				elements(v, func(inner []byte) bool {
					_, _, _, err = scanBlock(inner, depth+1)
					return err == ""
				})
			case 'n':
			default:
				err = "content block member \"content\" must be an array"
			}
		}
		return err == ""
	})
	return
}

// check applies the common message rules of 3.3.
func (f *msgFacts) check(role string) string {
	switch {
	case f.id == "":
		return "message id must be a non-empty string"
	case f.kind == "":
		return "message source must have a non-empty kind"
	case kindOf(f.content) != '[':
		return "message content must be an array"
	case f.role != role:
		return "message role must be " + role + ", got " + quote(f.role)
	}
	return ""
}

// message decodes (once) and returns the message of event i of the window.
func (l *Log) message(i int64) *Message {
	p := &l.pay[i]
	if p.msg == nil && p.msgRaw != nil {
		var m Message
		if err := json.Unmarshal(p.msgRaw, &m, decodeOpts); err != nil {
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
