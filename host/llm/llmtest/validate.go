package llmtest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The validators check a request body against the request rules of each
// API's public reference, the ones a history can break (a loopback server
// that accepts what the real API refuses would hide the bug). Each returns
// nil for a body the API accepts, else an error naming the rule.

// ValidateAnthropic checks a Messages API request body:
//   - messages is not empty, starts with a user message and alternates
//     user and assistant;
//   - a text block has non-whitespace text;
//   - the tool_use blocks of an assistant message are answered, each by
//     one tool_result block, in the user message right after it, whose
//     tool_result blocks come before its other blocks; a tool_result
//     answers a tool_use of the assistant message right before it; ids are
//     unique;
//   - a thinking block carries a signature, a redacted_thinking block data;
//   - at most 4 blocks carry cache_control (system, tools and messages);
//   - max_tokens is positive, and a thinking budget_tokens is at least
//     1024 and below it;
//   - with thinking enabled, temperature is absent or 1, and a request
//     whose last message holds tool_result blocks has an assistant message
//     before it that starts with a thinking or redacted_thinking block.
func ValidateAnthropic(body []byte) error {
	var req struct {
		MaxTokens   int64             `json:"max_tokens"`
		Temperature *float64          `json:"temperature"`
		System      []json.RawMessage `json:"system"`
		Tools       []json.RawMessage `json:"tools"`
		Thinking    *struct {
			Type   string `json:"type"`
			Budget int64  `json:"budget_tokens"`
		} `json:"thinking"`
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("anthropic: the body is not a request: %w", err)
	}
	if req.MaxTokens <= 0 {
		return fmt.Errorf("anthropic: max_tokens must be positive, got %d", req.MaxTokens)
	}
	if t := req.Thinking; t != nil && t.Type == "enabled" && (t.Budget < 1024 || t.Budget >= req.MaxTokens) {
		return fmt.Errorf("anthropic: thinking.budget_tokens must be ≥ 1024 and < max_tokens (%d), got %d", req.MaxTokens, t.Budget)
	}
	if t := req.Thinking; t != nil && t.Type == "enabled" && req.Temperature != nil && *req.Temperature != 1 {
		return fmt.Errorf("anthropic: temperature may only be set to 1 when thinking is enabled, got %v", *req.Temperature)
	}
	if len(req.Messages) == 0 {
		return fmt.Errorf("anthropic: messages must not be empty")
	}
	n := len(req.Messages)
	marks := 0
	for _, raw := range append(append([]json.RawMessage(nil), req.System...), req.Tools...) {
		if hasMember(raw, "cache_control") {
			marks++
		}
	}
	seen := map[string]bool{}
	var open []string // tool_use ids of the previous assistant message
	for i, m := range req.Messages {
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if m.Role != want {
			return fmt.Errorf("anthropic: messages.%d: roles must alternate starting with user: want %s, got %q", i, want, m.Role)
		}
		if len(m.Content) == 0 {
			return fmt.Errorf("anthropic: messages.%d: content must not be empty", i)
		}
		var uses []string
		answered := map[string]bool{}
		others := false
		for j, raw := range m.Content {
			var b struct {
				Type      string  `json:"type"`
				Text      *string `json:"text"`
				ID        string  `json:"id"`
				ToolUseID string  `json:"tool_use_id"`
				Signature string  `json:"signature"`
				Data      string  `json:"data"`
			}
			if err := json.Unmarshal(raw, &b); err != nil {
				return fmt.Errorf("anthropic: messages.%d.content.%d: not a block: %w", i, j, err)
			}
			if hasMember(raw, "cache_control") {
				marks++
			}
			at := fmt.Sprintf("anthropic: messages.%d.content.%d", i, j)
			switch b.Type {
			case "text":
				if b.Text == nil || strings.TrimSpace(*b.Text) == "" {
					return fmt.Errorf("%s: text content blocks must contain non-whitespace text", at)
				}
				others = true
			case "tool_use":
				if m.Role != "assistant" {
					return fmt.Errorf("%s: tool_use only in assistant messages", at)
				}
				if b.ID == "" || seen[b.ID] {
					return fmt.Errorf("%s: tool_use ids must be unique and not empty (%q)", at, b.ID)
				}
				seen[b.ID] = true
				uses = append(uses, b.ID)
			case "tool_result":
				if m.Role != "user" {
					return fmt.Errorf("%s: tool_result only in user messages", at)
				}
				if others {
					return fmt.Errorf("%s: tool_result blocks must come first in the user message", at)
				}
				if !contains(open, b.ToolUseID) || answered[b.ToolUseID] {
					return fmt.Errorf("%s: unexpected tool_use_id %q in tool_result blocks: each tool_result must have a corresponding tool_use block in the previous message", at, b.ToolUseID)
				}
				answered[b.ToolUseID] = true
			case "thinking":
				if m.Role != "assistant" || b.Signature == "" {
					return fmt.Errorf("%s: a thinking block needs a signature and an assistant message", at)
				}
			case "redacted_thinking":
				if m.Role != "assistant" || b.Data == "" {
					return fmt.Errorf("%s: a redacted_thinking block needs data and an assistant message", at)
				}
			default:
				others = true
			}
		}
		if m.Role == "user" {
			for _, id := range open {
				if !answered[id] {
					return fmt.Errorf("anthropic: messages.%d: tool_use ids were found without tool_result blocks immediately after: %s", i, id)
				}
			}
		}
		open = uses
	}
	if len(open) > 0 {
		return fmt.Errorf("anthropic: the last message calls tools (%s) that no tool_result answers", strings.Join(open, ", "))
	}
	if t := req.Thinking; t != nil && t.Type == "enabled" && n >= 2 && firstType(req.Messages[n-1].Content) == "tool_result" {
		if f := firstType(req.Messages[n-2].Content); f != "thinking" && f != "redacted_thinking" {
			return fmt.Errorf("anthropic: messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`: when thinking is enabled, a final assistant message must start with a thinking block", n-2, f)
		}
	}
	if marks > 4 {
		return fmt.Errorf("anthropic: a maximum of 4 blocks with cache_control may be provided, found %d", marks)
	}
	return nil
}

