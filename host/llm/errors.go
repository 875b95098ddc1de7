package llm

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Error codes: stable strings the agent loop records as the turn-end error
// code.
const (
	CodeAuth             = "AUTH"                    // 401, 403: key missing, wrong or not allowed
	CodeQuota            = "QUOTA"                   // 402: account balance or quota exhausted
	CodeRateLimit        = "RATE_LIMIT"              // 429: slow down; RetryAfter when the provider said
	CodeContextOverflow  = "CONTEXT_WINDOW_EXCEEDED" // the request does not fit the model's context
	CodeBadRequest       = "BAD_REQUEST"             // other 4xx, or a request that cannot be encoded
	CodeServer           = "SERVER_ERROR"            // 5xx, or an error the provider reported mid-stream
	CodeBrokenStream     = "BROKEN_STREAM"           // the stream ended before the reply finished
	CodeCancelled        = "CANCELLED"               // the caller's context was cancelled
	CodeTimeout          = "TIMEOUT"                 // a client timeout expired
	CodeNetwork          = "NETWORK"                 // the provider could not be reached
	CodeResponseTooLarge = "RESPONSE_TOO_LARGE"      // the response exceeded the route's size cap
	CodePromptBlocked    = "PROMPT_BLOCKED"          // the provider refused the prompt (Gemini promptFeedback.blockReason); not retried
)

// Error is a failed model call. Use errors.As to read it, or errors.Is with
// one of the Err* values to test the code. It never holds the API key.
type Error struct {
	Code     string
	Provider string
	// Status is the HTTP status, 0 when no response was received.
	Status int
	// What says what happened; Detail is the provider's own message
	// (shortened, secrets removed); Hint says what to do.
	What, Detail, Hint string
	// RetryAfter is how long the provider asked the caller to wait, 0
	// when it did not say.
	RetryAfter time.Duration
	// Err is the underlying cause, if any.
	Err error
}

// Sentinels for errors.Is: an *Error matches the sentinel of its Code.
var (
	ErrAuth             = &Error{Code: CodeAuth}
	ErrQuota            = &Error{Code: CodeQuota}
	ErrRateLimit        = &Error{Code: CodeRateLimit}
	ErrContextOverflow  = &Error{Code: CodeContextOverflow}
	ErrBadRequest       = &Error{Code: CodeBadRequest}
	ErrServer           = &Error{Code: CodeServer}
	ErrBrokenStream     = &Error{Code: CodeBrokenStream}
	ErrCancelled        = &Error{Code: CodeCancelled}
	ErrTimeout          = &Error{Code: CodeTimeout}
	ErrNetwork          = &Error{Code: CodeNetwork}
	ErrResponseTooLarge = &Error{Code: CodeResponseTooLarge}
	ErrPromptBlocked    = &Error{Code: CodePromptBlocked}
)

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("llm: ")
	if e.Provider != "" {
		b.WriteString(e.Provider)
		b.WriteString(": ")
	}
	b.WriteString(e.What)
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, "; the provider asks to retry after %s", e.RetryAfter)
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Retryable reports whether the same request may succeed when sent again.
// A response over the size cap is not: the same request would most likely
// run into the cap again.
func (e *Error) Retryable() bool {
	switch e.Code {
	case CodeRateLimit, CodeServer, CodeBrokenStream, CodeTimeout, CodeNetwork:
		return true
	}
	return false
}

// maxDetail bounds the provider message kept in an error.
const maxDetail = 400

// overflowWords are lowercase fragments of context-overflow messages:
// OpenAI's code, the OpenAI/DeepSeek/vLLM "maximum context length is N
// tokens" wording, vLLM's "maximum model length", llama.cpp's
// exceed_context_size_error and older "context size" wordings, and the
// generic "context window" / "prompt is too long" forms; Anthropic's
// "prompt is too long: N tokens > M maximum" and "input is too long";
// Gemini's "The input token count (N) exceeds the maximum number of tokens
// allowed (M)".
var overflowWords = []string{
	"context_length_exceeded",
	"maximum context length",
	"context length exceeded",
	"exceeds the context length",
	"exceed_context_size",
	"exceeds the available context size",
	"larger than the max context size",
	"maximum model length",
	"context window",
	"prompt is too long",
	"too many tokens in the prompt",
	"input is too long",
	"exceeds the maximum number of tokens allowed",
	"input token count",
}

