package setup

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/hashicorp/go-hclog"
	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/mcp"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/host/policy"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/plugins"
	meternative "github.com/weirhost/weir/plugins/token-meter/native"
	"github.com/weirhost/weir/sdk/tokenizer"
)

// Options configure New. A nil *Options is the zero value.
type Options struct {
	// Route is the route the agents use. nil opens the configuration's
	// selected route (cfg.Model) with OpenRoute, Getenv and Logger.
	Route *Route
	// Getenv looks up the environment variable named by the route's
	// apiKeyEnv when New opens the route; nil reads none (os.Getenv reads
	// the process's environment).
	Getenv func(string) string

	// CacheDir is the directory where compiled plugin modules are kept
	// across processes (created if missing); "" keeps them in memory only.
	CacheDir string
	// OnCompile is called with a plugin's name when loading it compiles its
	// module, which the cache did not hold (a first start, a new plugin or
	// version, or always without CacheDir); plugins load concurrently, so
	// it may be called concurrently. A program uses it to say why a start
	// is slow.
	OnCompile func(plugin string)
	// InterpreterFirst serves a plugin whose module the cache does not
	// hold from wazero's interpreter while it compiles in the background
	// (plugin.WithInterpreterFirst): a first start takes about a second
	// instead of several. Close then waits for the compilations so the
	// cache holds them; Compiling says whether it will.
	InterpreterFirst bool
	// MeterState keeps the token meter's state between processes
	// (provider.WithStateCache; provider.DirStateCache keeps it in a
	// folder), so that a session resumed by a new process starts its meter
	// from there instead of folding its whole log. nil keeps nothing.
	MeterState provider.StateCache
	// Logger receives the logs of the plugin runtime, the plugins (as
	// config.PluginLogger names them) and, unless host.Config sets its own,
	// the agents; nil discards the plugins' logs and leaves the agents'
	// default.
	Logger hclog.Logger

	// PluginConfig replaces the configuration (a JSON object) of the
	// named plugins, whatever the configuration and the route say.
	PluginConfig map[string][]byte
	// Workdir is the working directory whose name the host data carries
	// (config.DataWorkdir); "" for none.
	Workdir string
	// Now is the clock of the host data's date (config.DataDate); nil is
	// time.Now.
	Now func() time.Time

	// MCPSessions are MCP client sessions the embedder connected itself,
	// by server name: their tools are offered beside the configured
	// servers' (mcp.servers), as NAME__TOOL, with the default bounds. The
	// Host never closes them. A session's client should call the
	// server's ListChanged (MCP().Servers()) from its
	// ToolListChangedHandler.
	MCPSessions map[string]*sdkmcp.ClientSession
	// Ask answers the permission policy's ask rule (tools.policy; see
	// host/policy) for every agent: weir run asks on the terminal. nil
	// denies the calls that need asking, with a reason that says so.
	Ask policy.AskFunc
}

// ErrClosed is the error of a Host used after Close.
var ErrClosed = errors.New("setup: the host is closed")

// Host is a configuration made ready to run: its route, its plugin runtime
// and its loaded plugins. It makes the agents and providers of any number
// of sessions and is safe for concurrent use.
type Host struct {
	cfg   *config.Config
	route Route
	opts  Options
	log   hclog.Logger

	rt         *plugin.Runtime
	loaded     []*provider.Plugin
	prompt     *provider.Plugin       // the system-prompt plugin, nil when none
	meter      *provider.Plugin       // the token-meter plugin, nil when none
	compactors []*provider.Compaction // shared by every session, in order
	mcp        *mcp.Set               // the MCP servers, started on demand
	summary    []namedSummaryModel    // the compaction plugins' summarize routes

	mu     sync.Mutex
	live   map[*Providers]struct{}
	closed bool
}

