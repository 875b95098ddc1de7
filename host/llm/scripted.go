package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/surface"
)

// Script is an offline model's script: the replies it plays, in order.
//
// A script file is JSON (see testdata/example-script.json):
//
//	{
//	  "delayMs": 0,
//	  "replies": [
//	    {"text": "Hello! What shall we do?"},
//	    {"match": "weather", "reasoning": "I should call the tool.",
//	     "toolCalls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
//	    {"text": "Sunny, 21°C.", "usage": {"inputTokens": 120, "outputTokens": 9, "cacheReadTokens": 100}},
//	    {"text": "This answer is cut", "finish": "length"},
//	    {"error": "overflow"},
//	    {"error": "rate_limit", "retryAfter": 2},
//	    {"repeat": true, "text": "Nothing more is scripted."}
//	  ]
//	}
//
// Reply members:
//   - text, reasoning: the reply's text and reasoning; toolCalls: a list of
//     {name, arguments, id?} where arguments is a JSON object (sent as its
//     compact JSON) or a string (sent verbatim, even if it is not JSON) and
//     id defaults to a deterministic id derived from the request;
//   - match: the reply is eligible only when the text of the latest user
//     message (tool results aside) contains match, case-insensitively;
//   - repeat: the reply stays available after use (a fallback);
//   - finish: stop, length, tool_calls or content_filter (the provider's
//     words; max-tokens, tool-calls and content-filter are accepted too);
//     default tool_calls when the reply calls tools, else stop;
//   - usage: inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens,
//     reasoningTokens as in the session log; when absent, input is the
//     request's size in bytes / 4 (rounded up, +4 per message) and output
//     the reply's size in bytes / 4;
//   - error: overflow (400 context_length_exceeded), rate_limit (429,
//     retryAfter seconds), auth (401), bad_request (400), server (500),
//     broken (the reply streams, then the connection drops before it
//     finishes).
//
// Each request plays the first reply, in file order, that is unused (or
// repeatable) and whose match fits. When none is left the call fails with
// a BAD_REQUEST error saying the script is exhausted. delayMs pauses
// before each streamed chunk (for demos); it also spaces the chunks'
// recorded times, which are otherwise all 0, so a scripted session log is
// byte-for-byte reproducible.
type Script struct {
	DelayMS int64         `json:"delayMs,omitempty"`
	Replies []ScriptReply `json:"replies"`
}

// ScriptReply is one scripted reply (see Script).
type ScriptReply struct {
	Match      string         `json:"match,omitempty"`
	Repeat     bool           `json:"repeat,omitempty"`
	Reasoning  string         `json:"reasoning,omitempty"`
	Text       string         `json:"text,omitempty"`
	ToolCalls  []ScriptCall   `json:"toolCalls,omitempty"`
	Finish     string         `json:"finish,omitempty"`
	Usage      *surface.Usage `json:"usage,omitempty"`
	Error      string         `json:"error,omitempty"`
	RetryAfter float64        `json:"retryAfter,omitempty"`
}

// ScriptCall is a scripted tool call.
type ScriptCall struct {
	ID        string         `json:"id,omitempty"`
	Name      string         `json:"name"`
	Arguments jsontext.Value `json:"arguments,omitempty"`
}

// Scripted error kinds.
const (
	ScriptOverflow   = "overflow"
	ScriptRateLimit  = "rate_limit"
	ScriptAuth       = "auth"
	ScriptBadRequest = "bad_request"
	ScriptServer     = "server"
	ScriptBroken     = "broken"
)

var scriptFinish = map[string]string{
	"stop": "stop", "length": "length", "tool_calls": "tool_calls", "content_filter": "content_filter",
	"max-tokens": "length", "tool-calls": "tool_calls", "content-filter": "content_filter",
}

// ParseScript reads a script and checks every reply.
func ParseScript(data []byte) (*Script, error) {
	var s Script
	if err := json.Unmarshal(data, &s, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("llm: script: %w", err)
	}
	if len(s.Replies) == 0 {
		return nil, errors.New(`llm: script: "replies" is empty; a script needs at least one reply`)
	}
	if s.DelayMS < 0 {
		return nil, fmt.Errorf("llm: script: delayMs %d is negative", s.DelayMS)
	}
	for i := range s.Replies {
		if err := s.Replies[i].check(); err != nil {
			return nil, fmt.Errorf("llm: script: reply %d: %w", i, err)
		}
	}
	return &s, nil
}

