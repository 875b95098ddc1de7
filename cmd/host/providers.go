package main

import (
	"context"
	"fmt"
	meternative "github.com/weirhost/weir/plugins/token-meter/native"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/hashicorp/go-hclog"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/plugins"
)

// pluginSet is the configured plugins, loaded once into one runtime.
type pluginSet struct {
	rt     *plugin.Runtime
	loaded []*provider.Plugin
}

// loadPlugins loads every enabled plugin of the configuration: first-party
// ones from the modules embedded in this binary, others from their .wasm
// files. overrides replaces the configuration of named plugins.
func loadPlugins(ctx context.Context, e *env, cfg *config.Config, log hclog.Logger, overrides map[string][]byte) (*pluginSet, error) {
	// The notice goes out when the first load finds its module not yet
	// compiled into the cache: a first run, a new plugin, a new version.
	var (
		rt     *plugin.Runtime
		notice sync.Once
	)
	announce := func(string) {
		notice.Do(func() {
			if rt.CacheDir() == "" {
				fmt.Fprintln(e.stderr, "compiling plugins (no compilation cache)…")
			} else {
				fmt.Fprintln(e.stderr, "compiling plugins (first run only)…")
			}
		})
	}
	rt, err := plugin.NewRuntime(ctx, plugin.WithMemoryLimit(uint64(cfg.Sandbox.MemoryLimitMiB)<<20), plugin.WithLogger(log),
		plugin.WithCompileHook(announce))
	if err != nil {
		return nil, err
	}
	set := &pluginSet{rt: rt}
	// The modules are read and the specifications made first, in order;
	// then every plugin loads at once (checking, compiling or reading the
	// compilation cache, starting the first instance). A failed load
	// does not stop the others: the error reported is the first in the
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
				set.Close(ctx)
				return nil, fmt.Errorf("plugin %q: %w", p.Name, err)
			}
		} else if wasm == nil {
			set.Close(ctx)
			return nil, fmt.Errorf("plugin %q has no path and is not a first-party plugin (%s, %s, %s)", p.Name,
				plugins.SystemPrompt, plugins.CompactionBasic, plugins.TokenMeter)
		}
		conf := []byte(p.Config)
		if o, ok := overrides[p.Name]; ok {
			conf = o
		}
		jobs = append(jobs, job{
			spec: provider.Spec{Name: p.Name, Role: provider.Role(p.Role), Wasm: wasm, Config: conf,
				Limits: provider.Limits{Call: cfg.Sandbox.Timeout(p.Role), Start: config.StartTimeout,
					Output: int(cfg.Sandbox.OutputLimitKiB) << 10, SoftMemory: cfg.Sandbox.SoftMemoryBytes()}},
			opts: []provider.Option{provider.WithLogger(config.PluginLogger(log, p.Name)),
				provider.WithTokenizers(meternative.Counters()),
				provider.WithFailureLimit(int(cfg.Sandbox.Breaker.Failures)),
				provider.WithFailureWindow(int(cfg.Sandbox.Breaker.WindowSteps))},
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
			set.loaded = append(set.loaded, lp)
		}
	}
	if err := firstError(errs); err != nil {
		set.Close(ctx)
		return nil, err
	}
	return set, nil
}

// firstError is the first non-nil error of errs.
func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// providers are one session's providers.
type providers struct {
	prompt     host.SystemPromptProvider
	compactors []host.CompactionProvider
	meter      host.Meter
}

// forSession makes the session's adapters: the last enabled prompt plugin
// renders the prompt, every compaction plugin acts in order, the last
// meter counts.
func (set *pluginSet) forSession(s *host.Session) (*providers, error) {
	out := &providers{}
	for _, p := range set.loaded {
		switch p.Role() {
		case provider.RoleSystemPrompt:
			sp, err := p.SystemPrompt(s)
			if err != nil {
				return nil, err
			}
			out.prompt = sp
		case provider.RoleCompaction:
			c, err := p.Compaction()
			if err != nil {
				return nil, err
			}
			out.compactors = append(out.compactors, c)
		case provider.RoleTokenMeter:
			var opts []provider.Option
			if dir := set.rt.CacheDir(); dir != "" {
				// The meter's blobs inside the compilation cache: a resumed
				// session starts from its blob instead of folding its log.
				opts = append(opts, provider.WithStateCache(&provider.DirStateCache{Dir: filepath.Join(dir, "meter-state")}))
			}
			m, err := p.Meter(s, opts...)
			if err != nil {
				return nil, err
			}
			out.meter = m
		}
	}
	if out.prompt == nil {
		out.prompt = &host.SectionPrompt{}
	}
	return out, nil
}

