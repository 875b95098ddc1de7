package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

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
	if _, err := os.Stat(pos[0]); err != nil {
		return err
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
	s, err := host.OpenFile(pos[0])
	if err != nil {
		return err
	}
	defer s.Close()
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
		Sections: cfg.Sections(cfg.Model), Data: hostData(cfg, route, time.Now(), workdir()), Compactors: prov.compactors, Meter: prov.meter, Logger: log}))
	if err != nil {
		return err
	}
	p := newPrinter(e.stdout)
	p.watch(s.Log(), prov.compactors)
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
		var names []string
		for _, c := range prov.compactors {
			names = append(names, strconv.Quote(c.ID()))
		}
		fmt.Fprintf(e.stdout, "nothing to compact: the surface has %d nodes and %s proposed no change\n", before, termLine(strings.Join(names, ", ")))
		return nil
	}
	fmt.Fprintf(e.stdout, "surface: %d nodes → %d nodes; session %s\n", before, s.Log().NodeCount(), pos[0])
	return nil
}

// workdir is the working directory, or "" when it cannot be read.
func workdir() string {
	d, _ := os.Getwd()
	return d
}
