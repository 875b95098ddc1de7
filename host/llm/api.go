package llm

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// API names the wire protocol a route speaks. The adapter layer sits after
// the surface fold and before the wire: every adapter turns the same
// Request (header config, derived messages, tools) into its API's body by
// a pure function, and reads its API's stream into the same Result.
type API string

// The supported APIs.
const (
	// APIOpenAI is the OpenAI-compatible chat-completions protocol
	// (DeepSeek, OpenAI, vLLM, Ollama, llama.cpp): POST
	// BASE/chat/completions, "Authorization: Bearer KEY".
	APIOpenAI API = "openai"
	// APIAnthropic is Anthropic's Messages API: POST BASE/v1/messages with
	// "x-api-key: KEY" and "anthropic-version: 2023-06-01"; BASE is e.g.
	// https://api.anthropic.com.
	APIAnthropic API = "anthropic"
	// APIGemini is Google's Gemini API: POST
	// BASE/models/MODEL:streamGenerateContent?alt=sse with
	// "x-goog-api-key: KEY"; BASE is e.g.
	// https://generativelanguage.googleapis.com/v1beta.
	APIGemini API = "gemini"
)

// APIs lists the supported APIs, the default first.
var APIs = []API{APIOpenAI, APIAnthropic, APIGemini}

// AnthropicVersion is the anthropic-version header the Anthropic adapter
// sends.
const AnthropicVersion = "2023-06-01"

// ParseAPI returns the API named s; "" is APIOpenAI.
func ParseAPI(s string) (API, error) {
	switch API(s) {
	case "", APIOpenAI:
		return APIOpenAI, nil
	case APIAnthropic, APIGemini:
		return API(s), nil
	}
	return "", fmt.Errorf("llm: %q is not an API; use openai, anthropic or gemini", s)
}

// HistorySystem reports whether the API has a system role inside the
// message history, so that a system message after the head reaches the
// model as a system message. Anthropic and Gemini have one native system
// slot beside the history (system / systemInstruction) and none inside it.
func (a API) HistorySystem() bool { return a == APIOpenAI || a == "" }

// Encode returns the exact body the adapter of api sends for req: a pure
// function of api and req (see EncodeRequest, EncodeAnthropic and
// EncodeGemini). The Gemini body does not name the model: it is in the
// URL.
func Encode(api API, req *Request) ([]byte, error) {
	switch api {
	case "", APIOpenAI:
		return EncodeRequest(req)
	case APIAnthropic:
		return EncodeAnthropic(req)
	case APIGemini:
		return EncodeGemini(req)
	}
	return nil, fmt.Errorf("llm: encode: unknown API %q", api)
}

// endpoint is the URL the adapter of api posts a request for model to.
func endpoint(api API, base, model string) (string, error) {
	switch api {
	case APIAnthropic:
		return base + "/v1/messages", nil
	case APIGemini:
		if model == "" {
			return "", errors.New("the request names no model (config.model is empty)")
		}
		return base + "/models/" + url.PathEscape(model) + ":streamGenerateContent?alt=sse", nil
	}
	return base + "/chat/completions", nil
}

// authorize sets the API's authentication headers for key.
func authorize(api API, h http.Header, key string) {
	switch api {
	case APIAnthropic:
		h.Set("anthropic-version", AnthropicVersion)
		if key != "" {
			h.Set("x-api-key", key)
		}
	case APIGemini:
		if key != "" {
			h.Set("x-goog-api-key", key)
		}
	default:
		if key != "" {
			h.Set("Authorization", "Bearer "+key)
		}
	}
}

// endpointHint is the part of a 404 hint that says what the client appends.
func endpointHint(api API) string {
	switch api {
	case APIAnthropic:
		return "the client appends /v1/messages"
	case APIGemini:
		return "the client appends /models/MODEL:streamGenerateContent?alt=sse"
	}
	return "the client appends /chat/completions"
}

// systemHead returns the text of the request's leading system message; ok
// is false when there is none or it has no text (the native slot takes no
// empty text), and rest is the index of the first history message.
func systemHead(req *Request) (text string, ok bool, rest int) {
	if len(req.Messages) == 0 || req.Messages[0] == nil || req.Messages[0].Role != "system" {
		return "", false, 0
	}
	text, ok = joinText(req.Messages[0].Content)
	return text, ok && text != "", 1
}

// laterSystemText is how a system message after the head reaches an API
// without a history system role: as user text, marked so the model can
// tell it from the user's words.
func laterSystemText(text string) string {
	return "<system>\n" + strings.TrimSpace(text) + "\n</system>"
}
