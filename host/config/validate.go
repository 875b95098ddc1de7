package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/mcp"
	"github.com/weirhost/weir/host/policy"
	"github.com/weirhost/weir/plugins/compaction-basic/compact"
)

// envNameRE is what an environment variable name looks like.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// wasmMagic starts every WebAssembly binary module.
var wasmMagic = []byte("\x00asm")

// fail reports a problem with the value at id unless its type check
// already failed. The key is the file's spelling when the value came from
// the file, else the effective key.
func (l *loader) fail(id path, format string, args ...any) {
	if l.isBad(id) {
		return
	}
	src := l.blame(id)
	key := l.effective(id)
	if src.Key != "" {
		key, src.Key = src.Key, ""
	}
	l.add(&Problem{Key: key, Reason: fmt.Sprintf(format, args...), Source: src})
}

// validate checks the decoded configuration as a whole and reads the
// prompt section files.
func (l *loader) validate(c *Config) {
	routes := sortedKeys(c.Models)
	switch {
	case c.Model == "":
		l.fail(path{"model"}, "is required: name the default route (one of %s)", strings.Join(routes, ", "))
	case c.Models[c.Model] == nil:
		l.fail(path{"model"}, "%q is not a configured route%s; use one of %s or add models.%s",
			c.Model, suggestion(c.Model, routes), strings.Join(routes, ", "), c.Model)
	}
	for _, name := range routes {
		l.route(path{"models", name}, c.Models[name])
	}
	l.sections(path{"prompt", "sections"}, c.Prompt.Sections)
	for _, name := range sortedKeys(c.Prompt.PerModel) {
		id := path{"prompt", "perModel", name}
		if c.Models[name] == nil {
			l.fail(id, "%q is not a configured route%s; perModel keys are route names (%s)",
				name, suggestion(name, routes), strings.Join(routes, ", "))
		}
		l.sections(id.with("sections"), c.Prompt.PerModel[name].Sections)
	}
	l.data(path{"prompt", "data"}, c.Prompt.Data)
	l.plugins(c.Plugins)
	for _, p := range c.Plugins {
		switch id := (path{"plugins", p.Name, "route"}); {
		case p.Route == "":
		case p.Role != RoleCompaction:
			l.fail(id, "is for compaction plugins, whose summarize calls it routes; %q has role %q", p.Name, p.Role)
		case c.Models[p.Route] == nil:
			l.fail(id, "%q is not a configured route%s; use one of %s", p.Route, suggestion(p.Route, routes), strings.Join(routes, ", "))
		}
	}
	l.sandbox(&c.Sandbox)
	l.tools(&c.Tools)
	l.mcp(&c.MCP)
	for _, p := range []struct {
		key string
		v   float64
	}{{"cacheHit", c.Eval.Prices.CacheHit}, {"cacheMiss", c.Eval.Prices.CacheMiss}, {"output", c.Eval.Prices.Output}} {
		if p.v < 0 || math.IsNaN(p.v) || math.IsInf(p.v, 0) {
			l.fail(path{"eval", "prices", p.key}, "must be a price in dollars per million tokens (a number ≥ 0), got %g", p.v)
		}
	}
	if c.Retry.MaxWait <= 0 {
		l.fail(path{"retry", "maxWait"}, "must be a positive duration, got %s; e.g. \"30s\"", c.Retry.MaxWait)
	}
	if strings.TrimSpace(c.Sessions.Dir) == "" {
		l.fail(path{"sessions", "dir"}, "is required: give the folder for session files (default %q)", ".weir/sessions")
	}
	if why := StoreProblem(c.Sessions.Store); why != "" {
		l.fail(path{"sessions", "store"}, "%s", why)
	}
	if !slices.Contains(LogLevels, c.Log.Level) {
		l.fail(path{"log", "level"}, "%q is not a log level; use %s", c.Log.Level, oneOf(LogLevels))
	}
	if !slices.Contains(LogFormats, c.Log.Format) {
		l.fail(path{"log", "format"}, "%q is not a log format; use %s", c.Log.Format, oneOf(LogFormats))
	}
}

