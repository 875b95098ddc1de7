package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Secret is an API key. It formats as "[redacted]" so that printing a
// ClientConfig never shows it.
type Secret string

func (Secret) String() string   { return "[redacted]" }
func (Secret) GoString() string { return `"[redacted]"` }

// minRedact is the shortest key that is redacted from recorded and reported
// text; shorter keys ("none", "x") are placeholders of local servers, and
// replacing them would corrupt ordinary words.
const minRedact = 12

// Default bounds of an attempt. The route keys timeout, idleTimeout and
// maxResponseMiB of host/config default to the same values.
const (
	DefaultTimeout          = 10 * time.Minute
	DefaultIdleTimeout      = 2 * time.Minute
	DefaultMaxResponseBytes = 16 << 20
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// API is the wire protocol; "" means APIOpenAI.
	API API
	// BaseURL is the API root, e.g. https://api.deepseek.com or
	// http://127.0.0.1:8080/v1; the client appends /chat/completions
	// (openai), /v1/messages (anthropic) or
	// /models/MODEL:streamGenerateContent?alt=sse (gemini).
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>" (openai),
	// "x-api-key: <key>" (anthropic) or "x-goog-api-key: <key>" (gemini)
	// when non-empty. It
	// never appears in errors, results or stream records: text a server
	// echoes it in is recorded with "[redacted]" in its place. Keys shorter
	// than 12 bytes are taken for local placeholders ("none", "x") and are
	// not searched for, since replacing them would corrupt ordinary text.
	APIKey Secret
	// Route is the name of the configured route the client serves. The
	// errors of the bounds below name its keys (models.ROUTE.idleTimeout);
	// empty names them generically (models.NAME.idleTimeout).
	Route string
	// Timeout bounds a whole attempt, from sending the request to the end
	// of the stream; 0 means DefaultTimeout, a negative value no bound.
	Timeout time.Duration
	// IdleTimeout bounds the time without progress: the wait for the
	// response headers, then the gaps between payloads that advance the
	// reply (text, reasoning, a tool-call fragment, a finish reason, usage
	// or an error). SSE comments (keep-alives) and empty or malformed
	// chunks are not progress, so a server that only keeps the connection
	// open is stopped. 0 means DefaultIdleTimeout, a negative value no
	// bound.
	IdleTimeout time.Duration
	// MaxResponseBytes caps the bytes of one response body, keep-alives
	// included; a larger response fails with CodeResponseTooLarge, keeping
	// the part read so far. 0 means DefaultMaxResponseBytes, a negative
	// value no cap.
	MaxResponseBytes int64
	// Logger receives warnings about the stream, such as malformed chunks
	// (once per attempt); nil means none.
	Logger hclog.Logger
	// HTTPClient sends the requests; nil means a client with no overall
	// timeout (streams are long) over http.DefaultTransport.
	HTTPClient *http.Client
	// Header holds extra request headers (e.g. organisation ids).
	Header http.Header
	// UserAgent defaults to "weir".
	UserAgent string
}

// Client is a streaming model client for one API (see ClientConfig.API):
// the same bounds, redaction and stream record for every API. It is safe
// for concurrent use.
type Client struct {
	api  API
	base string
	url  string
	key  string
	cfg  ClientConfig
	http *http.Client
	log  hclog.Logger
	// afterFunc arms the idle timer; tests replace it to control time.
	afterFunc func(time.Duration, func()) timer
}

// timer is the part of *time.Timer the idle watchdog uses.
type timer interface {
	Reset(time.Duration) bool
	Stop() bool
}

func realAfterFunc(d time.Duration, f func()) timer { return time.AfterFunc(d, f) }

