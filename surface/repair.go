package surface

import (
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
)

// Texts of the synthetic results crash repair writes (13.4).
const (
	outcomeUnknownText = "The session stopped while this tool call was running; its outcome is unknown. " +
		"Retry it only if it is idempotent; otherwise verify its effects first."
	notStartedText = "The session stopped before this tool call started; it had no effect and may be retried."
)

// TurnEnd is the data of turn/end.
type TurnEnd struct {
	Turn   int64     `json:"turn"`
	Reason EndReason `json:"reason"`
}

// EndReason is a TurnEndReason: completed, aborted, blocked, error,
// max-tokens or interrupted (crash repair only).
type EndReason struct {
	Kind   string     `json:"kind"`
	Reason string     `json:"reason,omitzero"` // aborted: the cancel cause
	Error  *CallError `json:"error,omitzero"`  // error
}

// CallError is a structured failure: a message and a stable code.
type CallError struct {
	Message string `json:"message"`
	Code    string `json:"code"`
}

// Turn-end kinds.
const (
	EndCompleted   = "completed"
	EndAborted     = "aborted"
	EndBlocked     = "blocked"
	EndError       = "error"
	EndMaxTokens   = "max-tokens"
	EndInterrupted = "interrupted"
)

// Closers returns the events crash repair appends to a log that ends inside
// an open turn, in order: for each tool-call block of the open step's
// assistant message that has no result, an error tool/result
// (TOOL_OUTCOME_UNKNOWN citing its recorded tool/call, or TOOL_NOT_STARTED
// when none was recorded); step/end when a step is open; turn/end
// {kind:"interrupted"}. A log with no open turn needs none. Plugin brackets
// such as compaction/* are never closed here.
func (l *Log) Closers(newID func() string) ([]Proposal, error) {
	turn, step := l.enc.turn, l.enc.step
	if turn == 0 {
		return nil, nil
	}
	var out []Proposal
	if step != 0 {
		calls, results, assistant := map[string]int64{}, map[string]bool{}, (*Message)(nil)
		for i := len(l.events) - 1; i >= 0; i-- {
			e, p := &l.events[i], &l.pay[i]
			if e.Type == TypeStepStart {
				break
			}
			switch e.Type {
			case TypeToolCall:
				calls[p.callID] = e.Seq
			case TypeToolResult:
				if e.Op.Kind == OpAppend {
					results[p.callID] = true
				}
			case TypeAssistantMessage:
				if assistant == nil {
					assistant = l.message(int64(i))
				}
			}
		}
		if assistant != nil {
			for _, b := range assistant.ToolCalls() {
				if results[b.ID] {
					continue
				}
				code, text := CodeToolNotStarted, notStartedText
				var sources []int64
				if seq, ok := calls[b.ID]; ok {
					code, text, sources = CodeToolOutcomeUnknown, outcomeUnknownText, []int64{seq}
				}
				data, err := interruptedResult(turn, step, Message{ID: newID(), Role: RoleUser, Source: Source{Kind: "tool", CallID: b.ID},
					Content: []Block{ToolResult(b.ID, true, Text(text))}}, ToolError{Name: b.Name, Code: code, Reason: "session interrupted"})
				if err != nil {
					return nil, err
				}
				out = append(out, Proposal{Type: TypeToolResult, Data: data, Op: Append, Sources: sources})
			}
		}
		data, _ := encode(func(w *writer) {
			w.tok(jsontext.BeginObject)
			w.int("step", step)
			w.int("turn", turn)
			w.tok(jsontext.EndObject)
		})
		out = append(out, Proposal{Type: TypeStepEnd, Data: data})
	}
	data, err := encode(func(w *writer) {
		w.tok(jsontext.BeginObject)
		w.int("turn", turn)
		w.tok(jsontext.String("reason"))
		w.tok(jsontext.BeginObject)
		w.str("kind", EndInterrupted)
		w.tok(jsontext.EndObject)
		w.tok(jsontext.EndObject)
	})
	if err != nil {
		return nil, err
	}
	return append(out, Proposal{Type: TypeTurnEnd, Data: data}), nil
}

// interruptedResult is the data of a closing tool/result: what Data writes
// for a StepMessage with these fields.
func interruptedResult(turn, step int64, m Message, te ToolError) ([]byte, error) {
	return encode(func(w *writer) {
		w.tok(jsontext.BeginObject)
		w.int("turn", turn)
		w.int("step", step)
		w.tok(jsontext.String("message"))
		if w.err == nil {
			w.err = m.MarshalJSONTo(w.enc)
		}
		w.tok(jsontext.String("error"))
		w.tok(jsontext.BeginObject)
		w.str("name", te.Name)
		w.str("code", te.Code)
		w.strOmit("reason", te.Reason)
		w.tok(jsontext.EndObject)
		w.tok(jsontext.EndObject)
	})
}

// Repair appends the crash-repair closers (see Closers), stamped with the
// time of the log's last event so that repair is deterministic. It returns
// the appended events; none when the log ends outside a turn.
func (l *Log) Repair(newID func() string) ([]Event, error) {
	ps, err := l.Closers(newID)
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	last := l.events[len(l.events)-1].Time
	clock := l.clock
	l.clock = func() int64 { return last }
	defer func() { l.clock = clock }()
	evs, err := l.AppendBatch(ps)
	if err != nil {
		return nil, fmt.Errorf("crash repair: %w", err)
	}
	return evs, nil
}