func (l *loader) route(id path, r *Route) {
	if r.Provider == "" {
		l.fail(id.with("provider"), "is required: name the provider recorded in the log (e.g. deepseek, openai, offline)")
	}
	if r.Model == "" {
		l.fail(id.with("model"), "is required: give the provider's model name (or offline:SCRIPT.json for the offline provider)")
	}
	apiOK := slices.Contains(APIs, r.API)
	if !apiOK {
		l.fail(id.with("api"), "%q is not an API%s; use %s", r.API, suggestion(r.API, APIs), oneOf(APIs))
	}
	if r.Provider != "offline" {
		example := map[string]string{"anthropic": "https://api.anthropic.com",
			"gemini": "https://generativelanguage.googleapis.com/v1beta"}[r.API]
		if example == "" {
			example = "https://api.deepseek.com"
		}
		if r.BaseURL == "" {
			l.fail(id.with("baseURL"), "is required for provider %q: give the %s API base, e.g. %s", r.Provider, apiName(r.API), example)
		} else if u, err := url.Parse(r.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			l.fail(id.with("baseURL"), "%q is not an http(s) URL; give the API base, e.g. %s", r.BaseURL, example)
		}
	}
	if apiOK && r.SystemPromptUpdate == "in-history" && !llm.API(r.API).HistorySystem() {
		l.fail(id.with("systemPromptUpdate"), "\"in-history\" cannot be used with api %q: the %s API has a single system slot beside the messages and no system role inside them, "+
			"so a system message appended to the history would not reach the model as a system prompt; use \"replace\"", r.API, apiName(r.API))
	}
	if r.APIKeyEnv != "" && !envNameRE.MatchString(r.APIKeyEnv) {
		l.fail(id.with("apiKeyEnv"), "is not an environment variable name: it names the variable that holds the key "+
			"(e.g. DEEPSEEK_API_KEY), never the key itself; put the key in that variable")
	}
	if known, ok := llm.KnownLimits(r.Model); ok && r.ContextWindow == 0 {
		r.ContextWindow = known.Context
	}
	switch {
	case r.ContextWindow == 0:
		l.fail(id.with("contextWindow"), "is required for model %q, whose context window Weir does not know: give it in tokens (e.g. 128000)", r.Model)
	case r.ContextWindow < 0:
		l.fail(id.with("contextWindow"), "must be a positive number of tokens, got %d; give the model's context window (e.g. 128000), or 0 for a known model's", r.ContextWindow)
	case r.MaxTokens >= r.ContextWindow:
		l.fail(id.with("maxTokens"), "%d must be below contextWindow %d: the completion must leave room for the prompt; lower maxTokens (0 leaves it to the provider)",
			r.MaxTokens, r.ContextWindow)
	}
	if r.OutputCap < 0 {
		l.fail(id.with("outputCap"), "must not be negative, got %d; use 0 for the model's known limit", r.OutputCap)
	}
	if r.MaxTokens < 0 {
		l.fail(id.with("maxTokens"), "must not be negative, got %d; use 0 to leave the cap to the provider", r.MaxTokens)
	}
	if !slices.Contains(Tokenizers, r.Tokenizer) {
		l.fail(id.with("tokenizer"), "%q is not a tokenizer%s; use %s", r.Tokenizer, suggestion(r.Tokenizer, Tokenizers), oneOf(Tokenizers))
	}
	if r.ReasoningEffort != "" && !slices.Contains(llm.ReasoningEfforts, r.ReasoningEffort) {
		l.fail(id.with("reasoningEffort"), "%q is not a reasoning effort%s; use %s or leave it empty for the API's default",
			r.ReasoningEffort, suggestion(r.ReasoningEffort, llm.ReasoningEfforts), oneOf(llm.ReasoningEfforts))
	}
	if !slices.Contains(SystemPromptUpdates, r.SystemPromptUpdate) {
		l.fail(id.with("systemPromptUpdate"), "%q is not a prompt update mode%s; use %s",
			r.SystemPromptUpdate, suggestion(r.SystemPromptUpdate, SystemPromptUpdates), oneOf(SystemPromptUpdates))
	}
	if r.Timeout <= 0 {
		l.fail(id.with("timeout"), "must be a positive duration, got %s: it is the deadline of one model attempt (default %s)",
			r.Timeout, DefaultRouteTimeout)
	}
	switch {
	case r.IdleTimeout <= 0:
		l.fail(id.with("idleTimeout"), "must be a positive duration, got %s: it is the longest a model attempt may go without progress (default %s)",
			r.IdleTimeout, DefaultRouteIdleTimeout)
	case r.Timeout > 0 && r.IdleTimeout > r.Timeout:
		l.fail(id.with("idleTimeout"), "%s is longer than timeout %s, so it could never fire; lower idleTimeout or raise timeout",
			r.IdleTimeout, r.Timeout)
	}
	if r.MaxResponseMiB < 1 || r.MaxResponseMiB > MaxResponseMiBLimit {
		l.fail(id.with("maxResponseMiB"), "must be between 1 and %d, got %d: it caps the bytes of one model response (default %d)",
			MaxResponseMiBLimit, r.MaxResponseMiB, DefaultMaxResponseMiB)
	}
}

