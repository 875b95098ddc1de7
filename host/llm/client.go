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

// ClientConfig configures a Client.
type ClientConfig struct {
	// BaseURL is the API root, e.g. https://api.deepseek.com or
	// http://127.0.0.1:8080/v1; the client appends /chat/completions.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>" when non-empty. It
	// never appears in errors, results or stream records: text a server
	// echoes it in is recorded with "[redacted]" in its place. Keys shorter
	// than 12 bytes are taken for local placeholders ("none", "x") and are
	// not searched for, since replacing them would corrupt ordinary text.
	APIKey Secret
	// Timeout bounds a whole attempt, from sending the request to the end
	// of the stream; 0 means no bound.
	Timeout time.Duration
	// IdleTimeout bounds the silence while waiting for response headers
	// and between stream reads (keepalive comments count as data); 0 means
	// 5 minutes, a negative value no bound.
	IdleTimeout time.Duration
	// HTTPClient sends the requests; nil means a client with no overall
	// timeout (streams are long) over http.DefaultTransport.
	HTTPClient *http.Client
	// Header holds extra request headers (e.g. organisation ids).
	Header http.Header
	// UserAgent defaults to "weir".
	UserAgent string
}

// Client is a streaming client for OpenAI-compatible chat completions. It
// is safe for concurrent use.
type Client struct {
	url  string
	key  string
	cfg  ClientConfig
	http *http.Client
}

// NewClient returns a client for the API rooted at cfg.BaseURL.
func NewClient(cfg ClientConfig) (*Client, error) {
	base := strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	if base == "" {
		return nil, errors.New("llm: client: no base URL configured")
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("llm: client: base URL %q must start with http:// or https://", base)
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 5 * time.Minute
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "weir"
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{url: base + "/chat/completions", key: string(cfg.APIKey), cfg: cfg, http: hc}, nil
}

// URL returns the endpoint the client posts to.
func (c *Client) URL() string { return c.url }

var (
	errIdle    = errors.New("idle timeout")
	errTimeout = errors.New("attempt timeout")
)

// Stream sends req and streams the reply (see Model). The body sent is
// exactly EncodeRequest(req); req.SessionID, when set, goes in the
// X-Session-Id header.
func (c *Client) Stream(ctx context.Context, req *Request, on func(Delta)) (*Result, error) {
	if req == nil {
		return nil, &Error{Code: CodeBadRequest, What: "no request was given", Hint: "this is a bug in the caller"}
	}
	body, err := EncodeRequest(req)
	if err != nil {
		return nil, &Error{Code: CodeBadRequest, Provider: req.Config.Provider, What: "the request cannot be encoded", Hint: "this is a bug in the request builder", Err: err}
	}
	provider := req.Config.Provider
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if c.cfg.Timeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, c.cfg.Timeout, errTimeout)
		defer stop()
	}
	watch := newWatchdog(c.cfg.IdleTimeout, cancel)
	defer watch.stop()

	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
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
	if c.key != "" {
		hr.Header.Set("Authorization", "Bearer "+c.key)
	}
	if req.SessionID != "" {
		hr.Header.Set("X-Session-Id", req.SessionID)
	}

	rec := newRecorder()
	start := time.Now()
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
		return fail(nil, statusError(provider, resp.StatusCode, resp.Header, raw, time.Now()))
	}

	a := &assembler{on: on}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		// The server ignored stream:true and sent one chat.completion.
		raw, err := io.ReadAll(io.LimitReader(watch.reader(resp.Body), 64<<20))
		if err != nil {
			if e := c.ctxError(ctx, provider); e != nil {
				return fail(a, e)
			}
			return fail(a, &Error{Code: CodeBrokenStream, Provider: provider, What: "the response broke before it was complete",
				Hint: "retry", Err: c.redactErr(err)})
		}
		kept, isJSON := a.feed(c.redact(bytes.TrimSpace(raw)), "")
		rec.chunk(since(), kept, isJSON, "")
		if a.failure != nil {
			e := streamError(provider, a.failure)
			e.Detail = c.redactString(e.Detail)
			return fail(a, e)
		}
		return c.complete(a, true, provider, rec, since())
	}
	done, err := c.pump(watch.reader(resp.Body), a, rec, since)
	switch {
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
	if errors.Is(err, io.EOF) && a.finished {
		return c.complete(a, false, provider, rec, since())
	}
	e := &Error{Code: CodeBrokenStream, Provider: provider, What: "the stream ended before the reply finished",
		Hint: "retry; the partial reply was kept", Err: c.redactErr(err)}
	if !errors.Is(err, io.EOF) {
		e.What, e.Detail = "the stream broke before the reply finished", c.redactString(rootMessage(err))
	}
	return fail(a, e)
}

// pump reads the event stream r into a and rec. It returns done at
// [DONE]; with a.failure set when the provider sent an error; otherwise
// the read error, io.EOF at a clean end.
func (c *Client) pump(r io.Reader, a *assembler, rec *recorder, since func() int64) (done bool, err error) {
	sse := newSSEReader(r)
	for {
		ev, err := sse.next()
		if err != nil {
			return false, err
		}
		data := c.redact(ev.Data)
		if ev.Name == "" && isDone(data) {
			return true, nil
		}
		kept, isJSON := a.feed(data, ev.Name)
		rec.chunk(since(), kept, isJSON, ev.Name)
		if a.failure != nil {
			return false, nil
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
			What: fmt.Sprintf("the provider sent nothing for %s", c.cfg.IdleTimeout),
			Hint: "the provider may be overloaded; retry, or raise the idle timeout", Err: cause}
	case errors.Is(cause, errTimeout):
		return &Error{Code: CodeTimeout, Provider: provider,
			What: fmt.Sprintf("the attempt took longer than %s", c.cfg.Timeout),
			Hint: "retry, or raise the request timeout", Err: cause}
	case errors.Is(cause, context.DeadlineExceeded):
		return &Error{Code: CodeTimeout, Provider: provider, What: "the caller's deadline passed",
			Hint: "retry with a later deadline", Err: cause}
	}
	return &Error{Code: CodeCancelled, Provider: provider, What: "the request was cancelled",
		Hint: "nothing to do; the delivered part of the reply was kept", Err: cause}
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

// watchdog cancels an attempt when no data arrived for the idle timeout.
type watchdog struct {
	d      time.Duration
	t      *time.Timer
	cancel context.CancelCauseFunc
}

func newWatchdog(d time.Duration, cancel context.CancelCauseFunc) *watchdog {
	w := &watchdog{d: d, cancel: cancel}
	if d > 0 {
		w.t = time.AfterFunc(d, func() { cancel(errIdle) })
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
	if n > 0 {
		k.w.kick()
	}
	return n, err
}