// New makes a Host for cfg, a validated configuration (config.Load,
// config.Default): it opens the route (unless opts.Route gives it),
// starts a plugin runtime under the configuration's sandbox and loads
// every enabled plugin into it, in parallel. A failed load fails New with
// the error of the first failing plugin in the configuration's order, and
// nothing stays open. ctx bounds the loading only.
func New(ctx context.Context, cfg *config.Config, opts *Options) (*Host, error) {
	h := &Host{cfg: cfg, live: map[*Providers]struct{}{}}
	if opts != nil {
		h.opts = *opts
	}
	h.log = h.opts.Logger
	if h.log == nil {
		h.log = hclog.NewNullLogger()
	}
	if r := h.opts.Route; r != nil {
		h.route = *r
	} else {
		r, err := OpenRoute(cfg, cfg.Model, h.opts.Getenv, h.opts.Logger)
		if err != nil {
			return nil, err
		}
		h.route = *r
	}
	if err := h.load(ctx); err != nil {
		return nil, err
	}
	mo := h.opts
	mo.Logger = h.log
	h.mcp = MCPSet(cfg, &mo)
	return h, nil
}

// MCPSet makes the set of the MCP servers cfg configures (mcp.servers),
// in name order, then opts.MCPSessions; nothing is started. opts.Getenv
// expands their ${NAME} references and opts.Logger receives their stderr
// and failures.
func MCPSet(cfg *config.Config, opts *Options) *mcp.Set {
	if opts == nil {
		opts = &Options{}
	}
	mo := mcp.Options{Getenv: opts.Getenv, Logger: opts.Logger}
	set := mcp.NewSet(nil, mo)
	for _, name := range slices.Sorted(maps.Keys(cfg.MCP.Servers)) {
		s := cfg.MCP.Servers[name]
		set.Add(mcp.New(mcp.Config{Name: name, Command: s.Command, Args: s.Args, Env: s.Env, URL: s.URL, Headers: s.Headers,
			Timeout: s.Timeout, MaxResult: int(s.MaxResultKiB) << 10, Failures: int(s.Failures)}, mo))
	}
	for _, name := range slices.Sorted(maps.Keys(opts.MCPSessions)) {
		set.Add(mcp.Attach(name, opts.MCPSessions[name], mcp.Config{}, mo))
	}
	return set
}

// MCP is the Host's set of MCP servers.
func (h *Host) MCP() *mcp.Set { return h.mcp }

// ToolPolicy is the permission policy cfg configures (tools.policy).
func ToolPolicy(cfg *config.Config) policy.Policy {
	p := policy.Policy{}
	for k, r := range cfg.Tools.Policy {
		p[k] = policy.Rule(r)
	}
	return p
}

// Tools are the tools an agent given base would offer (OfferedTools).
func (h *Host) Tools(ctx context.Context, base []host.Tool) ([]host.Tool, error) {
	return OfferedTools(ctx, h.mcp, base, h.log)
}