// isOverflow reports whether a provider error body or message says the
// context was exceeded.
func isOverflow(text string) bool {
	t := strings.ToLower(text)
	for _, w := range overflowWords {
		if strings.Contains(t, w) {
			return true
		}
	}
	return false
}

// providerMessage extracts the human message and code from an error body:
// {"error":{"message","code","type"}} (OpenAI, and Anthropic's
// {"type":"error","error":{"type","message"}}), Google's
// {"error":{"code","message","status"}}, {"error":"..."}, {"message":...} or
// {"detail":...}; a body that is not JSON is its own message.
func providerMessage(body []byte) (msg, code string) {
	var w struct {
		Error   jsontext.Value `json:"error"`
		Message string         `json:"message"`
		Detail  jsontext.Value `json:"detail"`
	}
	if err := json.Unmarshal(body, &w, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)); err != nil {
		return strings.TrimSpace(string(body)), ""
	}
	switch w.Error.Kind() {
	case '{':
		var e struct {
			Message string         `json:"message"`
			Code    jsontext.Value `json:"code"`
			Type    string         `json:"type"`
			Status  string         `json:"status"`
		}
		_ = json.Unmarshal(w.Error, &e, jsontext.AllowDuplicateNames(true))
		code = e.Type
		if s, ok := jsonString(e.Code); ok && s != "" {
			code = s
		}
		if e.Status != "" {
			// Google's {"code":429,"status":"RESOURCE_EXHAUSTED"}: the
			// status names the error, the code is the HTTP status.
			code = e.Status
		}
		if e.Message != "" {
			return e.Message, code
		}
	case '"':
		if s, ok := jsonString(w.Error); ok {
			return s, ""
		}
	}
	if w.Message != "" {
		return w.Message, ""
	}
	if s, ok := jsonString(w.Detail); ok {
		return s, ""
	}
	if len(w.Detail) > 0 {
		return string(w.Detail), ""
	}
	return strings.TrimSpace(string(body)), ""
}

