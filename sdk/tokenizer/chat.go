package tokenizer

import (
	"bytes"
	"slices"
	"strings"
)

// Message is one chat message as the DeepSeek V3 chat template
// (tokenizer_config.json) sees it.
type Message struct {
	// Role is "system", "user", "assistant" or "tool". The template renders
	// nothing for any other role.
	Role    string
	Content string
	// ToolCalls, on an assistant message, makes it a tool-call message: the
	// template then renders the calls and ignores Content (it only renders
	// calls for a message whose content is none).
	ToolCalls []ToolCall
}

// ToolCall is one function call requested by the assistant.
type ToolCall struct {
	Type      string // "function" when empty
	Name      string
	Arguments string // the JSON arguments, as sent to the model
}

// DeepSeek V3 chat template markers.
const (
	bosToken          = "<｜begin▁of▁sentence｜>"
	eosToken          = "<｜end▁of▁sentence｜>"
	userToken         = "<｜User｜>"
	assistantToken    = "<｜Assistant｜>"
	toolCallsBegin    = "<｜tool▁calls▁begin｜>"
	toolCallsEnd      = "<｜tool▁calls▁end｜>"
	toolCallBegin     = "<｜tool▁call▁begin｜>"
	toolCallEnd       = "<｜tool▁call▁end｜>"
	toolSep           = "<｜tool▁sep｜>"
	toolOutputsBegin  = "<｜tool▁outputs▁begin｜>"
	toolOutputsEnd    = "<｜tool▁outputs▁end｜>"
	toolOutputBegin   = "<｜tool▁output▁begin｜>"
	toolOutputEnd     = "<｜tool▁output▁end｜>"
	toolCallArgsOpen  = "\n```json\n"
	toolCallArgsClose = "\n```"
)

// RenderChat renders msgs exactly as DeepSeek V3's chat template does,
// including its quirks:
//   - the BOS token comes first, followed by all system contents joined by
//     "\n\n" wherever the system messages appear;
//   - only the first tool-call message of the conversation opens with
//     <｜Assistant｜><｜tool▁calls▁begin｜>; every tool call after the very
//     first one is preceded by "\n" and followed by
//     <｜tool▁calls▁end｜><｜end▁of▁sentence｜>;
//   - only the first tool result of the conversation opens with
//     <｜tool▁outputs▁begin｜>, later ones are preceded by "\n";
//   - an assistant message right after tool results opens with
//     <｜tool▁outputs▁end｜> instead of <｜Assistant｜>.
//
// With addGenerationPrompt, <｜Assistant｜> is appended unless the last
// message is a tool result.
func RenderChat(msgs []Message, addGenerationPrompt bool) string {
	var n chatLen
	writeChat(&n, msgs, addGenerationPrompt)
	var b strings.Builder
	b.Grow(int(n))
	writeChat(&b, msgs, addGenerationPrompt)
	return b.String()
}

// AppendChat appends RenderChat(msgs, addGenerationPrompt) to dst, growing
// it once, and returns the extended slice.
func AppendChat(dst []byte, msgs []Message, addGenerationPrompt bool) []byte {
	var n chatLen
	writeChat(&n, msgs, addGenerationPrompt)
	b := bytes.NewBuffer(slices.Grow(dst, int(n)))
	writeChat(b, msgs, addGenerationPrompt)
	return b.Bytes()
}

// chatWriter is where writeChat renders: a strings.Builder, a
// bytes.Buffer, or chatLen, which only counts.
type chatWriter interface {
	WriteString(string) (int, error)
}

// chatLen counts the bytes written to it.
type chatLen int

func (n *chatLen) WriteString(s string) (int, error) {
	*n += chatLen(len(s))
	return len(s), nil
}

