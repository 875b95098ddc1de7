package cli

import (
	"context"

	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/hashicorp/go-hclog"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/host/setup"
	"github.com/weirhost/weir/surface"
	"slices"
)

func init() {
	register(&command{name: "compact", args: "SESSION", summary: "compact a session now (manual compaction, between turns; --range START:END compacts that region)", run: compactCmd})
}

// parseRange parses the --range value START:END, two seqs (the host checks
// that they are current surface nodes, START's not after END's).
func parseRange(v string) (start, end int64, err error) {
	a, b, ok := strings.Cut(v, ":")
	if ok {
		start, err = strconv.ParseInt(a, 10, 64)
		if err == nil {
			end, err = strconv.ParseInt(b, 10, 64)
		}
	}
	if !ok || err != nil || start < 0 || end < 0 {
		return 0, 0, usagef("--range %q: want START:END, the seqs of the first and last surface node to compact (e.g. --range 3:9)", v)
	}
	return start, end, nil
}

func compactCmd(e *env, args []string) error {
	fs := flag.NewFlagSet("compact", flag.ContinueOnError)
	var o runOptions
	o.flags(fs, false)
	dry := fs.Bool("dry-run", false, "run the configured compaction on an in-memory copy and print its receipt; nothing is written")
	asJSON := fs.Bool("json", false, "with --dry-run: print the receipt as JSON")
	region := fs.String("range", "", "compact only the surface nodes of seqs `START:END` (inclusive), with a plugin that declares compaction.region")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("usage: %[1]s compact [flags] SESSION", prog)
	}
	var start, end int64
	if *region != "" {
		if start, end, err = parseRange(*region); err != nil {
			return err
		}
		if *dry {
			return usagef("--range does not combine with --dry-run")
		}
	}
	if *asJSON && !*dry {
		return usagef("--json needs --dry-run: a compaction that writes prints its result as text")
	}
	cfg, err := o.load()
	if err != nil {
		return configError(e, "compact", err)
	}
	log := newLogger(cfg.Log, e.stderr)
	route, err := o.open(cfg, log)
	if err != nil {
		return err
	}
	if *dry {
		return compactDryRun(e, cfg, route, pos[0], o.configFile, *asJSON)
	}
	s, release, err := openSession(cfg, pos[0], true)
	if err != nil {
		return err
	}
	defer release()
	ctx, interrupted, stop := interrupts(e)
	defer stop()
	h, a, err := compactionAgent(ctx, e, cfg, route, s, log)
	if err != nil {
		return err
	}
	defer closeHost(ctx, e, h)
	defer a.Close()
	p := newPrinter(e.stdout)
	p.watch(s.Log(), a.Providers.Compactors)
	before, from := s.Log().NodeCount(), s.Log().NextSeq()
	var changed bool
	waited := statusOf(e.stderr).wait(compactWait(pos[0], a.Providers.Compactors, route))
	if *region != "" {
		changed, err = a.CompactRegion(ctx, start, end)
	} else {
		changed, err = a.CompactNow(ctx)
	}
	waited()
	if interrupted() {
		return &exitStatus{code: 130, msg: "interrupted: the compaction was cancelled and nothing committed was lost; session " + pos[0]}
	}
	if err != nil {
		return err
	}
	for _, ev := range s.Log().Events()[from-s.Log().BaseSeq():] {
		var end struct {
			Error string `json:"error"`
		}
		if ev.Type == surface.TypeCompactionEnd && json.Unmarshal(ev.Data, &end) == nil && end.Error != "" {
			return fmt.Errorf("compaction failed and was recorded as a failed attempt; the surface is unchanged: %s", end.Error)
		}
	}
	if !changed {
		var names []string
		for _, c := range a.Providers.Compactors {
			names = append(names, strconv.Quote(c.ID()))
		}
		fmt.Fprintf(e.stdout, "nothing to compact: the surface has %d nodes and %s proposed no change\n", before, termLine(strings.Join(names, ", ")))
		return nil
	}
	fmt.Fprintf(e.stdout, "surface: %d nodes → %d nodes; session %s\n", before, s.Log().NodeCount(), pos[0])
	return nil
}