// OfferedTools are base, then the tools of set's servers (starting the
// servers not started yet) whose names base does not take. A server that
// fails to start offers none; the error says why, and the tools returned
// are still good to offer.
func OfferedTools(ctx context.Context, set *mcp.Set, base []host.Tool, log hclog.Logger) ([]host.Tool, error) {
	tools := slices.Clone(base)
	if len(set.Servers()) == 0 {
		return tools, nil
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithTimeout(ctx, mcpListTimeout)
	defer cancel()
	mt, err := set.Tools(ctx)
	taken := map[string]bool{}
	for _, t := range base {
		taken[t.Name()] = true
	}
	for _, t := range mt {
		if taken[t.Name()] {
			log.Warn("an MCP tool is not offered: its name is taken", "tool", t.Name())
			continue
		}
		tools = append(tools, t)
	}
	return tools, err
}

// mcpListTimeout bounds starting and listing the MCP servers for an agent.
var mcpListTimeout = 30 * time.Second

// Route is the route the Host's agents use.
func (h *Host) Route() Route { return h.route }

// Plugins are the loaded plugins, in the configuration's order.
func (h *Host) Plugins() []*provider.Plugin { return append([]*provider.Plugin(nil), h.loaded...) }

// load starts the runtime and loads the enabled plugins.
func (h *Host) load(ctx context.Context) error {
	cfg := h.cfg
	// A host tokenizer that decodes its vocabulary on first use (o200k,
	// cl100k: about a second; deepseek-v3: 70-90 ms of CPU) is loaded
	// beside the plugins, so that cost is neither charged to the meter's
	// first call deadline nor paid after the loads, before the first
	// request.
	preloaded := make(chan struct{})
	go func() {
		defer close(preloaded)
		if len(cfg.Enabled(config.RoleTokenMeter)) == 0 {
			return
		}
		if h.route.Tokenizer == "deepseek-v3" {
			tokenizer.DeepSeekV3() // decoded once per process (sync.Once)
			return
		}
		if l, ok := meternative.Counters()[h.route.Tokenizer].(interface{ Load() error }); ok {
			_ = l.Load() // an error surfaces on the first count, naming the tokenizer
		}
	}()
	defer func() { <-preloaded }()

	ropts := []plugin.RuntimeOption{plugin.WithMemoryLimit(uint64(cfg.Sandbox.MemoryLimitMiB) << 20),
		plugin.WithLogger(h.log), plugin.WithCacheDir(h.opts.CacheDir)}
	if h.opts.OnCompile != nil {
		ropts = append(ropts, plugin.WithCompileHook(h.opts.OnCompile))
	}
	if h.opts.InterpreterFirst {
		ropts = append(ropts, plugin.WithInterpreterFirst(true))
	}
	rt, err := plugin.NewRuntime(ctx, ropts...)
	if err != nil {
		return err
	}
	h.rt = rt
	// The modules are read and the specifications made first, in order;
	// then every plugin loads at once (checking, compiling or reading the
	// compilation cache, starting the first instance). A failed load does
	// not stop the others: the error reported is the first in the
	// configuration's order, whatever the timing, and every plugin that
	// did load is closed with the runtime.
	type job struct {
		spec provider.Spec
		opts []provider.Option
	}
	var jobs []job
	for _, p := range cfg.Plugins {
		if !p.Enabled {
			continue
		}
		wasm := plugins.FirstParty[p.Name]
		if !p.Builtin() {
			if wasm, err = os.ReadFile(p.Path); err != nil {
				h.closePlugins(ctx)
				return fmt.Errorf("plugin %q: %w", p.Name, err)
			}
		} else if wasm == nil {
			h.closePlugins(ctx)
			return fmt.Errorf("plugin %q has no path and is not a first-party plugin (%s, %s, %s)", p.Name,
				plugins.SystemPrompt, plugins.CompactionBasic, plugins.TokenMeter)
		}
		opts, err := h.summarizeRoute(p)
		if err != nil {
			h.closePlugins(ctx)
			return err
		}
		jobs = append(jobs, job{
			spec: provider.Spec{Name: p.Name, Role: provider.Role(p.Role), Wasm: wasm, Config: h.pluginConfig(p),
				Limits: provider.Limits{Call: cfg.Sandbox.Timeout(p.Role), Start: config.StartTimeout,
					Output: int(cfg.Sandbox.OutputLimitKiB) << 10, SoftMemory: cfg.Sandbox.SoftMemoryBytes()}},
			opts: append([]provider.Option{provider.WithLogger(config.PluginLogger(h.log, p.Name)),
				provider.WithTokenizers(meternative.Counters()),
				provider.WithFailureLimit(int(cfg.Sandbox.Breaker.Failures)),
				provider.WithFailureWindow(int(cfg.Sandbox.Breaker.WindowSteps))}, opts...),
		})
	}
	loaded := make([]*provider.Plugin, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() { loaded[i], errs[i] = provider.Load(ctx, rt, j.spec, j.opts...) })
	}
	wg.Wait()
	for i, lp := range loaded {
		if errs[i] == nil {
			h.loaded = append(h.loaded, lp)
		}
	}
	for _, err := range errs {
		if err != nil {
			h.closePlugins(ctx)
			return err
		}
	}
	// The last prompt plugin renders the prompt, every compaction plugin
	// acts in order, the last meter counts (the configuration allows one
	// enabled prompt plugin and one meter).
	for _, p := range h.loaded {
		switch p.Role() {
		case provider.RoleSystemPrompt:
			h.prompt = p
		case provider.RoleTokenMeter:
			h.meter = p
		case provider.RoleCompaction:
			c, err := p.Compaction()
			if err != nil {
				h.closePlugins(ctx)
				return err
			}
			h.compactors = append(h.compactors, c)
		}
	}
	return nil
}