// writeChat is the template itself (see RenderChat).
func writeChat(b chatWriter, msgs []Message, addGenerationPrompt bool) {
	b.WriteString(bosToken)
	firstSystem := true
	for _, m := range msgs {
		if m.Role == "system" {
			if !firstSystem {
				b.WriteString("\n\n")
			}
			b.WriteString(m.Content)
			firstSystem = false
		}
	}
	isTool, calledBefore, outputFirst := false, false, true
	for _, m := range msgs {
		switch m.Role {
		case "user":
			isTool = false
			b.WriteString(userToken)
			b.WriteString(m.Content)
		case "assistant":
			if len(m.ToolCalls) > 0 {
				isTool = false
				for _, c := range m.ToolCalls {
					typ := c.Type
					if typ == "" {
						typ = "function"
					}
					if !calledBefore {
						b.WriteString(assistantToken + toolCallsBegin)
					} else {
						b.WriteString("\n")
					}
					b.WriteString(toolCallBegin)
					b.WriteString(typ)
					b.WriteString(toolSep)
					b.WriteString(c.Name)
					b.WriteString(toolCallArgsOpen)
					b.WriteString(c.Arguments)
					b.WriteString(toolCallArgsClose + toolCallEnd)
					if calledBefore {
						b.WriteString(toolCallsEnd + eosToken)
					}
					calledBefore = true
				}
				continue
			}
			if isTool {
				b.WriteString(toolOutputsEnd)
				isTool = false
			} else {
				b.WriteString(assistantToken)
			}
			b.WriteString(m.Content)
			b.WriteString(eosToken)
		case "tool":
			isTool = true
			if outputFirst {
				b.WriteString(toolOutputsBegin)
				outputFirst = false
			} else {
				b.WriteString("\n")
			}
			b.WriteString(toolOutputBegin)
			b.WriteString(m.Content)
			b.WriteString(toolOutputEnd)
		}
	}
	if isTool {
		b.WriteString(toolOutputsEnd)
	}
	if addGenerationPrompt && !isTool {
		b.WriteString(assistantToken)
	}
}

// EncodeChat returns the token ids of RenderChat(msgs, addGenerationPrompt):
// the exact prompt the model receives, BOS and all markers included.
func (t *Tokenizer) EncodeChat(msgs []Message, addGenerationPrompt bool) []int {
	return t.Encode(RenderChat(msgs, addGenerationPrompt))
}

// CountChat returns len(EncodeChat(msgs, addGenerationPrompt)).
func (t *Tokenizer) CountChat(msgs []Message, addGenerationPrompt bool) int {
	return t.Count(RenderChat(msgs, addGenerationPrompt))
}

// CountMessage prices one message on its own: the tokens it costs as the
// only message of a conversation, BOS excluded, i.e.
// CountChat([]Message{m}, false) - ChatBaseOverhead. Within a longer
// conversation the template frames tool results and tool calls differently
// (see RenderChat), so use CountChat for an exact total.
func (t *Tokenizer) CountMessage(m Message) int {
	return t.CountChat([]Message{m}, false) - ChatBaseOverhead
}

// ChatBaseOverhead is the number of tokens the template adds once per
// conversation: the BOS token. A generation prompt adds one more
// (<｜Assistant｜>).
const ChatBaseOverhead = 1

// MessageOverhead returns the number of marker tokens the DeepSeek V3 chat
// template wraps around one message of role, in the steady state of a
// conversation. Each marker is a single added token, so the count does not
// depend on the content:
//   - "user": 1 (<｜User｜>);
//   - "assistant": 2 (<｜Assistant｜> or <｜tool▁outputs▁end｜>, and
//     <｜end▁of▁sentence｜>);
//   - "tool": 2 (<｜tool▁output▁begin｜>, <｜tool▁output▁end｜>), not counting
//     the "\n" between consecutive results nor the <｜tool▁outputs▁begin｜>
//     of the first one;
//   - "system" and any other role: 0 (system text is joined into the
//     prompt head with "\n\n").
//
// Tool calls are not covered: their framing mixes markers with text that
// merges with the name and arguments, so price a conversation with tool
// calls exactly with CountChat.
func MessageOverhead(role string) int {
	switch role {
	case "user":
		return 1
	case "assistant", "tool":
		return 2
	}
	return 0
}