// LoadScript reads and checks the script file at path.
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("llm: script: %w", err)
	}
	s, err := ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return s, nil
}

func (r *ScriptReply) check() error {
	if r.Text == "" && r.Reasoning == "" && len(r.ToolCalls) == 0 && r.Error == "" {
		return errors.New("it has no text, reasoning, toolCalls or error")
	}
	if r.Finish != "" {
		if _, ok := scriptFinish[r.Finish]; !ok {
			return fmt.Errorf("finish %q is not one of stop, length, tool_calls, content_filter", r.Finish)
		}
	}
	switch r.Error {
	case "", ScriptOverflow, ScriptRateLimit, ScriptAuth, ScriptBadRequest, ScriptServer, ScriptBroken:
	default:
		return fmt.Errorf("error %q is not one of overflow, rate_limit, auth, bad_request, server, broken", r.Error)
	}
	if r.RetryAfter < 0 {
		return fmt.Errorf("retryAfter %v is negative", r.RetryAfter)
	}
	for j, c := range r.ToolCalls {
		if c.Name == "" {
			return fmt.Errorf("tool call %d has no name", j)
		}
		switch c.Arguments.Kind() {
		case 0, '{', '"':
		default:
			return fmt.Errorf("tool call %d (%s): arguments must be a JSON object or a string", j, c.Name)
		}
	}
	return nil
}

// Scripted is an offline Model that plays a Script. It is safe for
// concurrent use; replies are handed out in request order.
type Scripted struct {
	script *Script
	mu     sync.Mutex
	used   []bool
	served int
}

// NewScripted returns a model playing s (checked by ParseScript or
// LoadScript).
func NewScripted(s *Script) *Scripted {
	return &Scripted{script: s, used: make([]bool, len(s.Replies))}
}

// Served returns the number of requests received so far, including those
// that found the script exhausted.
func (m *Scripted) Served() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.served
}

// Open opens a model from its CLI spec. Only the offline form
// "offline:<path-to-script>" is handled here; remote providers are built
// with NewClient from their configuration.
func Open(spec string) (Model, error) {
	path, ok := strings.CutPrefix(spec, "offline:")
	if !ok {
		return nil, fmt.Errorf("llm: model spec %q: only offline:<path-to-script> opens without configuration; remote providers need a base URL and key", spec)
	}
	if path == "" {
		return nil, fmt.Errorf("llm: model spec %q names no script file", spec)
	}
	s, err := LoadScript(path)
	if err != nil {
		return nil, err
	}
	return NewScripted(s), nil
}

// pick chooses the reply for req.
func (m *Scripted) pick(req *Request) (int, *ScriptReply, error) {
	last := strings.ToLower(lastUserText(req.Messages))
	m.mu.Lock()
	defer m.mu.Unlock()
	m.served++
	for i := range m.script.Replies {
		r := &m.script.Replies[i]
		if m.used[i] && !r.Repeat {
			continue
		}
		if r.Match != "" && !strings.Contains(last, strings.ToLower(r.Match)) {
			continue
		}
		m.used[i] = true
		return m.served, r, nil
	}
	return m.served, nil, fmt.Errorf("no unused reply matches the latest user message %q", shorten(last))
}

// lastUserText is the text of the latest user message holding text.
func lastUserText(msgs []*surface.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m != nil && m.Role == surface.RoleUser {
			if t, ok := joinText(m.Content); ok {
				return t
			}
		}
	}
	return ""
}

