package surface

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// payload is what admission learns from an event's data: the message of a
// surface event and the turn/step numbers the enclosure checker needs.
type payload struct {
	msg        *Message // surface events
	turn, step int64    // 0 when absent
	hasTurn    bool
	hasStep    bool
	header     *EpochHeader // request/header
	callID     string       // tool/call, tool/result
}

type stepData struct {
	Turn *int64 `json:"turn"`
	Step *int64 `json:"step"`
}

type messageData struct {
	Turn        *int64         `json:"turn"`
	Step        *int64         `json:"step"`
	Message     *Message       `json:"message"`
	Error       jsontext.Value `json:"error"`
	Interrupted jsontext.Value `json:"interrupted"`
}

type toolCallData struct {
	Turn   *int64  `json:"turn"`
	Step   *int64  `json:"step"`
	CallID *string `json:"callId"`
	Name   *string `json:"name"`
}

type headerData struct {
	Header       *headerWire    `json:"header"`
	Reason       *string        `json:"reason"`
	StartsSeries jsontext.Value `json:"startsSeries"`
}

var decodeOpts = json.JoinOptions(json.RejectUnknownMembers(false))

// parsePayload checks data against the rules of section 3.3 for e's type.
func parsePayload(e *Event) (payload, *Error) {
	var p payload
	bad := func(format string, args ...any) (payload, *Error) {
		return payload{}, errorf(e.Seq, e.Type, RulePayload, format, args...)
	}
	setStep := func(turn, step *int64) {
		if turn != nil {
			p.turn, p.hasTurn = *turn, true
		}
		if step != nil {
			p.step, p.hasStep = *step, true
		}
	}
	switch e.Type {
	case TypeUserMessage:
		var m Message
		if err := json.Unmarshal(e.Data, &m, decodeOpts); err != nil {
			return bad("data is not a message: %v", err)
		}
		if err := checkMessage(&m, RoleUser); err != "" {
			return bad("%s", err)
		}
		p.msg = &m
	case TypeSystemMessage, TypeAssistantMessage, TypeToolResult:
		var d messageData
		if err := json.Unmarshal(e.Data, &d, decodeOpts); err != nil {
			return bad("data does not hold a message: %v", err)
		}
		if d.Message == nil {
			return bad("data.message is missing")
		}
		m := d.Message
		setStep(d.Turn, d.Step)
		switch e.Type {
		case TypeSystemMessage:
			if err := checkMessage(m, RoleSystem); err != "" {
				return bad("%s", err)
			}
			if m.Source.Kind != "plugin" || m.Source.Plugin == "" {
				return bad("system message source must be {kind:\"plugin\", plugin:<id>}, got kind %q", m.Source.Kind)
			}
		case TypeAssistantMessage:
			if err := checkMessage(m, RoleAssistant); err != "" {
				return bad("%s", err)
			}
			if m.Source.Kind != "model" || m.Source.Provider == "" || m.Source.Model == "" {
				return bad("assistant message source must be {kind:\"model\", provider, model}")
			}
			if len(d.Interrupted) > 0 && d.Interrupted.Kind() != 't' {
				return bad("interrupted must be exactly true")
			}
		case TypeToolResult:
			if err := checkMessage(m, RoleUser); err != "" {
				return bad("%s", err)
			}
			if m.Source.Kind != "tool" || m.Source.CallID == "" {
				return bad("tool result source must be {kind:\"tool\", callId}")
			}
			if len(m.Content) != 1 || m.Content[0].Type != BlockToolResult {
				return bad("tool result content must be exactly one tool-result block")
			}
			if m.Content[0].ToolCallID != m.Source.CallID {
				return bad("tool-result block toolCallId %q differs from source callId %q", m.Content[0].ToolCallID, m.Source.CallID)
			}
			if len(d.Error) > 0 && d.Error.Kind() != 'n' && !m.Content[0].IsError {
				return bad("a tool result with error must have isError true")
			}
			p.callID = m.Source.CallID
		}
		p.msg = m
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
		var d toolCallData
		if err := json.Unmarshal(e.Data, &d, decodeOpts); err != nil {
			return bad("%v", err)
		}
		if d.CallID == nil || *d.CallID == "" || d.Name == nil {
			return bad("tool/call needs callId and name")
		}
		setStep(d.Turn, d.Step)
		p.callID = *d.CallID
	case TypeTurnStart, TypeTurnEnd, TypeStepStart, TypeStepEnd, TypeAssistantAttempt,
		TypeRequestContext, TypeCompactionStart, TypeCompactionEnd, TypeCompactionSummary, TypeLLMRetry:
		var d stepData
		if err := json.Unmarshal(e.Data, &d, decodeOpts); err != nil {
			return bad("%v", err)
		}
		setStep(d.Turn, d.Step)
	}
	return p, nil
}

// checkMessage returns what is wrong with m, or "".
func checkMessage(m *Message, role string) string {
	switch {
	case m.ID == "":
		return "message id must be a non-empty string"
	case m.Source.Kind == "":
		return "message source must have a non-empty kind"
	case m.Content == nil:
		return "message content must be an array"
	case m.Role != role:
		return "message role must be " + role + ", got " + quote(m.Role)
	}
	return ""
}

func quote(s string) string {
	b, _ := jsontext.AppendQuote(nil, s)
	return string(b)
}
