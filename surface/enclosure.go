package surface

// enclosure is the log-invariant checker of section 14: turn and step
// numbering, and that step-scoped events name the open turn and step.
type enclosure struct {
	lenient  bool  // a window whose beginning is unknown: numbering not checked
	turn     int64 // open turn, 0 when none
	lastTurn int64
	step     int64 // open step, 0 when none
	lastStep int64
	pending  []string // tool/call ids of the open step still awaiting a result
}

// Error codes of the tool/result events that close a tool call the loop
// never settled (spec 13.4). Each such result is an error result the model
// sees, so every call the assistant made still has its answer.
const (
	// CodeToolNotStarted marks a call that never ran: its tool/call event was
	// never logged: the turn was cancelled, or the process stopped, first.
	CodeToolNotStarted = "TOOL_NOT_STARTED"
	// CodeToolOutcomeUnknown marks a call that was started (its tool/call
	// event is logged, and cited in sourceEventSeqs) but whose result was
	// never recorded: the tool may or may not have had its effect.
	CodeToolOutcomeUnknown = "TOOL_OUTCOME_UNKNOWN"
)

// check validates e against the enclosure state and returns the next state.
func (c enclosure) check(e *Event, p *payload) (enclosure, *Error) {
	bad := func(format string, args ...any) (enclosure, *Error) {
		return c, errorf(e.Seq, e.Type, RuleEnclosure, format, args...)
	}
	inStep := func() *Error {
		if c.lenient && c.step == 0 {
			return nil
		}
		if c.step == 0 {
			return errorf(e.Seq, e.Type, RuleEnclosure, "%s needs an open step", e.Type)
		}
		if !p.hasTurn || !p.hasStep || p.turn != c.turn || p.step != c.step {
			return errorf(e.Seq, e.Type, RuleEnclosure, "%s names turn %d step %d, but the open step is turn %d step %d", e.Type, p.turn, p.step, c.turn, c.step)
		}
		return nil
	}
	switch e.Type {
	case TypeTurnStart:
		if !p.hasTurn {
			return bad("turn/start needs data.turn")
		}
		if c.turn != 0 {
			return bad("turn/start %d while turn %d is open", p.turn, c.turn)
		}
		if !c.lenient && p.turn != c.lastTurn+1 {
			return bad("turn/start %d must number turn %d", p.turn, c.lastTurn+1)
		}
		c.turn, c.lastTurn, c.lastStep, c.lenient = p.turn, p.turn, 0, false
	case TypeTurnEnd:
		if c.turn == 0 && c.lenient {
			return c, nil
		}
		if c.turn == 0 || p.turn != c.turn {
			return bad("turn/end %d does not close the open turn %d", p.turn, c.turn)
		}
		if c.step != 0 {
			return bad("turn/end %d while step %d is open", p.turn, c.step)
		}
		c.turn = 0
	case TypeStepStart:
		if c.turn == 0 && c.lenient {
			c.turn = p.turn
		}
		if c.turn == 0 || p.turn != c.turn {
			return bad("step/start names turn %d, but the open turn is %d", p.turn, c.turn)
		}
		if c.step != 0 {
			return bad("step/start %d while step %d is open", p.step, c.step)
		}
		if p.step != c.lastStep+1 && !(c.lenient && c.lastStep == 0) {
			return bad("step/start %d must number step %d", p.step, c.lastStep+1)
		}
		c.step, c.lastStep, c.pending = p.step, p.step, nil
	case TypeStepEnd:
		if c.step == 0 && c.lenient {
			return c, nil
		}
		if err := inStep(); err != nil {
			return c, err
		}
		c.step, c.pending = 0, nil
	case TypeSystemMessage, TypeAssistantMessage, TypeAssistantAttempt:
		if err := inStep(); err != nil {
			return c, err
		}
	case TypeToolCall:
		if err := inStep(); err != nil {
			return c, err
		}
		c.pending = append(c.pending[:len(c.pending):len(c.pending)], p.callID)
	case TypeToolResult:
		if e.Op.Kind != OpAppend {
			return c, nil // a rewrite (4.6) is not a new result
		}
		if err := inStep(); err != nil {
			return c, err
		}
		for i, id := range c.pending {
			if id == p.callID {
				c.pending = append(c.pending[:i:i], c.pending[i+1:]...)
				return c, nil
			}
		}
		if c.lenient || p.errCode == CodeToolNotStarted {
			return c, nil
		}
		return bad("tool/result %q answers no pending tool/call of its step", p.callID)
	case TypeRequestHeader, TypeRequestContext:
		if c.turn == 0 && !c.lenient {
			return bad("%s needs an open turn", e.Type)
		}
	}
	return c, nil
}