// NewClient returns a client for the API rooted at cfg.BaseURL.
func NewClient(cfg ClientConfig) (*Client, error) {
	base := strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	if base == "" {
		return nil, errors.New("llm: client: no base URL configured")
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("llm: client: base URL %q must start with http:// or https://", base)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "weir"
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	api, err := ParseAPI(string(cfg.API))
	if err != nil {
		return nil, fmt.Errorf("llm: client: %w", err)
	}
	cfg.API = api
	u, _ := endpoint(api, base, "MODEL")
	return &Client{api: api, base: base, url: u, key: string(cfg.APIKey), cfg: cfg, http: hc, log: log,
		afterFunc: realAfterFunc}, nil
}

// URL returns the endpoint the client posts to; for the Gemini API the
// model stands as MODEL.
func (c *Client) URL() string { return c.url }

// API returns the client's API.
func (c *Client) API() API { return c.api }

var (
	errIdle     = errors.New("idle timeout")
	errTimeout  = errors.New("attempt timeout")
	errTooLarge = errors.New("response size cap exceeded")
)

// Stream sends req and streams the reply (see Model). The body sent is
// exactly Encode(c.API(), req); req.SessionID, when set, goes in the
// X-Session-Id header.
func (c *Client) Stream(ctx context.Context, req *Request, on func(Delta)) (*Result, error) {
	if req == nil {
		return nil, &Error{Code: CodeBadRequest, What: "no request was given", Hint: "this is a bug in the caller"}
	}
	if req.API != "" && req.API != c.api {
		return nil, &Error{Code: CodeBadRequest, Provider: req.Config.Provider,
			What: fmt.Sprintf("the request was built for the %s API but this client speaks %s", req.API, c.api),
			Hint: "send it through a client of its API"}
	}
	body, err := Encode(c.api, req)
	if err != nil {
		return nil, &Error{Code: CodeBadRequest, Provider: req.Config.Provider, What: "the request cannot be encoded for the " + string(c.api) + " API", Hint: "this is a bug in the request builder, or the history holds content this API cannot carry", Err: err}
	}
	provider := req.Config.Provider
	if t, ok := droppedTemperature(c.api, req); ok {
		c.log.Warn("the request's temperature was left out: the Messages API takes no temperature other than 1 with thinking on",
			"provider", provider, "route", c.cfg.Route, "temperature", t, "reasoningEffort", req.Config.ReasoningEffort)
	}
	url, err := endpoint(c.api, c.base, req.Config.Model)
	if err != nil {
		return nil, &Error{Code: CodeBadRequest, Provider: provider, What: "the request cannot be addressed", Hint: "this is a bug in the request builder", Err: err}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if c.cfg.Timeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, c.cfg.Timeout, errTimeout)
		defer stop()
	}
	watch := c.newWatchdog(cancel)
	defer watch.stop()

	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, &Error{Code: CodeBadRequest, Provider: provider, What: "the request cannot be built", Hint: "check the base URL", Err: c.redactErr(err)}
	}
	for k, vs := range c.cfg.Header {
		for _, v := range vs {
			hr.Header.Add(k, v)
		}
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	hr.Header.Set("User-Agent", c.cfg.UserAgent)
	authorize(c.api, hr.Header, c.key)
	if req.SessionID != "" {
		hr.Header.Set("X-Session-Id", req.SessionID)
	}

	enc, _ := req.encoder() // Encode refused a version this build has not
	rec := newRecorder(c.api, enc)
	start := time.Now()
	rec.dispatched(start)
	since := func() int64 { return time.Since(start).Milliseconds() }
	fail := func(a *assembler, e *Error) (*Result, error) {
		if a == nil {
			a = &assembler{}
		}
		res := a.result(false)
		res.Stream = rec.finish(-1, e, since())
		return res, e
	}

	resp, err := c.http.Do(hr)
	if err != nil {
		return fail(nil, c.transportError(ctx, provider, err, "sending the request"))
	}
	defer resp.Body.Close()
	watch.kick()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		raw, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		raw = c.redact(raw)
		rec.response(resp.StatusCode, resp.Header, raw)
		if rerr != nil && len(raw) == 0 {
			if e := c.ctxError(ctx, provider); e != nil {
				return fail(nil, e)
			}
		}
		e := statusError(provider, resp.StatusCode, resp.Header, raw, time.Now())
		if e.Status == http.StatusNotFound && e.Code == CodeBadRequest {
			e.Hint = "check the base URL (" + endpointHint(c.api) + ") and the model name"
		}
		return fail(nil, e)
	}

	a := &assembler{api: c.api, on: on}
	defer c.warnMalformed(provider, a)
	stream := c.capped(resp.Body)
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		// The server ignored stream:true and sent one chat.completion.
		// Whitespace (DeepSeek's keep-alive for such requests) is not
		// progress.
		raw, err := io.ReadAll(watch.reader(stream))
		if err != nil {
			if e := c.ctxError(ctx, provider); e != nil {
				return fail(a, e)
			}
			if errors.Is(err, errTooLarge) {
				return fail(a, c.tooLarge(provider))
			}
			return fail(a, &Error{Code: CodeBrokenStream, Provider: provider, What: "the response broke before it was complete",
				Hint: "retry", Err: c.redactErr(err)})
		}
		before := a.deltas
		kept, isJSON := a.feed(c.redact(bytes.TrimSpace(raw)), "")
		ms := since()
		rec.chunk(ms, kept, isJSON, "")
		rec.delivered(ms, a.deltas > before)
		if a.failure != nil {
			e := streamError(provider, a.failure)
			e.Detail = c.redactString(e.Detail)
			return fail(a, e)
		}
		if a.blocked != "" {
			return fail(a, blockedError(provider, a))
		}
		return c.complete(a, true, provider, rec, since())
	}
	done, err := c.pump(stream, a, rec, since, watch.kick)
	switch {
	case a.failure == nil && a.blocked != "" && !a.finished:
		return fail(a, blockedError(provider, a))
	case done:
		return c.complete(a, true, provider, rec, since())
	case a.failure != nil:
		e := streamError(provider, a.failure)
		e.Detail = c.redactString(e.Detail)
		return fail(a, e)
	}
	if e := c.ctxError(ctx, provider); e != nil {
		return fail(a, e)
	}
	if errors.Is(err, errTooLarge) {
		return fail(a, c.tooLarge(provider))
	}
	if errors.Is(err, io.EOF) && a.finished {
		// Gemini's stream has no terminator: its end after a finish
		// reason is the end of the reply.
		return c.complete(a, c.api == APIGemini, provider, rec, since())
	}
	e := &Error{Code: CodeBrokenStream, Provider: provider, What: "the stream ended before the reply finished",
		Hint: "retry; the partial reply was kept", Err: c.redactErr(err)}
	if !errors.Is(err, io.EOF) {
		e.What, e.Detail = "the stream broke before the reply finished", c.redactString(rootMessage(err))
	}
	return fail(a, e)
}