// summarizeRoute opens the summarize route of compaction plugin p
// (plugins.NAME.route) and returns the option that sends its summarize
// calls there; none when p names no route or the session's own.
func (h *Host) summarizeRoute(p config.Plugin) ([]provider.Option, error) {
	if p.Route == "" || p.Route == h.route.Name {
		return nil, nil
	}
	for _, m := range h.summary {
		if m.name == p.Route {
			return []provider.Option{provider.WithSummarizeRoute(m.Route)}, nil
		}
	}
	r, err := OpenRoute(h.cfg, p.Route, h.opts.Getenv, h.opts.Logger)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: summarize route (plugins.%s.route): %w", p.Name, p.Name, err)
	}
	h.summary = append(h.summary, namedSummaryModel{r.Name, host.SummaryModel{Route: r.Route, Model: r.Model}})
	return []provider.Option{provider.WithSummarizeRoute(r.Route)}, nil
}

// namedSummaryModel is a summarize route's model and its route's name.
type namedSummaryModel struct {
	name string
	host.SummaryModel
}

// pluginConfig is the configuration a plugin is loaded with: the
// configured one, adapted to the route for the first-party token-meter
// (the route's tokenizer) and compaction-basic (a headroom that fits the
// offline model's small window, unless configured), or replaced by
// Options.PluginConfig.
func (h *Host) pluginConfig(p config.Plugin) []byte {
	if c, ok := h.opts.PluginConfig[p.Name]; ok {
		return c
	}
	conf := []byte(p.Config)
	r := h.route
	switch {
	case !p.Builtin():
	case p.Name == plugins.TokenMeter && r.Tokenizer != "":
		conf = meterConfig(conf, r.Route.Provider+"/"+r.Route.Model, r.Tokenizer)
	case p.Name == plugins.CompactionBasic && r.Route.Provider == "offline" && len(p.Config) <= 2:
		conf = fmt.Appendf(nil, `{"headroomTokens": %d}`, r.Route.ContextWindow/8)
	}
	return conf
}

// meterConfig adds route → tokenizer to the token-meter plugin's routes
// (docs: plugins/token-meter), over an entry of its own for that route.
// A configuration that is not an object is left to fail the load.
func meterConfig(conf []byte, route, tokenizer string) []byte {
	m := map[string]jsontext.Value{}
	if len(conf) > 0 && json.Unmarshal(conf, &m) != nil {
		return conf
	}
	routes := map[string]jsontext.Value{}
	if raw, ok := m["routes"]; ok && json.Unmarshal(raw, &routes) != nil {
		return conf
	}
	routes[route], _ = json.Marshal(tokenizer)
	m["routes"], _ = json.Marshal(routes, json.Deterministic(true))
	out, err := json.Marshal(m, json.Deterministic(true))
	if err != nil {
		return conf
	}
	return out
}

// Providers are one session's providers, made by Host.Providers.
type Providers struct {
	// Prompt renders the system prompt: the system-prompt plugin's adapter
	// for the session, or a host.SectionPrompt when none is enabled.
	Prompt host.SystemPromptProvider
	// Compactors are the compaction plugins' adapters, in the
	// configuration's order, shared with the Host's other sessions.
	Compactors []host.CompactionProvider
	// Meter is the token-meter plugin's adapter for the session; nil when
	// none is enabled.
	Meter host.Meter

	h  *Host
	id string
}