// firstType returns the type of the first of blocks.
func firstType(blocks []json.RawMessage) string {
	if len(blocks) == 0 {
		return ""
	}
	var b struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(blocks[0], &b)
	return b.Type
}

// ValidateGemini checks a generateContent request body:
//   - contents is not empty, starts with a user content, has only the roles
//     user and model, and no content without parts;
//   - a part has exactly one data member (text, inlineData, fileData,
//     functionCall, functionResponse, ...); text is not empty unless the
//     part carries a thoughtSignature;
//   - "thought" is a boolean, and a part whose thought is true is a text
//     part (a thought summary); a thoughtSignature is a non-empty string;
//   - the content right after a model content with functionCall parts is a
//     user content with as many functionResponse parts, one per call, by
//     name (and id when the call has one); a functionResponse answers a
//     call of the content right before it.
func ValidateGemini(body []byte) error {
	var req struct {
		Contents []struct {
			Role  string                       `json:"role"`
			Parts []map[string]json.RawMessage `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("gemini: the body is not a request: %w", err)
	}
	if len(req.Contents) == 0 {
		return fmt.Errorf("gemini: contents must not be empty")
	}
	type call struct{ id, name string }
	var open []call
	for i, c := range req.Contents {
		if c.Role != "user" && c.Role != "model" {
			return fmt.Errorf("gemini: contents.%d: role must be user or model, got %q", i, c.Role)
		}
		if i == 0 && c.Role != "user" {
			return fmt.Errorf("gemini: contents.0: the first content must be the user's")
		}
		if len(c.Parts) == 0 {
			return fmt.Errorf("gemini: contents.%d: contents.parts must not be empty", i)
		}
		var calls []call
		responses := 0
		for j, p := range c.Parts {
			at := fmt.Sprintf("gemini: contents.%d.parts.%d", i, j)
			data := 0
			for k := range p {
				switch k {
				case "thought", "thoughtSignature", "videoMetadata", "partMetadata":
				default:
					data++
				}
			}
			if data != 1 {
				return fmt.Errorf("%s: a part must have exactly one data member, has %d", at, data)
			}
			if th, ok := p["thought"]; ok {
				var b bool
				if json.Unmarshal(th, &b) != nil || (b && p["text"] == nil) {
					return fmt.Errorf("%s: thought is a boolean, and a thought part is a text part", at)
				}
			}
			if sig, ok := p["thoughtSignature"]; ok {
				var s string
				if json.Unmarshal(sig, &s) != nil || s == "" {
					return fmt.Errorf("%s: a thoughtSignature is a non-empty string", at)
				}
			}
			if t, ok := p["text"]; ok {
				var s string
				_ = json.Unmarshal(t, &s)
				if s == "" && p["thoughtSignature"] == nil {
					return fmt.Errorf("%s: a text part must not be empty", at)
				}
			}
			if f, ok := p["functionCall"]; ok {
				var fc call
				var v struct{ ID, Name string }
				if err := json.Unmarshal(f, &v); err != nil || v.Name == "" {
					return fmt.Errorf("%s: a functionCall needs a name", at)
				}
				fc = call{v.ID, v.Name}
				if c.Role != "model" {
					return fmt.Errorf("%s: functionCall only in model contents", at)
				}
				calls = append(calls, fc)
			}
			if f, ok := p["functionResponse"]; ok {
				var v struct{ ID, Name string }
				_ = json.Unmarshal(f, &v)
				if c.Role != "user" || responses >= len(open) {
					return fmt.Errorf("%s: please ensure that the number of function response parts is equal to the number of function call parts of the function call turn", at)
				}
				if w := open[responses]; w.name != v.Name || w.id != v.ID {
					return fmt.Errorf("%s: the function response (%q, id %q) does not match the call (%q, id %q)", at, v.Name, v.ID, w.name, w.id)
				}
				responses++
			}
		}
		if len(open) > 0 && responses != len(open) {
			return fmt.Errorf("gemini: contents.%d: please ensure that the number of function response parts (%d) is equal to the number of function call parts (%d) of the function call turn", i, responses, len(open))
		}
		open = calls
	}
	if len(open) > 0 {
		return fmt.Errorf("gemini: the last content makes function calls that no response answers")
	}
	return nil
}

// ValidateOpenAI checks a chat-completions request body: messages is not
// empty; an assistant message's tool_calls are each answered by one role
// "tool" message among the messages right after it, and a tool message
// answers a call of the assistant message before it.
func ValidateOpenAI(body []byte) error {
	var req struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("openai: the body is not a request: %w", err)
	}
	if len(req.Messages) == 0 {
		return fmt.Errorf("openai: messages must not be empty")
	}
	open := map[string]bool{}
	for i, m := range req.Messages {
		if m.Role == "tool" {
			if !open[m.ToolCallID] {
				return fmt.Errorf("openai: messages.%d: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (%q)", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			continue
		}
		if len(open) > 0 {
			return fmt.Errorf("openai: messages.%d: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'", i)
		}
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("openai: the last message's tool_calls have no tool messages")
	}
	return nil
}

func hasMember(raw json.RawMessage, name string) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m[name] != nil
}

func contains(ids []string, id string) bool {
	for _, s := range ids {
		if s == id {
			return true
		}
	}
	return false
}