// sections checks a section list and reads its files into Text.
func (l *loader) sections(id path, ss []Section) {
	seen := map[string]int{}
	for i := range ss {
		s := &ss[i]
		eid := id.with(index(i))
		switch first, dup := seen[s.Key]; {
		case s.Key == "":
			l.fail(eid.with("key"), "is required: give each section a unique key (e.g. base, style)")
		case dup:
			l.fail(eid.with("key"), "%q is used twice (also %s); give each section its own key", s.Key, id.with(index(first)))
		default:
			seen[s.Key] = i
		}
		switch {
		case s.Text != "" && s.File != "":
			l.fail(eid.with("file"), "is given together with text; keep one of text and file")
		case s.Text == "" && s.File == "":
			l.fail(eid.with("text"), "is required: give the section's text, or a file holding it")
		case s.File != "":
			p := s.File
			if !filepath.IsAbs(p) {
				p = filepath.Join(l.dirOf(eid.with("file")), p)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				l.fail(eid.with("file"), "cannot be read (%v); check the path (a relative path starts at the directory of the file that names it)", unwrapPath(err))
				continue
			}
			s.File, s.Text = p, string(b)
		}
	}
}

// data checks prompt.data: keys unique and not the host's own, each with
// text or a file (read now; plugins get no filesystem).
func (l *loader) data(id path, ds []Section) {
	seen := map[string]int{}
	for i := range ds {
		d := &ds[i]
		eid := id.with(index(i))
		switch first, dup := seen[d.Key]; {
		case d.Key == "":
			l.fail(eid.with("key"), "is required: give each data entry a unique key (e.g. instructions)")
		case slices.Contains(HostDataKeys, d.Key):
			l.fail(eid.with("key"), "%q is provided by the host (%s); choose another key", d.Key, strings.Join(HostDataKeys, ", "))
		case dup:
			l.fail(eid.with("key"), "%q is used twice (also %s); give each data entry its own key", d.Key, id.with(index(first)))
		default:
			seen[d.Key] = i
		}
		switch {
		case d.Text != "" && d.File != "":
			l.fail(eid.with("file"), "is given together with text; keep one of text and file")
		case d.File != "":
			p := d.File
			if !filepath.IsAbs(p) {
				p = filepath.Join(l.dirOf(eid.with("file")), p)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				l.fail(eid.with("file"), "cannot be read (%v); check the path (a relative path starts at the directory of the file that names it)", unwrapPath(err))
				continue
			}
			d.File, d.Text = p, string(b)
		}
	}
}

func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

func (l *loader) plugins(ps []Plugin) {
	single := map[string]string{}
	for i := range ps {
		p := &ps[i]
		id := path{"plugins", p.Name}
		builtinRole, first := builtinRole(p.Name)
		switch {
		case p.Role == "":
			l.fail(id.with("role"), "is required: say what the plugin provides (%s)", oneOf(Roles))
		case !slices.Contains(Roles, p.Role):
			l.fail(id.with("role"), "%q is not a role%s; use %s", p.Role, suggestion(p.Role, Roles), oneOf(Roles))
		case p.Path == "" && first && p.Role != builtinRole:
			l.fail(id.with("role"), "the first-party %s plugin has role %q, not %q; remove the role or give the path of another plugin",
				p.Name, builtinRole, p.Role)
		}
		if p.Path == "" {
			if !first {
				l.fail(id.with("path"), "is required: %q is not a first-party plugin (%s); give the path of its .wasm file",
					p.Name, oneOf(builtinNames()))
			} else if p.Name == PluginCompactionBasic {
				if _, err := compact.ParseConfig(p.Config); err != nil {
					l.fail(id.with("config"), "%v; see the compaction-basic keys in docs/config.md", err)
				}
			}
		} else {
			l.wasm(id.with("path"), p)
		}
		if p.Enabled && (p.Role == RoleSystemPrompt || p.Role == RoleTokenMeter) {
			if other, dup := single[p.Role]; dup {
				l.fail(id.with("enabled"), "a second enabled %s plugin (%q is one already); only one may run: disable one of them",
					p.Role, other)
			} else {
				single[p.Role] = p.Name
			}
		}
	}
}

