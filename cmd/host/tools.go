package cli

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/weirhost/weir/host/builtin"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/mcp"
	"github.com/weirhost/weir/host/setup"
)

func init() {
	register(&command{name: "tools", args: "list", summary: "list the tools the next step would offer, where each comes from and its permission policy", run: toolsCmd})
}

// toolJSON is one entry of "weir tools list --json".
type toolJSON struct {
	Name string `json:"name"`
	// Source is "built-in" or "mcp:SERVER".
	Source string `json:"source"`
	// Policy is allow, deny or ask; PolicyBy names what decided it.
	Policy   string `json:"policy"`
	PolicyBy string `json:"policyBy"`
}

func toolsCmd(e *env, args []string) error {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	configFile := fs.String("config", "", "configuration file (default ./weir.yaml, then weir/weir.yaml in the user config folder)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || pos[0] != "list" {
		return usagef("usage: %s tools list [--json] [--config FILE]", prog)
	}
	if err := noArgs(pos[1:]); err != nil {
		return err
	}
	cfg, _, err := config.Load(config.Options{File: *configFile})
	if err != nil {
		return configError(e, "tools", err)
	}
	// The MCP servers are started to list their tools, as run would.
	set := setup.MCPSet(cfg, &setup.Options{Getenv: os.Getenv, Logger: newLogger(cfg.Log, e.stderr)})
	defer set.Close()
	cwd, _ := os.Getwd()
	tools, lerr := setup.OfferedTools(context.Background(), set, builtin.Tools(cwd, nil), nil)
	p := setup.ToolPolicy(cfg)
	out := []toolJSON{}
	for _, t := range tools {
		src := "built-in"
		if mt, ok := t.(*mcp.Tool); ok {
			src = "mcp:" + mt.Server()
		}
		d := p.Decide(t)
		out = append(out, toolJSON{Name: t.Name(), Source: src, Policy: string(d.Rule), PolicyBy: d.By})
	}
	if *asJSON {
		if err := writeJSON(e.stdout, out); err != nil {
			return err
		}
	} else {
		for _, t := range out {
			fmt.Fprintf(e.stdout, "%-32s %-16s %-5s %s\n", termLine(t.Name), termLine(t.Source), t.Policy, termLine(t.PolicyBy))
		}
	}
	if lerr != nil {
		return fmt.Errorf("%w (its tools are not listed)", lerr)
	}
	return nil
}
