package mcp

import (
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/surface"
)

// Defaults of a server's bounds.
const (
	DefaultTimeout      = 60 * time.Second
	DefaultStartTimeout = 10 * time.Second
	DefaultMaxResult    = 256 << 10
	DefaultFailures     = 3
)

// Sep separates the server's name from the tool's in an offered tool name.
const Sep = "__"

// toolNameRE is what model APIs accept as a tool name.
var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// NameProblem says what is wrong with a server name, or "".
func NameProblem(name string) string {
	switch {
	case name == "" || len(name) > 32 || !toolNameRE.MatchString(name):
		return "a server name is 1 to 32 letters, digits, '_' or '-', as it starts the names of its tools"
	case strings.Contains(name, Sep):
		return "a server name cannot contain \"" + Sep + "\": it separates the server's name from the tool's"
	}
	return ""
}

// Config configures one server. Exactly one of Command and URL is set.
type Config struct {
	// Name is the server's name (mcp.servers.NAME); its tools are offered
	// as Name__tool.
	Name string
	// Command and Args start a stdio server; Env is added to its
	// environment (values may refer to ${VAR}).
	Command string
	Args    []string
	Env     map[string]string
	// URL is a streamable HTTP server's endpoint; Headers are sent with
	// every request (values may refer to ${VAR}).
	URL     string
	Headers map[string]string
	// Timeout bounds one call (0: DefaultTimeout); the agent's tool
	// timeout bounds it too.
	Timeout time.Duration
	// StartTimeout bounds starting, initializing and listing (0:
	// DefaultStartTimeout).
	StartTimeout time.Duration
	// MaxResult caps the bytes of a result's text (0: DefaultMaxResult).
	MaxResult int
	// Failures is how many consecutive failures open the breaker (0:
	// DefaultFailures).
	Failures int
}

// Options are what every server of a Set shares.
type Options struct {
	// Getenv expands ${VAR} in header and env values; nil reads none.
	Getenv func(string) string
	// Logger receives the servers' stderr and their failures; nil
	// discards them.
	Logger hclog.Logger
	// HTTPClient carries the streamable HTTP servers' requests; nil uses
	// a new client.
	HTTPClient *http.Client
}

// Server is one MCP server. It is safe for concurrent use.
type Server struct {
	cfg      Config
	opts     Options
	log      hclog.Logger
	attached *sdk.ClientSession // an embedder's session, never restarted

	// changed is called (on a goroutine of its own) when the tool list
	// changed: the server said so, or its breaker opened.
	changed func()

	mu       sync.Mutex
	cs       *sdk.ClientSession
	proc     *exec.Cmd
	tools    []host.Tool
	listed   bool
	stale    bool // a list_changed arrived since the list was read
	failures int  // consecutive
	disabled error
	closed   bool
}

// New makes a server from its configuration; nothing is started.
func New(cfg Config, opts Options) *Server {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.MaxResult <= 0 {
		cfg.MaxResult = DefaultMaxResult
	}
	if cfg.Failures <= 0 {
		cfg.Failures = DefaultFailures
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Server{cfg: cfg, opts: opts, log: log.Named("mcp").With("server", cfg.Name)}
}

// Attach makes a server of a session an embedder connected: its tools are
// offered like a configured server's, under name, with cfg's bounds (its
// Command and URL are ignored). The host never closes or restarts it; a
// broken session counts toward the breaker. The session's client should
// call [Server.ListChanged] from its ToolListChangedHandler.
func Attach(name string, cs *sdk.ClientSession, cfg Config, opts Options) *Server {
	cfg.Name, cfg.Command, cfg.URL = name, "", ""
	s := New(cfg, opts)
	s.attached, s.cs = cs, cs
	return s
}

// Name is the server's name.
func (s *Server) Name() string { return s.cfg.Name }

// Disabled is the reason the server's breaker opened, or nil.
func (s *Server) Disabled() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.disabled
}

// ListChanged marks the tool list as stale and lists it again, then tells
// the Set. The client's ToolListChangedHandler calls it.
func (s *Server) ListChanged() {
	s.mu.Lock()
	s.stale = true
	s.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.StartTimeout)
		defer cancel()
		if _, err := s.Tools(ctx); err != nil {
			s.log.Warn("listing the changed tools failed", "error", err)
		}
		if s.changed != nil {
			s.changed()
		}
	}()
}

