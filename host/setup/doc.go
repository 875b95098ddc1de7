// Package setup turns a Weir configuration (host/config) into running
// agents: it opens the selected route's model, starts the plugin runtime,
// loads the enabled plugins and hands out each session's providers with
// the lifetimes they need. The command-line host (cmd/host) builds its
// agents with it.
//
// # Model
//
// A Host is made once per configuration and route, and serves any number
// of sessions, concurrently:
//
//	h, err := setup.New(ctx, cfg, &setup.Options{Getenv: os.Getenv, CacheDir: dir})
//	...
//	defer h.Close(ctx)
//	a, err := h.Agent(ctx, s, host.Config{Tools: tools})
//	...
//	defer a.Close()
//	res, err := a.Run(ctx, a.UserMessage("hello"))
//
// New opens the route (OpenRoute, unless Options.Route gives one), starts
// one plugin runtime, and loads every enabled plugin of the configuration
// into it, in parallel: first-party plugins from the modules embedded in
// package plugins, others from their .wasm files. The plugins and their
// compiled modules are shared by every session of the Host.
//
// The providers of a session (Providers) have three lifetimes:
//
//   - the system-prompt adapter and the token meter are made for one
//     session (they read it) and belong to it;
//   - the compaction adapters are made once per Host and shared: they keep
//     each session's plugin state, failure count and caches by session id,
//     which Providers.Close (or Agent.Close) drops when the session ends;
//   - the plugins and the runtime belong to the Host; Host.Close closes
//     them, after releasing the providers of sessions still open.
//
// Closing the providers does not close the session: the caller opened it
// (host.Open, host.OpenFile, host.NewSession) and closes it.
//
// # What the configuration decides
//
// Host.Agent fills a host.Config from the configuration where the caller
// left a field zero (nil for slices and maps): the route and its model,
// the session's providers, the prompt sections of the route (prompt.sections
// with prompt.perModel), the host data the prompt plugin receives (the
// date, the route, the working directory's name, prompt.data), the logger,
// and the loop's limits (sandbox.stepBudget, tools.timeout and
// tools.timeouts, the compaction budget, retry.maxWait). A non-nil empty
// Sections, Data or Compactors stays empty. Everything else (tools, the
// delta callback, interceptors) is the caller's.
//
// The route's tokenizer (models.NAME.tokenizer, Route.Tokenizer) prices
// the route: New hands it to the first-party token-meter plugin as the
// tokenizer of the route's provider/model, over the plugin's own routes
// configuration. On the offline provider, whose windows are small,
// compaction-basic gets a headroom of an eighth of the window unless its
// configuration is set. Options.PluginConfig replaces a plugin's
// configuration entirely.
//
// # Environment and files
//
// The package reads no environment variable and writes no file unless
// told: the API key is looked up through Options.Getenv (nil reads none),
// and compiled plugin modules are kept in memory unless Options.CacheDir
// names a directory. Compiling the three first-party plugins takes
// several seconds, so a program that starts often should give a cache
// directory (the command-line host uses $WEIR_WAZERO_CACHE, else the user
// cache folder's weir/wazero). It reads the files the configuration names:
// plugin modules and the offline model's script.
package setup