// wasm checks a plugin path and resolves it.
func (l *loader) wasm(id path, p *Plugin) {
	full := p.Path
	if !filepath.IsAbs(full) {
		full = filepath.Join(l.dirOf(id), full)
	}
	st, err := os.Stat(full)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		l.fail(id, "%s does not exist; build the plugin or fix the path (a relative path starts at the directory of the file that names it)", full)
		return
	case err != nil:
		l.fail(id, "cannot be read: %v", unwrapPath(err))
		return
	case !st.Mode().IsRegular():
		l.fail(id, "%s is not a file; give the path of the plugin's .wasm file", full)
		return
	}
	f, err := os.Open(full)
	if err != nil {
		l.fail(id, "cannot be read: %v", unwrapPath(err))
		return
	}
	defer f.Close()
	head := make([]byte, 4)
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, wasmMagic) {
		l.fail(id, "%s is not a WebAssembly module (no \\0asm header); give the path of the plugin's .wasm file", full)
		return
	}
	p.Path = full
}

func (l *loader) sandbox(s *Sandbox) {
	id := path{"sandbox"}
	if s.MemoryLimitMiB < 4 || s.MemoryLimitMiB > 4096 {
		l.fail(id.with("memoryLimitMiB"), "must be between 4 and 4096, got %d: a Go guest needs 4 MiB to start and wasm32 addresses at most 4096 MiB", s.MemoryLimitMiB)
	}
	if s.OutputLimitKiB <= 0 || s.OutputLimitKiB > 1<<20 {
		l.fail(id.with("outputLimitKiB"), "must be between 1 and 1048576 (1 GiB), got %d", s.OutputLimitKiB)
	}
	timeouts := []struct {
		name string
		d    time.Duration
	}{{"prompt", s.CallTimeout.Prompt}, {"compaction", s.CallTimeout.Compaction}, {"meter", s.CallTimeout.Meter}}
	for _, t := range timeouts {
		if t.d <= 0 {
			l.fail(id.with("callTimeout", t.name), "must be a positive duration, got %s; e.g. \"2s\"", t.d)
		}
	}
	c := s.Compaction
	if c.MaxSummarizeCalls < 1 || c.MaxSummarizeCalls > 1000 {
		l.fail(id.with("compaction", "maxSummarizeCalls"), "must be between 1 and 1000, got %d; each is a model call the plugin causes", c.MaxSummarizeCalls)
	}
	if c.MaxSummarizeTokens < 1 {
		l.fail(id.with("compaction", "maxSummarizeTokens"), "must be a positive number of tokens, got %d; e.g. 200000", c.MaxSummarizeTokens)
	}
	switch {
	case c.WallClock <= 0:
		l.fail(id.with("compaction", "wallClock"), "must be a positive duration, got %s; e.g. \"180s\"", c.WallClock)
	case c.WallClock < s.CallTimeout.Compaction:
		l.fail(id.with("compaction", "wallClock"), "%s is shorter than callTimeout.compaction %s: a compaction could not finish one call; raise wallClock or lower the timeout",
			c.WallClock, s.CallTimeout.Compaction)
	}
	if s.Breaker.Failures < 1 {
		l.fail(id.with("breaker", "failures"), "must be at least 1, got %d", s.Breaker.Failures)
	}
	if s.Breaker.WindowSteps < 1 {
		l.fail(id.with("breaker", "windowSteps"), "must be at least 1 step, got %d", s.Breaker.WindowSteps)
	}
	switch {
	case s.StepBudget <= 0:
		l.fail(id.with("stepBudget"), "must be a positive duration, got %s; e.g. \"150s\"", s.StepBudget)
	default:
		for _, t := range timeouts {
			if t.d > s.StepBudget {
				l.fail(id.with("stepBudget"), "%s is shorter than callTimeout.%s %s: a step could not finish one call; raise stepBudget or lower the timeout",
					s.StepBudget, t.name, t.d)
			}
		}
	}
}

func (l *loader) tools(t *Tools) {
	id := path{"tools"}
	if t.Timeout <= 0 {
		l.fail(id.with("timeout"), "must be a positive duration, got %s; e.g. \"60s\"", t.Timeout)
	}
	for _, name := range sortedKeys(t.Timeouts) {
		if d := t.Timeouts[name]; d <= 0 {
			l.fail(id.with("timeouts", name), "must be a positive duration, got %s; e.g. \"10s\"", d)
		}
	}
	for _, name := range sortedKeys(t.Policy) {
		if r := t.Policy[name]; !slices.Contains(policy.Rules, r) {
			l.fail(id.with("policy", name), "%q is not a rule%s; use %s", r, suggestion(r, policy.Rules), oneOf(policy.Rules))
		}
	}
}