// compactionAgent loads the route's plugins and builds the agent that
// compacts session s, as "compact" and "compact --dry-run" both do. The
// caller closes the agent, then the host.
func compactionAgent(ctx context.Context, e *env, cfg *config.Config, route *setup.Route, s *host.Session, log hclog.Logger) (*setup.Host, *setup.Agent, error) {
	h, err := newHost(ctx, e, cfg, route, log, nil)
	if err != nil {
		return nil, nil, err
	}
	if !slices.ContainsFunc(h.Plugins(), func(p *provider.Plugin) bool { return p.Role() == provider.RoleCompaction }) {
		h.Close(ctx)
		return nil, nil, fmt.Errorf("no compaction plugin is enabled in the configuration")
	}
	a, err := h.Agent(ctx, s, withTelemetry(host.Config{}))
	if err != nil {
		h.Close(ctx)
		return nil, nil, err
	}
	return h, a, nil
}

// compactDryRun runs the configured compaction on the session read into
// memory (a session file, or a session id of the store configFile
// configures, read without its lease, so not even a resume marker is
// written) and prints the receipt.
func compactDryRun(e *env, cfg *config.Config, route *setup.Route, path, configFile string, asJSON bool) error {
	ld, err := loadLog(path, configFile)
	if err != nil {
		return err
	}
	s := host.NewSession(ld.id, ld.log, nil)
	log := newLogger(cfg.Log, e.stderr)
	ctx, interrupted, stop := interrupts(e)
	defer stop()
	h, a, err := compactionAgent(ctx, e, cfg, route, s, log)
	if err != nil {
		return err
	}
	defer closeHost(ctx, e, h)
	defer a.Close()
	r, err := a.CompactDryRun(ctx)
	if interrupted() {
		return &exitStatus{code: 130, msg: "interrupted: the dry run was cancelled; nothing was written"}
	}
	if err != nil {
		return fmt.Errorf("the compaction failed (dry run, nothing was written): %w", err)
	}
	if asJSON {
		err = writeJSON(e.stdout, r)
	} else {
		printReceipt(e.stdout, r, path)
	}
	if err != nil {
		return err
	}
	// The real command's exit status: it fails when the compaction is
	// recorded as a failed attempt.
	if msg := failedCompaction(r); msg != "" {
		return fmt.Errorf("the compaction would fail and be recorded as a failed attempt; the surface would be unchanged (dry run, nothing was written): %s", msg)
	}
	return nil
}

// failedCompaction is the error of the first failed compaction of a
// receipt, "" when none failed.
func failedCompaction(r *host.CompactReceipt) string {
	for _, c := range r.Compactions {
		if c.Error != "" {
			return c.Error
		}
	}
	return ""
}

// printReceipt prints a dry run's receipt.
func printReceipt(w io.Writer, r *host.CompactReceipt, path string) {
	fmt.Fprintf(w, "dry run on %s: nothing was written\n", path)
	if !r.Changed && failedCompaction(r) == "" {
		fmt.Fprintf(w, "nothing to compact: the surface has %d nodes and no range after node 0 to replace\n", r.NodesBefore)
	}
	for _, c := range r.Compactions {
		who := c.Provider
		if c.CompactionID != "" && !strings.HasPrefix(c.CompactionID, "prune:") {
			who += " (" + c.CompactionID + ")"
		}
		fmt.Fprintf(w, "\ncompaction by %s\n", termSafe(who))
		if c.Error != "" {
			fmt.Fprintf(w, "  failed: %s\n", termSafe(c.Error))
		}
		if c.Error != "" && len(c.Shadowed) == 0 {
			continue // no range: the attempt failed before proposing one
		}
		if c.Pruned > 0 {
			fmt.Fprintf(w, "  tool results rewritten: %d (seqs %s)\n", c.Pruned, seqList(c.Shadowed))
			continue
		}
		fmt.Fprintf(w, "  range: seq %d..%d\n  nodes shadowed: %d (seqs %s)\n", c.Start, c.End, len(c.Shadowed), seqList(c.Shadowed))
		if c.TokensBefore > 0 || c.TokensAfter > 0 {
			fmt.Fprintf(w, "  tokens: %d → %d\n", c.TokensBefore, c.TokensAfter)
		}
		if c.Checkpoint != "" {
			fmt.Fprintln(w, "  checkpoint:")
			for _, line := range strings.Split(c.Checkpoint, "\n") {
				fmt.Fprintf(w, "    %s\n", termSafe(line))
			}
		}
	}
	for _, f := range r.Failures {
		fmt.Fprintf(w, "plugin failure: %s: %s\n", termSafe(f.Plugin), termSafe(f.Error))
	}
	fmt.Fprintf(w, "\nsurface: %d nodes → %d nodes; summarize calls: %d\n", r.NodesBefore, r.NodesAfter, r.SummarizeCalls)
}