// Tools returns the server's tools, connecting and listing first when the
// server has not been listed yet or said its list changed. A disabled
// server has none.
func (s *Server) Tools(ctx context.Context) ([]host.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.disabled != nil {
		return nil, s.disabled
	}
	if s.listed && !s.stale {
		return s.tools, nil
	}
	cs, err := s.connectLocked(ctx)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	var tools []host.Tool
	seen := map[string]bool{}
	for t, err := range cs.Tools(lctx, nil) {
		if err != nil {
			s.failLocked(cs, fmt.Errorf("listing its tools: %w", err))
			return nil, s.errorf("listing its tools failed: %v", err)
		}
		mt, err := s.tool(t)
		if err == nil && seen[mt.name] {
			err = fmt.Errorf("its name %q is taken by another of the server's tools", mt.name)
		}
		if err != nil {
			s.log.Warn("tool not offered", "tool", t.Name, "reason", err.Error())
			continue
		}
		seen[mt.name] = true
		tools = append(tools, mt)
	}
	s.tools, s.listed, s.stale = tools, true, false
	return tools, nil
}

// errorf is an error naming the server.
func (s *Server) errorf(format string, args ...any) error {
	return fmt.Errorf("mcp server %q: "+format, append([]any{s.cfg.Name}, args...)...)
}

// connectLocked returns the session, connecting first when there is none.
func (s *Server) connectLocked(ctx context.Context) (*sdk.ClientSession, error) {
	if s.closed {
		return nil, s.errorf("closed")
	}
	if s.cs != nil {
		return s.cs, nil
	}
	if s.attached != nil {
		return nil, s.errorf("its session is closed")
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "weir", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { s.ListChanged() },
	})
	var t sdk.Transport
	var proc *exec.Cmd
	switch {
	case s.cfg.Command != "":
		var err error
		if t, proc, err = s.stdio(); err != nil {
			s.countLocked(err)
			return nil, err
		}
	case s.cfg.URL != "":
		hc := s.opts.HTTPClient
		if hc == nil {
			hc = &http.Client{}
		}
		hc = &http.Client{Transport: &capped{base: hc.Transport, headers: s.expand(s.cfg.Headers), limit: int64(s.frameLimit())},
			CheckRedirect: hc.CheckRedirect, Jar: hc.Jar}
		t = &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc, MaxRetries: -1, MaxEventSize: s.frameLimit()}
	default:
		return nil, s.errorf("configures neither command nor url")
	}
	cs, err := client.Connect(cctx, t, nil)
	if err != nil {
		if proc != nil {
			stop(proc)
		}
		err = s.errorf("starting it failed: %v", err)
		s.countLocked(err)
		return nil, err
	}
	s.cs, s.proc = cs, proc
	s.log.Debug("connected")
	return cs, nil
}

// frameLimit bounds one JSON-RPC message from the server.
func (s *Server) frameLimit() int { return 4*s.cfg.MaxResult + 64<<10 }

// stdio starts the server's command with its stderr going to the log.
func (s *Server) stdio() (sdk.Transport, *exec.Cmd, error) {
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	cmd.Env = BaseEnv(os.Getenv)
	for k, v := range s.expand(s.cfg.Env) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = &lineLog{log: s.log}
	cmd.WaitDelay = time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, s.errorf("%v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, s.errorf("%v", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, s.errorf("starting %q failed: %v", s.cfg.Command, err)
	}
	return &sdk.IOTransport{Reader: stdout, Writer: stdin, MaxLineLength: s.frameLimit()}, cmd, nil
}

// baseEnv are the host's environment variables a stdio server inherits.
var baseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TMPDIR", "TZ", "SYSTEMROOT"}