// Providers makes the providers of session s. Close them when the session
// ends. A session id should have one set of providers open at a time: the
// shared compaction adapters keep their state by session id.
func (h *Host) Providers(s *host.Session) (*Providers, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	p := &Providers{h: h, id: s.ID()}
	if h.prompt != nil {
		sp, err := h.prompt.SystemPrompt(s)
		if err != nil {
			return nil, err
		}
		p.Prompt = sp
	} else {
		p.Prompt = &host.SectionPrompt{}
	}
	for _, c := range h.compactors {
		p.Compactors = append(p.Compactors, c)
	}
	if h.meter != nil {
		var opts []provider.Option
		if h.opts.MeterState != nil {
			opts = append(opts, provider.WithStateCache(h.opts.MeterState))
		}
		m, err := h.meter.Meter(s, opts...)
		if err != nil {
			return nil, err
		}
		p.Meter = m
	}
	h.live[p] = struct{}{}
	return p, nil
}

// Close releases the session's providers: the shared compaction adapters
// forget the session. It does not close the session. Close is idempotent.
func (p *Providers) Close() {
	h := p.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.live[p]; !ok {
		return
	}
	delete(h.live, p)
	p.release()
}

func (p *Providers) release() {
	for _, c := range p.h.compactors {
		c.Forget(p.id)
	}
}

// Agent is an agent on one session, with the session's providers.
type Agent struct {
	*host.Agent
	Providers *Providers

	unsubscribe func() // from the MCP servers' list changes
}

// Agent makes an agent on session s with the session's providers. c is
// the agent's configuration: a zero field is filled from the Host (see the
// package documentation), others are kept. ctx bounds the start of the
// MCP servers whose tools the agent offers: when it ends first (a Ctrl-C),
// the agent offers the tools started so far and the servers not started
// are stopped, as after a failed start. Close the agent when the session
// ends, before the session or after it.
func (h *Host) Agent(ctx context.Context, s *host.Session, c host.Config) (*Agent, error) {
	p, err := h.Providers(s)
	if err != nil {
		return nil, err
	}
	base := c.Tools
	var offered atomic.Pointer[map[string]host.Tool] // what the agent offers now, by name
	setOffered := func(tools ...[]host.Tool) {
		m := map[string]host.Tool{}
		for _, ts := range tools {
			for _, t := range ts {
				m[t.Name()] = t
			}
		}
		offered.Store(&m)
	}
	tools, err := h.Tools(ctx, base)
	if err != nil {
		h.log.Warn("MCP servers offer no tools", "error", err)
	}
	setOffered(tools)
	c.Tools = tools
	lookup := func(name string) (host.Tool, bool) {
		t, ok := (*offered.Load())[name]
		return t, ok
	}
	log := c.Logger
	if log == nil {
		log = h.log
	}
	c.ToolInterceptors = append([]host.ToolInterceptor{policy.Interceptor(ToolPolicy(h.cfg), lookup, h.opts.Ask, log)}, c.ToolInterceptors...)
	a, err := host.NewAgent(s, h.agentConfig(p, c))
	if err != nil {
		p.Close()
		return nil, err
	}
	// A server's changed tool list (or its breaker opening) is the
	// agent's from its next step on: SetTools, a header change.
	var mu sync.Mutex
	unsubscribe := h.mcp.OnChange(func() {
		mu.Lock()
		defer mu.Unlock()
		tools, err := h.Tools(context.Background(), base)
		if err != nil {
			h.log.Warn("MCP servers offer no tools", "error", err)
		}
		old := slices.Collect(maps.Values(*offered.Load()))
		setOffered(old, tools) // known to the policy before they are offered
		if err := a.SetTools(tools...); err != nil {
			h.log.Error("the changed MCP tools cannot be offered", "error", err)
			return
		}
		setOffered(tools)
	})
	return &Agent{Agent: a, Providers: p, unsubscribe: unsubscribe}, nil
}