// policyPattern reports whether a tools.policy key is a pattern: a tool
// name's prefix followed by "*", or "*" alone.
func policyPattern(k string) bool {
	pre, ok := strings.CutSuffix(k, "*")
	return ok && (pre == "" || nameRE.MatchString(pre))
}

// secretRE matches a header or variable name that carries a secret.
var secretRE = regexp.MustCompile(`(?i)auth|token|key|secret|password|cookie|credential`)

func (l *loader) mcp(m *MCP) {
	for _, name := range sortedKeys(m.Servers) {
		id := path{"mcp", "servers", name}
		s := m.Servers[name]
		if why := mcp.NameProblem(name); why != "" {
			l.fail(id, "%s", why)
		}
		switch {
		case s.Command == "" && s.URL == "":
			l.fail(id, "configures no server: give command (a stdio server) or url (a streamable HTTP server)")
		case s.Command != "" && s.URL != "":
			l.fail(id.with("url"), "is set beside command: a server is either a stdio command or an HTTP url, not both")
		case s.URL != "":
			if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
				l.fail(id.with("url"), "is not an http(s) URL without credentials (it is not repeated here); e.g. https://mcp.example/mcp")
			}
			if len(s.Env) > 0 {
				l.fail(id.with("env"), "is for a stdio server (command); an HTTP server takes headers")
			}
		case len(s.Headers) > 0:
			l.fail(id.with("headers"), "are for an HTTP server (url); a stdio server takes env")
		}
		for _, kv := range []struct {
			key string
			m   map[string]string
		}{{"headers", s.Headers}, {"env", s.Env}} {
			for _, k := range sortedKeys(kv.m) {
				if secretRE.MatchString(k) && len(mcp.Refs(kv.m[k])) == 0 {
					l.fail(id.with(kv.key, k), "looks like a secret and does not come from the environment (the value is not repeated here): "+
						"a secret never goes in the configuration; write it as ${NAME} and set the environment variable NAME")
				}
			}
		}
		if s.Timeout <= 0 {
			l.fail(id.with("timeout"), "must be a positive duration, got %s; e.g. \"60s\"", s.Timeout)
		}
		if s.MaxResultKiB < 1 || s.MaxResultKiB > 65536 {
			l.fail(id.with("maxResultKiB"), "must be 1..65536 KiB, got %d", s.MaxResultKiB)
		}
		if s.Failures < 1 {
			l.fail(id.with("failures"), "must be at least 1 (the consecutive failures that disable the server), got %d", s.Failures)
		}
	}
}

// apiName is the name of a route API in messages.
func apiName(api string) string {
	switch api {
	case "anthropic":
		return "Anthropic Messages"
	case "gemini":
		return "Gemini"
	}
	return "OpenAI-compatible"
}

// StoreProblem says what is wrong with a sessions.store value, or "". It
// never repeats a PostgreSQL URL, which may hold a password.
func StoreProblem(spec string) string {
	switch {
	case spec == "file":
		return ""
	case strings.HasPrefix(spec, "sqlite:"):
		if strings.TrimSpace(strings.TrimPrefix(spec, "sqlite:")) == "" {
			return "\"sqlite:\" needs the database file's path, e.g. \"sqlite:.weir/sessions.db\""
		}
		return ""
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		u, err := url.Parse(spec)
		if err != nil {
			return "the PostgreSQL URL does not parse (it is not repeated here, as it may hold a password)"
		}
		if _, ok := u.User.Password(); ok || u.Query().Has("password") {
			return "the PostgreSQL URL carries a password; a password never goes in the configuration: remove it and set the environment variable WEIR_POSTGRES_PASSWORD"
		}
		if u.Host == "" {
			return "the PostgreSQL URL names no host, e.g. \"postgres://weir@db.example:5432/weir\""
		}
		return ""
	}
	if strings.Contains(spec, "://") || strings.Contains(spec, "@") {
		return "is not a store (the value is not repeated here, as it may hold a password); use \"file\" (the default), \"sqlite:PATH\" or \"postgres://USER@HOST:PORT/DB\""
	}
	return fmt.Sprintf("%q is not a store; use \"file\" (the default), \"sqlite:PATH\" or \"postgres://USER@HOST:PORT/DB\"", spec)
}