// pump reads the event stream r into a and rec, calling progress after
// each payload that advanced the reply (see ClientConfig.IdleTimeout). It
// returns done at [DONE] (Anthropic: after message_stop); with a.failure set when the provider sent an
// error; otherwise the read error, io.EOF at a clean end.
func (c *Client) pump(r io.Reader, a *assembler, rec *recorder, since func() int64, progress func()) (done bool, err error) {
	sse := newSSEReader(r)
	for {
		ev, err := sse.next()
		if err != nil {
			return false, err
		}
		data := c.redact(ev.Data)
		if ev.Name == "" && a.api != APIAnthropic && isDone(data) {
			return true, nil
		}
		before, deltas := a.progress, a.deltas
		kept, isJSON := a.feed(data, ev.Name)
		ms := since()
		rec.chunk(ms, kept, isJSON, ev.Name)
		rec.delivered(ms, a.deltas > deltas)
		if a.failure != nil {
			return false, nil
		}
		if a.stopped {
			return true, nil
		}
		if a.progress != before {
			progress()
		}
	}
}

func isDone(data []byte) bool {
	return len(data) >= 6 && string(bytes.TrimSpace(data)) == "[DONE]"
}

// complete settles a stream that ended normally; done says it ended with
// [DONE] (or was one non-streamed body). A reply whose finish reason
// reports a provider-side failure fails.
func (c *Client) complete(a *assembler, done bool, provider string, rec *recorder, ms int64) (*Result, error) {
	res := a.result(done)
	var doneMS int64 = -1
	if done {
		doneMS = ms
	}
	if a.finish == "insufficient_system_resource" {
		// DeepSeek ends a reply so when its servers run out of capacity
		// mid-generation: the reply is cut short, not finished.
		e := &Error{Code: CodeServer, Provider: provider,
			What: "the provider stopped the reply for lack of server resources",
			Hint: "retry later; the partial reply was kept"}
		res.Stream = rec.finish(doneMS, e, ms)
		return res, e
	}
	res.Stream = rec.finish(doneMS, nil, 0)
	return res, nil
}

// ctxError maps the end of ctx to an error, nil while ctx is live.
func (c *Client) ctxError(ctx context.Context, provider string) *Error {
	if ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errIdle):
		return &Error{Code: CodeTimeout, Provider: provider,
			What: fmt.Sprintf("the provider made no progress for %s (idle timeout; keep-alive comments and empty chunks do not count)", c.cfg.IdleTimeout),
			Hint: fmt.Sprintf("the provider may be overloaded or stuck; retry, or raise %s if it is known to pause this long", c.configKey("idleTimeout")),
			Err:  cause}
	case errors.Is(cause, errTimeout):
		return &Error{Code: CodeTimeout, Provider: provider,
			What: fmt.Sprintf("the attempt took longer than %s (the deadline of one model attempt)", c.cfg.Timeout),
			Hint: fmt.Sprintf("retry, or raise %s if replies this long are expected", c.configKey("timeout")),
			Err:  cause}
	case errors.Is(cause, context.DeadlineExceeded):
		return &Error{Code: CodeTimeout, Provider: provider, What: "the caller's deadline passed",
			Hint: "retry with a later deadline", Err: cause}
	}
	return &Error{Code: CodeCancelled, Provider: provider, What: "the request was cancelled",
		Hint: "nothing to do; the delivered part of the reply was kept", Err: cause}
}