// Close releases the agent's providers (Providers.Close) and stops
// following the MCP servers' tool lists.
func (a *Agent) Close() {
	if a.unsubscribe != nil {
		a.unsubscribe()
	}
	a.Providers.Close()
}

// agentConfig fills c's zero fields from the Host and p.
func (h *Host) agentConfig(p *Providers, c host.Config) host.Config {
	if c.Route == (host.Route{}) {
		c.Route = h.route.Route
	}
	if c.Model == nil {
		c.Model = h.route.Model
	}
	if c.Prompt == nil {
		c.Prompt = p.Prompt
	}
	if c.Compactors == nil {
		c.Compactors = p.Compactors
	}
	if c.SummaryModels == nil {
		for _, m := range h.summary {
			c.SummaryModels = append(c.SummaryModels, m.SummaryModel)
		}
	}
	if c.Meter == nil && p.Meter != nil {
		c.Meter = p.Meter
	}
	if c.Sections == nil {
		c.Sections = h.cfg.Sections(h.route.Name)
	}
	if c.Data == nil {
		now := time.Now
		if h.opts.Now != nil {
			now = h.opts.Now
		}
		c.Data = hostData(h.cfg, h.route, now(), h.opts.Workdir)
	}
	if c.Logger == nil && h.opts.Logger != nil {
		c.Logger = h.opts.Logger
	}
	sb := h.cfg.Sandbox
	if c.StepBudget == 0 {
		c.StepBudget = sb.StepBudget
	}
	if c.ToolTimeout == 0 {
		c.ToolTimeout = h.cfg.Tools.Timeout
	}
	if c.ToolTimeouts == nil {
		c.ToolTimeouts = h.cfg.Tools.Timeouts
	}
	if c.CompactionBudget == (host.CompactionBudget{}) {
		c.CompactionBudget = sb.HostCompactionBudget()
	}
	if c.MaxRetryWait == 0 {
		c.MaxRetryWait = h.cfg.Retry.MaxWait
	}
	return c
}

// hostData is the host data the system-prompt plugin receives
// (docs/authors.md, "Host data"): the date, the working directory's name,
// the route's name and provider/model, and the user's keys from
// prompt.data. The tool list is added under "tools" when the prompt is
// rendered, from the tools the step offers.
func hostData(cfg *config.Config, r Route, now time.Time, workdir string) map[string]string {
	data := map[string]string{
		config.DataDate:  now.Format(time.DateOnly),
		config.DataRoute: r.Name,
		config.DataModel: r.Route.Provider + "/" + r.Route.Model,
	}
	if name := filepath.Base(workdir); workdir != "" && name != string(filepath.Separator) && name != "." {
		data[config.DataWorkdir] = name
	}
	for _, d := range cfg.Prompt.Data {
		data[d.Key] = d.Text
	}
	return data
}

// Close releases the providers of the sessions still open, closes the
// plugins and stops the runtime. Close the agents' turns first: a plugin
// call still running fails (the session records the failure). The Host
// makes nothing after Close; Close is idempotent.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	for p := range h.live {
		p.release()
	}
	clear(h.live)
	h.mu.Unlock()
	return errors.Join(h.mcp.Close(), h.closePlugins(ctx))
}

// Compiling reports whether a plugin module still compiles in the
// background (Options.InterpreterFirst): Close waits for it.
func (h *Host) Compiling() bool { return h.rt != nil && h.rt.Compiling() }

func (h *Host) closePlugins(ctx context.Context) error {
	var errs []error
	for _, p := range h.loaded {
		errs = append(errs, p.Close(ctx))
	}
	if h.rt != nil {
		errs = append(errs, h.rt.Close(ctx))
	}
	return errors.Join(errs...)
}