// Close unloads the plugins and the runtime.
func (set *pluginSet) Close(ctx context.Context) {
	for _, p := range set.loaded {
		p.Close(ctx)
	}
	set.rt.Close(ctx)
}

// meterConfig is the token-meter plugin's configuration for a route's
// tokenizer choice.
func meterConfig(route host.Route, tokenizer string) []byte {
	b, _ := json.Marshal(map[string]any{"routes": map[string]string{route.Provider + "/" + route.Model: tokenizer}})
	return b
}

// routeOverrides adapts plugin configuration to the selected route: the
// meter prices the route with its configured tokenizer, and the offline
// model's small window gets a compaction headroom that fits it (unless the
// configuration sets compaction-basic's own).
func routeOverrides(cfg *config.Config, route host.Route) map[string][]byte {
	out := map[string][]byte{"token-meter": meterConfig(route, cfg.Models[cfg.Model].Tokenizer)}
	if p, ok := cfg.Plugin("compaction-basic"); ok && len(p.Config) <= 2 && route.Provider == "offline" {
		out["compaction-basic"] = []byte(fmt.Sprintf(`{"headroomTokens": %d}`, route.ContextWindow/8))
	}
	return out
}

// routeProviders loads the configured plugins for the selected route and
// makes one session's providers. Close the returned set when done.
func routeProviders(ctx context.Context, e *env, cfg *config.Config, route host.Route, s *host.Session, log hclog.Logger) (*pluginSet, *providers, error) {
	// A host tokenizer that decodes its vocabulary on first use (o200k,
	// cl100k: about a second) is loaded beside the plugins, so that cost is
	// not charged to the meter's first call deadline.
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		if l, ok := meternative.Counters()[cfg.Models[cfg.Model].Tokenizer].(interface{ Load() error }); ok {
			l.Load() // an error surfaces on the first count, naming the tokenizer
		}
	}()
	set, err := loadPlugins(ctx, e, cfg, log, routeOverrides(cfg, route))
	<-loaded
	if err != nil {
		return nil, nil, err
	}
	prov, err := set.forSession(s)
	if err != nil {
		set.Close(ctx)
		return nil, nil, err
	}
	return set, prov, nil
}

// hostData is the host data the system-prompt plugin receives
// (docs/authors.md, "Host data"): the date, the working directory's name,
// the route's name and provider/model, and the user's keys from
// prompt.data. The tool list is added under "tools" when the prompt is
// rendered, from the tools the step offers.
func hostData(cfg *config.Config, route host.Route, now time.Time, cwd string) map[string]string {
	data := map[string]string{
		config.DataDate:  now.Format(time.DateOnly),
		config.DataRoute: cfg.Model,
		config.DataModel: route.Provider + "/" + route.Model,
	}
	if name := filepath.Base(cwd); cwd != "" && name != string(filepath.Separator) && name != "." {
		data[config.DataWorkdir] = name
	}
	for _, d := range cfg.Prompt.Data {
		data[d.Key] = d.Text
	}
	return data
}

// limits sets the bounds the configuration gives a session's loop: the
// step budget, tool timeouts, compaction budgets and the retry wait cap.
func limits(cfg *config.Config, c host.Config) host.Config {
	c.StepBudget = cfg.Sandbox.StepBudget
	c.ToolTimeout, c.ToolTimeouts = cfg.Tools.Timeout, cfg.Tools.Timeouts
	c.CompactionBudget = cfg.Sandbox.HostCompactionBudget()
	c.MaxRetryWait = cfg.Retry.MaxWait
	return c
}
