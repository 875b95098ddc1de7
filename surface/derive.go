package surface

// Project returns the model-visible message of one surface event's message
// (deriveEventMessage): system and assistant messages with empty content
// project to nothing; user messages and tool results always project.
func Project(typ string, m *Message) (*Message, bool) {
	switch KindOf(typ) {
	case KindUser, KindToolResult:
		return m, m != nil
	case KindSystem, KindAssistant:
		return m, m != nil && len(m.Content) > 0
	}
	return nil, false
}

// Messages derives the wire history from the surface (deriveMessages): each
// node projected in surface order, nothing for nodes that project to
// nothing. A non-empty system head becomes message 0. The slice is fresh;
// the messages are shared and must not be modified.
func (l *Log) Messages() []*Message {
	out := make([]*Message, 0, len(l.fold.nodes))
	for _, n := range l.fold.nodes {
		i := n.seq - l.fold.base
		if m, ok := Project(l.events[i].Type, l.message(i)); ok {
			out = append(out, m)
		}
	}
	return out
}

// Entry is one line of the human transcript.
type Entry struct {
	Seq     int64
	Type    string
	Message *Message
}

// Transcript is the human transcript: every append-origin surface event
// except system/message, in log order. Replacements (summaries, prompt
// changes) are seen only by the model, so they never erase what a human saw.
func (l *Log) Transcript() []Entry {
	var out []Entry
	for i := range l.events {
		e := &l.events[i]
		if e.Op.Kind != OpAppend || e.Type == TypeSystemMessage || l.pay[i].msgRaw == nil {
			continue
		}
		out = append(out, Entry{Seq: e.Seq, Type: e.Type, Message: l.message(int64(i))})
	}
	return out
}

// NodeInfo describes one surface node.
type NodeInfo struct {
	Seq  int64
	Type string
	Role string
	// Empty reports a node that projects to no message.
	Empty bool
	// ToolCalls counts the tool-call blocks of an assistant node.
	ToolCalls int
	// Op is how the node's event entered the surface.
	Op Op
}

// Surface returns a description of every surface node, in order.
func (l *Log) Surface() []NodeInfo {
	out := make([]NodeInfo, len(l.fold.nodes))
	for k, n := range l.fold.nodes {
		i := n.seq - l.fold.base
		e, m := &l.events[i], l.message(i)
		_, vis := Project(e.Type, m)
		out[k] = NodeInfo{Seq: n.seq, Type: e.Type, Empty: !vis, ToolCalls: int(n.calls), Op: e.Op}
		if m != nil {
			out[k].Role = m.Role
		}
	}
	return out
}
