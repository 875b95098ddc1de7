package surface

import "github.com/go-json-experiment/json/jsontext"

// Roles of a Message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is an identified message value: the payload of every surface event.
// Fields this build does not know are kept in Unknown and written back, so a
// message survives a decode/encode round trip.
type Message struct {
	ID      string         `json:"id"`
	Role    string         `json:"role"`
	Source  Source         `json:"source"`
	Content []Block        `json:"content"`
	Unknown jsontext.Value `json:",embed"`
}

// Source says where a message came from: kind "user", "plugin" (Plugin set),
// "model" (Provider and Model set) or "tool" (CallID set).
type Source struct {
	Kind     string         `json:"kind"`
	Plugin   string         `json:"plugin,omitzero"`
	Provider string         `json:"provider,omitzero"`
	Model    string         `json:"model,omitzero"`
	CallID   string         `json:"callId,omitzero"`
	Unknown  jsontext.Value `json:",embed"`
}

// Block types.
const (
	BlockText       = "text"
	BlockReasoning  = "reasoning"
	BlockToolCall   = "tool-call"
	BlockToolResult = "tool-result"
)

// Block is one content block. The typed fields hold the known block kinds:
// text and reasoning (Text), tool-call (ID, Name, Arguments), tool-result
// (ToolCallID, IsError, Content). Any other block type (image, file, ...) and
// any field this build does not know is carried in Unknown unchanged.
type Block struct {
	Type       string
	Text       string
	ID         string
	Name       string
	Arguments  string // the raw JSON string the model produced
	ToolCallID string
	IsError    bool
	Content    []Block
	Unknown    jsontext.Value // other members, as a JSON object
}

// CloneBlocks copies blocks deeply enough (nested tool-result content
// included) that changing the copy's blocks cannot reach the original's.
// The bytes of Unknown are shared: they are never changed in place.
func CloneBlocks(bs []Block) []Block {
	if bs == nil {
		return nil
	}
	out := make([]Block, len(bs))
	for i, b := range bs {
		b.Content = CloneBlocks(b.Content)
		out[i] = b
	}
	return out
}

// Text returns a text block.
func Text(s string) Block { return Block{Type: BlockText, Text: s} }

// ToolCall returns a tool-call block.
func ToolCall(id, name, arguments string) Block {
	return Block{Type: BlockToolCall, ID: id, Name: name, Arguments: arguments}
}

// ToolResult returns a tool-result block.
func ToolResult(callID string, isError bool, content ...Block) Block {
	if content == nil {
		content = []Block{}
	}
	return Block{Type: BlockToolResult, ToolCallID: callID, IsError: isError, Content: content}
}

func (b *Block) known() bool {
	switch b.Type {
	case BlockText, BlockReasoning, BlockToolCall, BlockToolResult:
		return true
	}
	return false
}

// TextOf returns the concatenated text of the text blocks in content.
func TextOf(content []Block) string {
	if len(content) == 1 && content[0].Type == BlockText {
		return content[0].Text
	}
	var s string
	for _, b := range content {
		if b.Type == BlockText {
			s += b.Text
		}
	}
	return s
}

// ToolCalls returns the tool-call blocks of m in order.
func (m *Message) ToolCalls() []Block {
	var calls []Block
	for _, b := range m.Content {
		if b.Type == BlockToolCall {
			calls = append(calls, b)
		}
	}
	return calls
}
