package main

import (
	"flag"
	"fmt"

	"github.com/go-json-experiment/json"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/surface"
)

func init() {
	register(&command{name: "compact", args: "SESSION", summary: "compact a session now (manual compaction, between turns)", run: compactCmd})
}

func compactCmd(e *env, args []string) error {
	fs := flag.NewFlagSet("compact", flag.ContinueOnError)
	var o runOptions
	o.flags(fs, false)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("usage: host compact [flags] SESSION")
	}
	cfg, err := o.load()
	if err != nil {
		return configError(e, "compact", err)
	}
	log := newLogger(cfg.Log, e.stderr)
	model, route, err := o.open(cfg, log)
	if err != nil {
		return err
	}
	s, release, err := openSession(cfg, pos[0], true)
	if err != nil {
		return err
	}
	defer release()
	ctx, interrupted, stop := interrupts(e)
	defer stop()
	set, prov, err := routeProviders(ctx, e, cfg, route, s, log)
	if err != nil {
		return err
	}
	defer set.Close(ctx)
	if len(prov.compactors) == 0 {
		return fmt.Errorf("no compaction plugin is enabled in the configuration")
	}
	a, err := host.NewAgent(s, limits(cfg, host.Config{Route: route, Model: model, Prompt: prov.prompt,
		Sections: cfg.Sections(cfg.Model), Compactors: prov.compactors, Meter: prov.meter, Logger: log}))
	if err != nil {
		return err
	}
	p := newPrinter(e.stdout)
	s.Log().Observe(p.event)
	before, from := s.Log().NodeCount(), s.Log().NextSeq()
	changed, err := a.CompactNow(ctx)
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
		fmt.Fprintf(e.stdout, "nothing to compact: the surface has %d nodes and no range after node 0 to replace\n", before)
		return nil
	}
	fmt.Fprintf(e.stdout, "surface: %d nodes → %d nodes; session %s\n", before, s.Log().NodeCount(), pos[0])
	return nil
}