// BaseEnv is the environment a stdio server starts with, before its
// configured env: the few variables of the host's that programs need to
// run (PATH, HOME, USER, LANG, TMPDIR, ...), never its secrets.
func BaseEnv(getenv func(string) string) []string {
	var env []string
	for _, k := range baseEnv {
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// expand returns m with ${VAR} replaced from Getenv.
func (s *Server) expand(m map[string]string) map[string]string {
	getenv := s.opts.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = Expand(v, getenv)
	}
	return out
}

// refRE is a ${NAME} reference to an environment variable.
var refRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Expand replaces each ${NAME} in v with getenv(NAME).
func Expand(v string, getenv func(string) string) string {
	return refRE.ReplaceAllStringFunc(v, func(ref string) string { return getenv(ref[2 : len(ref)-1]) })
}

// Refs are the environment variables v refers to.
func Refs(v string) []string {
	var names []string
	for _, m := range refRE.FindAllStringSubmatch(v, -1) {
		names = append(names, m[1])
	}
	return names
}

// failLocked records a failure of the connection cs: it is closed (the
// next call starts the server again) and the breaker counts it.
func (s *Server) failLocked(cs *sdk.ClientSession, err error) {
	if cs != nil && cs == s.cs && s.attached == nil {
		s.closeLocked()
	}
	s.countLocked(err)
}

// countLocked counts a failure toward the breaker.
func (s *Server) countLocked(err error) {
	s.failures++
	s.log.Warn("server failed", "failures", s.failures, "error", err)
	if s.failures < s.cfg.Failures || s.disabled != nil {
		return
	}
	s.disabled = s.errorf("disabled after %d consecutive failures (the breaker, mcp.servers.%s.failures); the last: %v",
		s.failures, s.cfg.Name, err)
	s.log.Error("server disabled", "failures", s.failures)
	s.tools, s.listed = nil, true
	if s.attached == nil {
		s.closeLocked()
	}
	if s.changed != nil {
		go s.changed()
	}
}

func (s *Server) closeLocked() {
	if s.cs != nil {
		_ = s.cs.Close()
		s.cs = nil
	}
	if s.proc != nil {
		stop(s.proc)
		s.proc = nil
	}
	s.listed = false
}

// stop ends a server process that did not exit when its stdin closed.
func stop(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
	_ = cmd.Wait()
}

// Close ends the server's connection (and process). An attached session
// is left to its owner.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.attached != nil {
		s.cs = nil
		return nil
	}
	s.closeLocked()
	return nil
}

// call runs one tool call.
func (s *Server) call(ctx context.Context, tool string, arguments string) ([]surface.Block, error) {
	args := jsontext.Value(strings.TrimSpace(arguments))
	if len(args) == 0 {
		args = jsontext.Value(`{}`)
	}
	if !args.IsValid() || args.Kind() != '{' {
		return nil, errors.New("the arguments are not a JSON object")
	}
	s.mu.Lock()
	if s.disabled != nil {
		s.mu.Unlock()
		return nil, s.disabled
	}
	cs, err := s.connectLocked(ctx)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: tool, Arguments: stdjson.RawMessage(args)})
	if err != nil {
		var werr *jsonrpc.Error
		switch {
		case errors.As(err, &werr):
			// The server answered with an error: it is alive.
			s.ok()
			return nil, s.errorf("tool %q: %s", tool, werr.Message)
		case ctx.Err() == context.Canceled:
			// The turn was cancelled; the server was told.
			return nil, ctx.Err()
		case cctx.Err() != nil && ctx.Err() == nil:
			err = s.errorf("tool %q did not answer within %s (mcp.servers.%s.timeout)", tool, s.cfg.Timeout, s.cfg.Name)
		case ctx.Err() != nil:
			err = s.errorf("tool %q did not answer within the tool timeout (tools.timeout): %v", tool, ctx.Err())
		default:
			err = s.errorf("tool %q failed: %v", tool, err)
		}
		s.mu.Lock()
		s.failLocked(cs, err)
		s.mu.Unlock()
		return nil, err
	}
	s.ok()
	blocks := s.blocks(res)
	if res.IsError {
		return nil, errors.New(surface.TextOf(blocks))
	}
	return blocks, nil
}

// ok resets the breaker's count after a call the server answered.
func (s *Server) ok() {
	s.mu.Lock()
	s.failures = 0
	s.mu.Unlock()
}

