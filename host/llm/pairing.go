package llm

import "github.com/weirhost/weir/surface"

// paired returns msgs with every tool call that has no result, and every
// tool result that answers no call, left out: the one pairing rule all
// three encoders apply before they write a message.
//
// Every API refuses a history in which a call is not answered: Anthropic
// needs a tool_result for each tool_use in the user message right after it,
// Gemini as many functionResponse parts as the functionCall parts before
// them, OpenAI-compatible APIs a role "tool" message for each tool_calls
// entry. A reply cut by the output limit inside a tool call (stop reason
// max_tokens, MAX_TOKENS or length) ends its turn without running the call,
// so the log keeps the call with no result. The log stays as it was (it is
// what the model said); what is sent drops the call. So:
//
//   - a tool call is sent only when a tool result with its id is among the
//     messages between it and the next assistant message;
//   - a tool result is sent only when it answers a call of the nearest
//     assistant message before it that is sent.
//
// An assistant message left with nothing to send is not sent. The rule
// reads only the messages, so every request rebuilt from a log drops the
// same blocks. msgs and its messages are not modified: a message that loses
// a block is replaced by a copy.
func paired(msgs []*surface.Message) []*surface.Message {
	var out []*surface.Message
	calls := map[string]bool{}   // ids of the sent calls of the last assistant message
	results := map[string]bool{} // ids of the results after the current assistant message
	for i, m := range msgs {
		if m == nil {
			continue
		}
		switch m.Role {
		case surface.RoleAssistant:
			clear(calls)
			if !hasBlock(m.Content, surface.BlockToolCall) {
				continue
			}
			resultsAfter(results, msgs, i)
			// A call without an id is kept for the encoder to refuse.
			unanswered := func(b *surface.Block) bool {
				return b.Type == surface.BlockToolCall && b.ID != "" && !results[b.ID]
			}
			dropped := false
			for j := range m.Content {
				b := &m.Content[j]
				switch {
				case unanswered(b):
					dropped = true
				case b.Type == surface.BlockToolCall:
					calls[b.ID] = true
				}
			}
			if dropped {
				out = replace(out, msgs, i, m, without(m.Content, unanswered))
			}
		case surface.RoleUser:
			unasked := func(b *surface.Block) bool { return b.Type == surface.BlockToolResult && !calls[b.ToolCallID] }
			for j := range m.Content {
				if unasked(&m.Content[j]) {
					out = replace(out, msgs, i, m, without(m.Content, unasked))
					break
				}
			}
		}
	}
	if out == nil {
		return msgs
	}
	return out
}

func hasBlock(content []surface.Block, typ string) bool {
	for i := range content {
		if content[i].Type == typ {
			return true
		}
	}
	return false
}

// without returns a copy of content without the blocks drop reports.
func without(content []surface.Block, drop func(*surface.Block) bool) []surface.Block {
	keep := content[:0:0]
	for j := range content {
		if !drop(&content[j]) {
			keep = append(keep, content[j])
		}
	}
	return keep
}

// resultsAfter sets ids to the ids of the tool results between assistant
// message i and the next assistant message.
func resultsAfter(ids map[string]bool, msgs []*surface.Message, i int) {
	clear(ids)
	for _, m := range msgs[i+1:] {
		if m == nil {
			continue
		}
		if m.Role == surface.RoleAssistant {
			break
		}
		for _, b := range m.Content {
			if b.Type == surface.BlockToolResult {
				ids[b.ToolCallID] = true
			}
		}
	}
}

// replace sets out[i] to a copy of m holding content, copying msgs into
// out first when this is the first replacement.
func replace(out, msgs []*surface.Message, i int, m *surface.Message, content []surface.Block) []*surface.Message {
	if out == nil {
		out = append([]*surface.Message(nil), msgs...)
	}
	c := *m
	c.Content = content
	out[i] = &c
	return out
}