// Stream plays the next reply of the script (see Model).
func (m *Scripted) Stream(ctx context.Context, req *Request, on func(Delta)) (*Result, error) {
	if req == nil {
		return nil, errors.New("llm: scripted: nil request")
	}
	provider := req.Config.Provider
	enc, err := req.encoder()
	if err != nil {
		return nil, &Error{Code: CodeBadRequest, Provider: provider, What: "the request cannot be encoded", Hint: "rebuild it with this build", Err: err}
	}
	n, r, err := m.pick(req)
	if err != nil {
		rec := newRecorder(APIOpenAI, enc)
		e := &Error{Code: CodeBadRequest, Provider: provider, What: "the offline script is exhausted", Detail: err.Error(),
			Hint: "add replies to the script (or a reply with \"repeat\": true)"}
		res := (&assembler{}).result(false)
		res.Stream = rec.finish(-1, e, 0)
		return res, e
	}
	p := player{ctx: ctx, rec: newRecorder(APIOpenAI, enc), a: &assembler{on: on}, delay: time.Duration(m.script.DelayMS) * time.Millisecond, provider: provider}
	switch r.Error {
	case "", ScriptBroken:
	default:
		return p.status(r)
	}
	model := req.Config.Model
	head := fmt.Sprintf(`{"id":"scripted-%d","object":"chat.completion.chunk","created":0,"model":`, n)
	head += quoteJSON(model) + `,"choices":[`
	ch := func(delta, finish string) []byte {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return []byte(head + `{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`)
	}
	if err := p.send(ch(`{"role":"assistant","content":""}`, "")); err != nil {
		return p.fail(err)
	}
	for _, s := range pieces(r.Reasoning, 24) {
		if err := p.send(ch(`{"content":null,"reasoning_content":`+quoteJSON(s)+`}`, "")); err != nil {
			return p.fail(err)
		}
	}
	for _, s := range pieces(r.Text, 24) {
		if err := p.send(ch(`{"content":`+quoteJSON(s)+`}`, "")); err != nil {
			return p.fail(err)
		}
	}
	callBase := callPrefix(req)
	var outBytes int
	for j, c := range r.ToolCalls {
		id := c.ID
		if id == "" {
			id = callBase + "_" + strconv.Itoa(j)
		}
		args := scriptArgs(c.Arguments)
		outBytes += len(c.Name) + len(args)
		frags := splitBytes(args, 16)
		if len(frags) == 0 {
			frags = []string{""}
		}
		for k, f := range frags {
			d := `{"tool_calls":[{"index":` + strconv.Itoa(j)
			if k == 0 {
				d += `,"id":` + quoteJSON(id) + `,"type":"function","function":{"name":` + quoteJSON(c.Name) + `,"arguments":` + quoteJSON(f) + `}}]}`
			} else {
				d += `,"function":{"arguments":` + quoteJSON(f) + `}}]}`
			}
			if err := p.send(ch(d, "")); err != nil {
				return p.fail(err)
			}
		}
	}
	if r.Error == ScriptBroken {
		return p.fail(&Error{Code: CodeBrokenStream, Provider: provider, What: "the stream broke before the reply finished",
			Hint: "retry; the partial reply was kept", Err: errors.New("scripted connection drop")})
	}
	finish := scriptFinish[r.Finish]
	if finish == "" {
		finish = "stop"
		if len(r.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	if err := p.send(ch(`{}`, finish)); err != nil {
		return p.fail(err)
	}
	u := r.Usage
	if u == nil {
		u = &surface.Usage{Input: requestSize(req), Output: ceil4(len(r.Text) + len(r.Reasoning) + outBytes), Reasoning: ceil4(len(r.Reasoning))}
	}
	if err := p.send(usageChunk(n, model, u)); err != nil {
		return p.fail(err)
	}
	p.tick++
	res := p.a.result(true)
	res.Stream = p.rec.finish(p.ms(), nil, 0)
	return res, nil
}

// player streams one scripted reply.
type player struct {
	ctx      context.Context
	rec      *recorder
	a        *assembler
	delay    time.Duration
	tick     int64
	provider string
}

func (p *player) ms() int64 { return p.tick * p.delay.Milliseconds() }

// send waits the delay, then delivers one chunk.
func (p *player) send(c []byte) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	if p.delay > 0 {
		t := time.NewTimer(p.delay)
		select {
		case <-t.C:
		case <-p.ctx.Done():
			t.Stop()
			return p.ctx.Err()
		}
	}
	p.tick++
	before := p.a.deltas
	kept, isJSON := p.a.feed(c, "")
	p.rec.chunk(p.ms(), kept, isJSON, "")
	p.rec.delivered(p.ms(), p.a.deltas > before)
	return nil
}

func (p *player) fail(err error) (*Result, error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: CodeCancelled, Provider: p.provider, What: "the request was cancelled",
			Hint: "nothing to do; the delivered part of the reply was kept", Err: context.Cause(p.ctx)}
		if errors.Is(err, context.DeadlineExceeded) {
			e.Code, e.What, e.Hint = CodeTimeout, "the caller's deadline passed", "retry with a later deadline"
		}
	}
	res := p.a.result(false)
	res.Stream = p.rec.finish(-1, e, p.ms())
	return res, e
}