// blocks maps a result to surface text blocks, capped at MaxResult bytes
// in all.
func (s *Server) blocks(res *sdk.CallToolResult) []surface.Block {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s: %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			if r := c.Resource; r != nil && r.Text != "" {
				parts = append(parts, r.Text)
			} else if r != nil {
				parts = append(parts, fmt.Sprintf("[resource %s, %s, %d bytes, not shown]", r.URI, r.MIMEType, len(r.Blob)))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent, json.Deterministic(true)); err == nil {
			parts = append(parts, string(b))
		}
	}
	var out []surface.Block
	left := s.cfg.MaxResult
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	for _, p := range parts {
		if left <= 0 {
			break
		}
		if len(p) > left {
			p = truncate(p, left)
		}
		left -= len(p)
		out = append(out, surface.Text(p))
	}
	if total > s.cfg.MaxResult {
		out = append(out, surface.Text(fmt.Sprintf("\n[result cut: %d of %d bytes shown (mcp.servers.%s.maxResultKiB)]",
			s.cfg.MaxResult-left, total, s.cfg.Name)))
	}
	if len(out) == 0 {
		out = []surface.Block{surface.Text("")}
	}
	return out
}

// truncate cuts s to at most n bytes on a UTF-8 boundary.
func truncate(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// tool makes the host tool of a server tool.
func (s *Server) tool(t *sdk.Tool) (*Tool, error) {
	name := s.cfg.Name + Sep + sanitize(t.Name)
	if !toolNameRE.MatchString(name) {
		return nil, fmt.Errorf("its name %q is longer than the 64 characters model APIs accept", name)
	}
	params := jsontext.Value(`{"type":"object","properties":{}}`)
	if t.InputSchema != nil {
		b, err := json.Marshal(t.InputSchema, json.Deterministic(true))
		if err != nil {
			return nil, fmt.Errorf("its input schema does not encode: %v", err)
		}
		params = b
	}
	if params.Kind() != '{' {
		return nil, errors.New("its input schema is not a JSON object")
	}
	schema, err := surface.Data(struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  jsontext.Value `json:"parameters"`
	}{name, t.Description, params})
	if err != nil {
		return nil, err
	}
	ro := t.Annotations != nil && t.Annotations.ReadOnlyHint
	return &Tool{name: name, remote: t.Name, desc: t.Description, schema: schema, readOnly: ro, srv: s}, nil
}

// sanitize maps the characters of a tool name model APIs do not accept to
// "_".
func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, name)
}

// Tool is one server tool offered to the model.
type Tool struct {
	name, remote, desc string
	schema             jsontext.Value
	readOnly           bool
	srv                *Server
}

// Name is the offered name, SERVER__TOOL.
func (t *Tool) Name() string { return t.name }

// Schema is the tool's schema object with the server's input schema.
func (t *Tool) Schema() jsontext.Value { return t.schema }

// Description is the server's description of the tool.
func (t *Tool) Description() string { return t.desc }

// Server is the name of the server that serves the tool.
func (t *Tool) Server() string { return t.srv.cfg.Name }

// Remote is the tool's name on its server.
func (t *Tool) Remote() string { return t.remote }

// IsReadOnly reports the server's readOnlyHint annotation: the permission
// policy allows such a tool by default.
func (t *Tool) IsReadOnly() bool { return t.readOnly }

// Run calls the tool on its server.
func (t *Tool) Run(ctx context.Context, arguments string) ([]surface.Block, error) {
	return t.srv.call(ctx, t.remote, arguments)
}

// capped is an HTTP transport that adds the configured headers to each
// request and bounds a JSON response's body.
type capped struct {
	base    http.RoundTripper
	headers map[string]string
	limit   int64
}

func (c *capped) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	base := c.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, err // an event stream is bounded per event (MaxEventSize)
	}
	resp.Body = &limitBody{r: resp.Body, left: c.limit}
	return resp, nil
}

// limitBody fails a body longer than its limit.
type limitBody struct {
	r    io.ReadCloser
	left int64
}

func (b *limitBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errors.New("the response is longer than the server's message limit (4 × mcp.servers.NAME.maxResultKiB)")
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitBody) Close() error { return b.r.Close() }

// lineLog writes a server's stderr to the log, a line per entry, each cut
// at 4 KiB.
type lineLog struct {
	log hclog.Logger
	mu  sync.Mutex
	buf []byte
}

func (w *lineLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			if len(w.buf) > 4<<10 {
				w.emit(w.buf)
				w.buf = w.buf[:0]
			}
			return len(p), nil
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

func (w *lineLog) emit(line []byte) {
	if len(line) > 4<<10 {
		line = line[:4<<10]
	}
	w.log.Info("stderr", "line", strings.TrimRight(string(line), "\r"))
}
