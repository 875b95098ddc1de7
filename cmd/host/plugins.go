package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
)

func init() {
	register(&command{name: "plugins", args: "list | verify [--name NAME] FILE.wasm", summary: "list the configured plugins, or verify a .wasm plugin", run: pluginsCmd})
}

// verifyJSON is the documented shape of "host plugins verify --json".
type verifyJSON struct {
	File     string     `json:"file"`
	Name     string     `json:"name"`
	Version  string     `json:"version"`
	Roles    []string   `json:"roles"`
	ABIMajor uint32     `json:"abiMajor"`
	ABIMinor uint32     `json:"abiMinor"`
	SDK      string     `json:"sdk"`
	Imports  []string   `json:"imports"`
	Exports  []string   `json:"exports"`
	Limits   limitsJSON `json:"limits"`
}

type limitsJSON struct {
	MemoryMiB     int64             `json:"memoryMiB"`
	SoftMemoryMiB int64             `json:"softMemoryMiB"`
	OutputKiB     int64             `json:"outputKiB"`
	StartTimeout  string            `json:"startTimeout"`
	CallTimeout   map[string]string `json:"callTimeout"`
	// All is every limit the plugin runs under, as docs/authors.md lists them.
	All []limitRow `json:"all"`
}

// pluginJSON is one entry of "host plugins list --json".
type pluginJSON struct {
	Name    string `json:"name"`
	Role    string `json:"role"`
	Source  string `json:"source"`
	Enabled bool   `json:"enabled"`
}

func pluginsCmd(e *env, args []string) error {
	fs := flag.NewFlagSet("plugins", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	configFile := fs.String("config", "", "configuration file (default ./weir.yaml, then weir/weir.yaml in the user config folder)")
	name := fs.String("name", "", "verify: the name to load the plugin under (default: the file's name without .wasm); a module holding several plugins serves the one of that name")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("usage: %[1]s plugins list [--json] | %[1]s plugins verify [--json] [--name NAME] FILE.wasm", prog)
	}
	sub := pos[0]
	pos = pos[1:]
	if sub != "list" && sub != "verify" {
		return usagef("unknown plugins subcommand %q: use list or verify", sub)
	}
	cfg, _, err := config.Load(config.Options{File: *configFile})
	if err != nil {
		return configError(e, "plugins", err)
	}
	switch sub {
	case "list":
		if err := noArgs(pos); err != nil {
			return err
		}
		if *name != "" {
			return usagef("--name is an option of plugins verify")
		}
		var out []pluginJSON
		for _, p := range cfg.Plugins {
			src := "built-in"
			if !p.Builtin() {
				src = p.Path
			}
			out = append(out, pluginJSON{Name: p.Name, Role: p.Role, Source: src, Enabled: p.Enabled})
		}
		if *asJSON {
			return writeJSON(e.stdout, out)
		}
		for _, p := range out {
			state := "enabled"
			if !p.Enabled {
				state = "disabled"
			}
			fmt.Fprintf(e.stdout, "%-18s %-14s %-9s %s\n", termLine(p.Name), termLine(p.Role), state, termLine(p.Source))
		}
		return nil
	case "verify":
		if len(pos) != 1 {
			return usagef("usage: %[1]s plugins verify [--json] [--name NAME] FILE.wasm", prog)
		}
		return verifyPlugin(e, cfg, pos[0], *name, *asJSON)
	}
	return nil
}

func verifyPlugin(e *env, cfg *config.Config, path, name string, asJSON bool) error {
	wasm, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	info, err := plugin.Inspect(wasm)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	ctx := context.Background()
	rt, err := plugin.NewRuntime(ctx, plugin.WithMemoryLimit(uint64(cfg.Sandbox.MemoryLimitMiB)<<20), plugin.WithCacheDir(cacheDir()))
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), ".wasm")
	}
	// The instance starts under the limits host run applies and the table
	// below prints (config.StartTimeout, the output and soft memory limits).
	p, err := rt.Load(ctx, name, wasm, plugin.WithDeadline(abi.KindUnspecified, config.StartTimeout),
		plugin.WithOutputLimit(int(cfg.Sandbox.OutputLimitKiB)<<10), plugin.WithSoftMemoryLimit(cfg.Sandbox.SoftMemoryBytes()))
	if err != nil {
		return fmt.Errorf("%s does not load: %w", path, err)
	}
	defer p.Close(ctx)
	d := p.Description()
	out := verifyJSON{File: path, Name: d.Name, Version: d.Version, ABIMajor: abi.Major, ABIMinor: d.AbiMinor, SDK: d.Sdk,
		Imports: info.Imports, Exports: info.Exports,
		Limits: limitsJSON{MemoryMiB: cfg.Sandbox.MemoryLimitMiB, SoftMemoryMiB: int64(cfg.Sandbox.SoftMemoryBytes() >> 20),
			OutputKiB: cfg.Sandbox.OutputLimitKiB, StartTimeout: config.StartTimeout.String(), CallTimeout: map[string]string{
				"system-prompt": cfg.Sandbox.Timeout("system-prompt").String(),
				"compaction":    cfg.Sandbox.Timeout("compaction").String(),
				"token-meter":   cfg.Sandbox.Timeout("token-meter").String()},
			All: pluginLimits(cfg)}}
	for _, k := range d.Kinds {
		out.Roles = append(out.Roles, k.String())
	}
	if asJSON {
		return writeJSON(e.stdout, out)
	}
	w := e.stdout
	fmt.Fprintf(w, "%s: plugin %s version %s, ABI %d.%d, %s\n", termLine(path), termLine(strconv.Quote(out.Name)),
		termLine(strconv.Quote(out.Version)), out.ABIMajor, out.ABIMinor, termLine(out.SDK))
	fmt.Fprintf(w, "roles: %s\n", termLine(strings.Join(out.Roles, ", ")))
	fmt.Fprintf(w, "limits (docs/authors.md#limits):\n")
	for _, l := range out.Limits.All {
		key := "fixed"
		if l.Key != "" {
			key = l.Key
		}
		fmt.Fprintf(w, "  %s: %s (%s)\n", strings.ReplaceAll(l.What, "`", ""), l.Value, key)
	}
	fmt.Fprintf(w, "imports (%d):\n", len(out.Imports))
	for _, s := range out.Imports {
		fmt.Fprintf(w, "  %s\n", termLine(s))
	}
	fmt.Fprintf(w, "exports (%d):\n", len(out.Exports))
	for _, s := range out.Exports {
		fmt.Fprintf(w, "  %s\n", termLine(s))
	}
	fmt.Fprintln(w, "ok: the module passes load-time validation")
	return nil
}