// status answers with an HTTP error, recorded and classified exactly as
// the client would.
func (p *player) status(r *ScriptReply) (*Result, error) {
	var status int
	var body string
	h := http.Header{"Content-Type": {"application/json"}}
	switch r.Error {
	case ScriptOverflow:
		status = http.StatusBadRequest
		body = `{"error":{"message":"This model's maximum context length is 131072 tokens. However, you requested more tokens. Please reduce the length of the messages.","type":"invalid_request_error","code":"context_length_exceeded"}}`
	case ScriptRateLimit:
		status = http.StatusTooManyRequests
		body = `{"error":{"message":"Rate limit reached (scripted).","type":"rate_limit_error","code":"rate_limit_exceeded"}}`
		if r.RetryAfter > 0 {
			h.Set("Retry-After", strconv.FormatFloat(r.RetryAfter, 'f', -1, 64))
		}
	case ScriptAuth:
		status = http.StatusUnauthorized
		body = `{"error":{"message":"Authentication failed (scripted).","type":"authentication_error","code":"invalid_api_key"}}`
	case ScriptBadRequest:
		status = http.StatusBadRequest
		body = `{"error":{"message":"Invalid request (scripted).","type":"invalid_request_error","code":null}}`
	default:
		status = http.StatusInternalServerError
		body = `{"error":{"message":"Internal server error (scripted).","type":"server_error","code":null}}`
	}
	p.rec.response(status, h, []byte(body))
	e := statusError(p.provider, status, h, []byte(body), time.Time{})
	res := p.a.result(false)
	res.Stream = p.rec.finish(-1, e, 0)
	return res, e
}

func usageChunk(n int, model string, u *surface.Usage) []byte {
	b := fmt.Appendf(nil, `{"id":"scripted-%d","object":"chat.completion.chunk","created":0,"model":`, n)
	b = append(b, quoteJSON(model)...)
	b = fmt.Appendf(b, `,"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d`,
		u.Input+u.CacheRead+u.CacheWrite, u.Output, u.Total(), u.CacheRead)
	if u.CacheWrite > 0 {
		b = fmt.Appendf(b, `,"cache_write_tokens":%d`, u.CacheWrite)
	}
	b = fmt.Appendf(b, `},"completion_tokens_details":{"reasoning_tokens":%d}}}`, u.Reasoning)
	return b
}

// callPrefix derives tool-call ids from the request's message ids, so ids
// are stable for a given log and distinct across its steps.
func callPrefix(req *Request) string {
	h := sha256.New()
	for _, m := range req.Messages {
		if m != nil {
			h.Write([]byte(m.ID))
			h.Write([]byte{0})
		}
	}
	return "call_" + hex.EncodeToString(h.Sum(nil)[:6])
}

func scriptArgs(v jsontext.Value) string {
	switch v.Kind() {
	case '"':
		var s string
		_ = json.Unmarshal(v, &s)
		return s
	case '{':
		if c, err := jsontext.AppendFormat(nil, v); err == nil {
			return string(c)
		}
	}
	return "{}"
}

// requestSize is the deterministic input estimate of a request.
func requestSize(req *Request) int64 {
	var n int64
	for _, m := range req.Messages {
		if m == nil {
			continue
		}
		n += 4 + blocksSize(m.Content)
	}
	for _, t := range req.Tools {
		n += ceil4(len(t))
	}
	return n
}

func blocksSize(bs []surface.Block) int64 {
	var n int64
	for i := range bs {
		b := &bs[i]
		n += ceil4(len(b.Text) + len(b.Name) + len(b.Arguments) + len(b.Unknown))
		n += blocksSize(b.Content)
	}
	return n
}

func ceil4(n int) int64 { return int64((n + 3) / 4) }

// pieces splits s into streaming pieces: words with their following
// spaces, long words cut at max runes.
func pieces(s string, max int) []string {
	var out []string
	for s != "" {
		i, runes := 0, 0
		for i < len(s) && runes < max {
			r, size := utf8.DecodeRuneInString(s[i:])
			if unicode.IsSpace(r) && runes > 0 {
				for i < len(s) {
					r, size = utf8.DecodeRuneInString(s[i:])
					if !unicode.IsSpace(r) {
						break
					}
					i += size
				}
				break
			}
			i += size
			runes++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// splitBytes cuts s into pieces of about n bytes at rune boundaries.
func splitBytes(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if cut == 0 {
			cut = n
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// quoteJSON quotes s as a JSON string; invalid UTF-8 becomes U+FFFD.
func quoteJSON(s string) string {
	b, _ := jsontext.AppendQuote(nil, s)
	return string(b)
}