func jsonString(v jsontext.Value) (string, bool) {
	if v.Kind() != '"' {
		if v.Kind() == '0' {
			return string(v), true
		}
		return "", false
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// shorten trims s to one line of at most maxDetail bytes.
func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxDetail {
		cut := maxDetail
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// statusError classifies a non-2xx response. body is already redacted.
func statusError(provider string, status int, h http.Header, body []byte, now time.Time) *Error {
	msg, code := providerMessage(body)
	e := &Error{Provider: provider, Status: status, Detail: shorten(msg)}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden,
		// Gemini refuses a wrong key with 400 INVALID_ARGUMENT.
		status == http.StatusBadRequest && strings.Contains(strings.ToLower(msg), "api key not valid"):
		e.Code, e.What = CodeAuth, "the provider rejected the API key"
		e.Hint = "check the API key configured for this provider and that it may use this model"
	case status == http.StatusPaymentRequired:
		e.Code, e.What = CodeQuota, "the provider refused the request for lack of balance or quota"
		e.Hint = "top up or raise the account's quota, or switch provider"
	case status == http.StatusTooManyRequests:
		e.Code, e.What = CodeRateLimit, "rate limited by the provider"
		e.RetryAfter = retryAfter(h, now)
		if e.RetryAfter == 0 {
			e.RetryAfter = retryDelay(body)
		}
		e.Hint = "wait and retry, or lower the request rate"
	case status == http.StatusRequestEntityTooLarge,
		status >= 400 && status < 500 && (code == "context_length_exceeded" || isOverflow(msg)):
		e.Code, e.What = CodeContextOverflow, "the request exceeds the model's context window"
		e.Hint = "compact the session or drop history, then retry"
	case status == http.StatusNotFound:
		e.Code, e.What = CodeBadRequest, "the provider has no such endpoint or model"
		e.Hint = "check the base URL (the client appends /chat/completions) and the model name"
	case status >= 400 && status < 500:
		e.Code, e.What = CodeBadRequest, "the provider rejected the request"
		e.Hint = "the request is malformed or unsupported for this model; see the provider message"
	case status == 529 || code == "overloaded_error" || code == "UNAVAILABLE":
		e.Code, e.What = CodeServer, "the provider is overloaded"
		e.RetryAfter = retryAfter(h, now)
		e.Hint = "retry later"
	default:
		e.Code, e.What = CodeServer, "the provider failed to serve the request"
		e.RetryAfter = retryAfter(h, now)
		e.Hint = "retry later"
	}
	return e
}

// retryDelay reads the delay of a google.rpc.RetryInfo detail in a Gemini
// error body ({"error":{"details":[{"@type":"...RetryInfo","retryDelay":
// "13s"}]}}), 0 when there is none.
func retryDelay(body []byte) time.Duration {
	var w struct {
		Error struct {
			Details []struct {
				Type  string `json:"@type"`
				Delay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &w, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)) != nil {
		return 0
	}
	for _, d := range w.Error.Details {
		if !strings.HasSuffix(d.Type, "google.rpc.RetryInfo") {
			continue
		}
		if v, err := time.ParseDuration(d.Delay); err == nil {
			return seconds(v.Seconds())
		}
	}
	return 0
}

// retryAfter reads Retry-After (delay seconds or an HTTP date) or the
// retry-after-ms extension. A date in the past yields 0.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return seconds(ms / 1000)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return seconds(s)
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return min(d.Round(time.Second), maxRetryAfter)
		}
	}
	return 0
}

// maxRetryAfter bounds a provider's requested delay: a larger value (or
// "Inf") reads as this, so it can neither overflow nor go negative.
const maxRetryAfter = 24 * time.Hour

// seconds converts a delay in seconds to a Duration in [0, maxRetryAfter];
// NaN and non-positive values are 0.
func seconds(s float64) time.Duration {
	switch {
	case !(s > 0): // also NaN
		return 0
	case s >= maxRetryAfter.Seconds():
		return maxRetryAfter
	}
	return time.Duration(s * float64(time.Second))
}

// blockedError is the error of a response that blocked the prompt: the
// same request would be blocked again, so it is not retryable, and the
// reason is kept in Detail.
func blockedError(provider string, a *assembler) *Error {
	detail := a.blocked
	if a.blockedWhy != "" {
		detail += ": " + a.blockedWhy
	}
	return &Error{Code: CodePromptBlocked, Provider: provider, Detail: shorten(detail),
		What: "the provider blocked the prompt and sent no reply",
		Hint: "change the message or the history that the provider refused"}
}

// streamError classifies an error object a provider sent inside the stream.
func streamError(provider string, raw jsontext.Value) *Error {
	body := []byte(`{"error":` + string(raw) + `}`)
	msg, code := providerMessage(body)
	e := &Error{Provider: provider, Detail: shorten(msg)}
	if code == "context_length_exceeded" || isOverflow(msg) {
		e.Code, e.What = CodeContextOverflow, "the request exceeds the model's context window"
		e.Hint = "compact the session or drop history, then retry"
		return e
	}
	e.Code, e.What = CodeServer, "the provider reported an error mid-stream"
	e.Hint = "retry; the partial reply was kept"
	switch code {
	case "rate_limit_error", "RESOURCE_EXHAUSTED":
		e.Code, e.What = CodeRateLimit, "the provider reported a rate limit mid-stream"
	case "overloaded_error", "UNAVAILABLE":
		e.What = "the provider reported mid-stream that it is overloaded"
	}
	return e
}