// configKey is the configuration key of the route setting name.
func (c *Client) configKey(name string) string {
	route := c.cfg.Route
	if route == "" {
		route = "NAME"
	}
	return "models." + route + "." + name
}

// tooLarge is the error of a response over the size cap.
func (c *Client) tooLarge(provider string) *Error {
	return &Error{Code: CodeResponseTooLarge, Provider: provider,
		What: fmt.Sprintf("the response exceeded the size cap of %s per attempt", byteSize(c.cfg.MaxResponseBytes)),
		Hint: fmt.Sprintf("the reply was cut off there and is not retried; raise %s if replies this large are expected", c.configKey("maxResponseMiB")),
		Err:  errTooLarge}
}

// byteSize formats n as whole MiB when it is a multiple of one.
func byteSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// warnMalformed logs, once per attempt, that the provider sent payloads
// that are not valid JSON. They are kept in the stream record as strings
// and otherwise skipped.
func (c *Client) warnMalformed(provider string, a *assembler) {
	if a.malformed == 0 {
		return
	}
	c.log.Warn("the provider sent malformed stream chunks; they were recorded and skipped",
		"provider", provider, "route", c.cfg.Route, "count", a.malformed, "first", a.firstMalformed)
}

// capped bounds r to the configured response size.
func (c *Client) capped(r io.Reader) io.Reader {
	if c.cfg.MaxResponseBytes < 0 {
		return r
	}
	return &capReader{r: r, left: c.cfg.MaxResponseBytes}
}

// capReader reads at most left more bytes, then fails with errTooLarge if
// the source has more.
type capReader struct {
	r    io.Reader
	left int64
	over bool
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.over {
		return 0, errTooLarge
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	if int64(n) > c.left {
		n, c.over = int(c.left), true
		c.left = 0
		return n, errTooLarge
	}
	c.left -= int64(n)
	return n, err
}

func (c *Client) transportError(ctx context.Context, provider string, err error, doing string) *Error {
	if e := c.ctxError(ctx, provider); e != nil {
		return e
	}
	e := &Error{Code: CodeNetwork, Provider: provider, What: "the provider could not be reached while " + doing,
		Hint: "check the base URL and the network, then retry", Err: c.redactErr(err)}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		e.Code, e.What = CodeTimeout, "the connection to the provider timed out while "+doing
		e.Hint = "retry; check the network"
	}
	e.Detail = c.redactString(rootMessage(err))
	return e
}

// rootMessage is the innermost error text, without the method and URL that
// net/http wraps it in.
func rootMessage(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

func (c *Client) redacting() bool { return len(c.key) >= minRedact }

func (c *Client) redact(b []byte) []byte {
	if !c.redacting() || !bytes.Contains(b, []byte(c.key)) {
		return b
	}
	return bytes.ReplaceAll(b, []byte(c.key), []byte("[redacted]"))
}

func (c *Client) redactString(s string) string {
	if !c.redacting() {
		return s
	}
	return strings.ReplaceAll(s, c.key, "[redacted]")
}

// redactErr replaces err by its redacted text when the text holds the key.
func (c *Client) redactErr(err error) error {
	if err == nil || !c.redacting() || !strings.Contains(err.Error(), c.key) {
		return err
	}
	return errors.New(c.redactString(err.Error()))
}

// watchdog cancels an attempt when it made no progress for the idle
// timeout.
type watchdog struct {
	d time.Duration
	t timer
}

func (c *Client) newWatchdog(cancel context.CancelCauseFunc) *watchdog {
	w := &watchdog{d: c.cfg.IdleTimeout}
	if w.d > 0 {
		w.t = c.afterFunc(w.d, func() { cancel(errIdle) })
	}
	return w
}

func (w *watchdog) kick() {
	if w.t != nil {
		w.t.Reset(w.d)
	}
}

func (w *watchdog) stop() {
	if w.t != nil {
		w.t.Stop()
	}
}

// reader returns r kicking the watchdog on every read that brought
// something other than whitespace.
func (w *watchdog) reader(r io.Reader) io.Reader {
	if w.t == nil {
		return r
	}
	return &kickReader{r: r, w: w}
}

type kickReader struct {
	r io.Reader
	w *watchdog
}

func (k *kickReader) Read(p []byte) (int, error) {
	n, err := k.r.Read(p)
	if len(bytes.TrimSpace(p[:n])) > 0 {
		k.w.kick()
	}
	return n, err
}
