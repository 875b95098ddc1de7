package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/eval"
	"github.com/weirhost/weir/host/setup"
	"github.com/weirhost/weir/sdk/tokenizer"
)

func init() {
	register(&command{name: "eval", args: "SESSION", summary: "replay a recorded session through plugin sets offline and compare requests, tokens, cache, compactions and cost", run: evalCmd})
}

// setFlag collects --set NAME=CONFIG, repeatable.
type setFlag []namedSet

type namedSet struct{ name, file string }

func (s *setFlag) String() string { return "" }

func (s *setFlag) Set(v string) error {
	name, file, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=CONFIG (CONFIG a configuration file, or empty for the configuration in use), got %q", v)
	}
	for _, o := range *s {
		if o.name == name {
			return fmt.Errorf("two sets are named %q", name)
		}
	}
	*s = append(*s, namedSet{name, file})
	return nil
}

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ", ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func evalCmd(e *env, args []string) error {
	started := time.Now()
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	var sets setFlag
	var probes listFlag
	fs.Var(&sets, "set", "a plugin set NAME=CONFIG: CONFIG is a configuration file whose plugins and sandbox apply, or empty for the configuration in use (the baseline, compared byte for byte with the recording); repeatable; default one set \"baseline\"")
	configFile := fs.String("config", "", "the configuration in use (default ./weir.yaml, then weir/weir.yaml in the user config folder)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	chart := fs.String("chart", "", "draw input tokens per request for every set into FILE.svg")
	fs.Var(&probes, "probe", "a text to follow: the report names the last request that showed it to the model; repeatable")
	probeFile := fs.String("probes", "", "a file of probes, one per line")
	tok := fs.String("tokenizer", "", "count tokens with deepseek-v3, o200k, cl100k or heuristic (default: the recorded route's: deepseek-v3 for provider deepseek, else heuristic)")
	prices := fs.String("prices", "", "the price table in dollars per million tokens, hit=X,miss=Y,output=Z (default: eval.prices in the configuration, else DeepSeek's: hit=0.028,miss=0.28,output=0.42)")
	sumRoute := fs.String("summarize-route", "", "a configured route whose model writes the summaries the recording lacks (this reaches the network); default none: an offline extractive summary")
	maxSum := fs.Int("max-summaries", 10, "with --summarize-route: at most this many model calls per set; the rest are extractive")
	jobs := fs.Int("jobs", goruntime.GOMAXPROCS(0), "replay at most this many sets at once (default: the CPUs Go uses); plugin times are wall times, which grow when sets share a CPU: use --jobs 1 to compare them")
	fs.String("log-level", "", "log level: trace, debug, info, warn, error, off (logs go to standard error)")
	fs.String("log-format", "", "log format: text or json")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("usage: %[1]s eval [flags] SESSION", prog)
	}
	if *jobs < 1 {
		return usagef("--jobs %d: replay at least one set at a time", *jobs)
	}
	opts := eval.Options{Probes: probes}
	if *probeFile != "" {
		more, err := readProbes(*probeFile)
		if err != nil {
			return err
		}
		opts.Probes = append(opts.Probes, more...)
	}
	if opts.Prices, err = parsePrices(*prices); err != nil {
		return usagef("--prices: %v", err)
	}
	if *tok != "" {
		if opts.Counter, err = counterNamed(*tok); err != nil {
			return usagef("--tokenizer: %v", err)
		}
	}
	if *chart != "" && eval.CheckChartPath(*chart) != nil {
		return usagef("--chart %s: the file must end in .svg (the chart is SVG only; convert it with any SVG renderer for a bitmap)", *chart)
	}
	if *chart != "" {
		// Before the replay, not after it: a chart that cannot be written
		// must not cost the whole replay.
		if fi, err := os.Stat(filepath.Dir(*chart)); err != nil || !fi.IsDir() {
			return usagef("--chart %s: the folder %s does not exist (eval creates the chart file, not its folder)", *chart, filepath.Dir(*chart))
		}
	}
	logFlags := config.FlagsFrom(fs, map[string]string{"log-level": "log.level", "log-format": "log.format"})
	base, _, err := config.Load(config.Options{File: *configFile, Flags: logFlags})
	if err != nil {
		return configError(e, "eval", err)
	}
	if opts.Prices == (eval.Prices{}) {
		// No --prices: the configuration's table (zero: DeepSeek's).
		opts.Prices = eval.Prices(base.Eval.Prices)
	}
	log := newLogger(base.Log, e.stderr)
	ld, err := loadLog(pos[0], *configFile)
	if err != nil {
		return err
	}
	// The session is recorded while the sets' plugins load (replaySets).
	var rec *eval.Recording
	var recErr error
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		rec, recErr = eval.Record(ld.id, ld.log.Events())
	}()
	defer func() { <-recorded }()
	record := func() (*eval.Recording, error) {
		<-recorded
		return rec, recErr
	}
	// fail is err, unless the recording failed: its error comes first, as
	// when nothing ran beside it.
	fail := func(err error) error {
		if _, rerr := record(); rerr != nil {
			return rerr
		}
		return err
	}
	if *sumRoute != "" {
		cfg, _, err := config.Load(config.Options{File: *configFile, Flags: append(logFlags, config.Flag{Name: "summarize-route", Key: "model", Value: *sumRoute})})
		if err != nil {
			return fail(configError(e, "eval", err))
		}
		r, err := (&runOptions{}).open(cfg, log)
		if err != nil {
			return fail(fmt.Errorf("--summarize-route %s: %w", *sumRoute, err))
		}
		opts.Summaries = eval.SummaryOptions{Model: r.Model, MaxCalls: *maxSum}
	}
	if len(sets) == 0 {
		sets = setFlag{{name: "baseline"}}
	}
	cfgs := make([]*config.Config, len(sets))
	for i, ns := range sets {
		cfgs[i] = base
		if ns.file != "" {
			if cfgs[i], _, err = config.Load(config.Options{File: ns.file, Flags: logFlags}); err != nil {
				return fail(fmt.Errorf("set %q: %w", ns.name, explain(err)))
			}
		}
	}
	ctx, interrupted, stop := interrupts(e)
	defer stop()
	results, err := replaySets(ctx, e, cfgs, eval.RecordedRoute(ld.log.Events()), record, sets, opts, log, *jobs)
	if interrupted() {
		return &exitStatus{code: 130, msg: "interrupted: the replay was cancelled; nothing was written"}
	}
	if err != nil {
		return fail(err)
	}
	elapsed := time.Since(started)
	if *chart != "" {
		if err := eval.Chart(results, *chart); err != nil {
			return err
		}
	}
	if *asJSON {
		return writeJSON(e.stdout, evalJSON{Session: ld.id, Assumption: assumption, Recorded: len(rec.Requests),
			Prices: orDefault(opts.Prices), Sets: results, ElapsedMs: elapsed.Milliseconds()})
	}
	printEval(e.stdout, pos[0], *tok, rec, results, orDefault(opts.Prices))
	if *chart != "" {
		fmt.Fprintf(e.stdout, "\nchart: %s\n", *chart)
	}
	fmt.Fprintf(e.stdout, "\nreplayed in %s\n", elapsed.Round(time.Millisecond))
	return nil
}

const assumption = "open-loop replay: the recorded replies are taken as fixed; a set that shows the model less would have received other replies in reality"

type evalJSON struct {
	Session    string         `json:"session"`
	Assumption string         `json:"assumption"`
	Recorded   int            `json:"recordedRequests"`
	Prices     eval.Prices    `json:"prices"`
	Sets       []*eval.Result `json:"sets"`
	ElapsedMs  int64          `json:"elapsedMs"`
}

func orDefault(p eval.Prices) eval.Prices {
	if p == (eval.Prices{}) {
		return eval.DeepSeekPrices
	}
	return p
}

// replaySets replays the recording through the sets, at most jobs at
// once, and returns their results in the sets' order. A set that fails
// stops the others; the error is that of the first set, in order, that
// failed of its own accord.
func replaySets(ctx context.Context, e *env, cfgs []*config.Config, route host.Route, record func() (*eval.Recording, error), sets setFlag, opts eval.Options, log hclog.Logger, jobs int) ([]*eval.Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	bars := newSetBars(statusOf(e.stderr), len(sets))
	defer bars.clear()
	results := make([]*eval.Result, len(sets))
	errs := make([]error, len(sets))
	slots := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for i, ns := range sets {
		slots <- struct{}{} // the sets start in order
		wg.Go(func() {
			defer func() { <-slots }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			o := opts
			o.Progress = bars.progress(i, ns.name)
			if results[i], errs[i] = replaySet(ctx, e, cfgs[i], route, record, ns, o, log); errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	// A set that failed of its own accord before one that was stopped.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, err // every failed set was stopped: the command's context ended
		}
	}
	return results, nil
}

// replaySet loads a set's plugins for route and replays the recording
// through them once record has it. The result's LoadMs is the time the
// loading took.
func replaySet(ctx context.Context, e *env, cfg *config.Config, route host.Route, record func() (*eval.Recording, error), ns namedSet, opts eval.Options, log hclog.Logger) (*eval.Result, error) {
	// The plugins are adapted to the recorded route, as run does for the
	// selected one: the meter prices it with the route's tokenizer, not
	// the report's (--tokenizer changes the report's counting only). No
	// meter state cache: eval writes nothing outside its output, and the
	// cache entry of the recorded session is not the replay's.
	loading := time.Now()
	h, err := newHostWith(ctx, e, cfg, &setup.Route{Route: route, Tokenizer: eval.RouteCounter(route).Name()}, log, nil, false)
	if err != nil {
		return nil, fmt.Errorf("set %q: %w", ns.name, err)
	}
	defer closeHost(ctx, e, h)
	loaded := time.Since(loading)
	rec, err := record()
	if err != nil {
		return nil, err
	}
	s := eval.Set{Name: ns.name, Baseline: ns.file == "", Providers: func(sess *host.Session) ([]host.CompactionProvider, host.Meter, error) {
		p, err := h.Providers(sess)
		if err != nil {
			return nil, nil, err
		}
		return p.Compactors, p.Meter, nil
	}}
	res, err := eval.Replay(ctx, rec, s, opts)
	if err != nil {
		return nil, err
	}
	res.Totals.LoadMs = loaded.Milliseconds()
	return res, nil
}

// setBars draws the bars of the sets being replayed as the terminal's
// status line, at most ten times a second; log lines written meanwhile go
// above it. A lone set has its full bar (barLine); several share the line,
// each with its count.
type setBars struct {
	st    *status
	mu    sync.Mutex
	names []string
	done  []int
	total []int
	last  time.Time
}

func newSetBars(st *status, n int) *setBars {
	return &setBars{st: st, names: make([]string, n), done: make([]int, n), total: make([]int, n)}
}

// progress is set i's eval.Options.Progress (nil without a terminal).
func (b *setBars) progress(i int, name string) func(done, total int) {
	if b.st == nil {
		return nil
	}
	b.mu.Lock()
	b.names[i] = name
	b.mu.Unlock()
	return func(done, total int) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.done[i], b.total[i] = done, total
		if total == 0 || (done < total && time.Since(b.last) < 100*time.Millisecond) {
			return
		}
		b.last = time.Now()
		var running []string
		lone := -1
		for j, n := range b.names {
			if n != "" && b.done[j] < b.total[j] {
				running = append(running, fmt.Sprintf("%s %d/%d", n, b.done[j], b.total[j]))
				lone = j
			}
		}
		switch len(running) {
		case 0:
			b.st.Set(barLine(name, done, total))
		case 1:
			b.st.Set(barLine(b.names[lone], b.done[lone], b.total[lone]))
		default:
			b.st.Set(strings.Join(running, " · ") + " requests")
		}
	}
}

func (b *setBars) clear() { b.st.Clear() }

func readProbes(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--probes: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			out = append(out, line)
		}
	}
	return out, sc.Err()
}

func parsePrices(s string) (eval.Prices, error) {
	if s == "" {
		return eval.Prices{}, nil
	}
	p := eval.DeepSeekPrices
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || f < 0 {
			return p, fmt.Errorf("%q is not KEY=DOLLARS (a number ≥ 0)", kv)
		}
		switch k {
		case "hit":
			p.CacheHit = f
		case "miss":
			p.CacheMiss = f
		case "output":
			p.Output = f
		default:
			return p, fmt.Errorf("unknown price %q: use hit, miss or output", k)
		}
	}
	return p, nil
}

func counterNamed(name string) (tokenizer.Counter, error) {
	if name == "heuristic" {
		return tokenizer.Heuristic, nil
	}
	open, ok := tokenizers[name]
	if !ok {
		return nil, fmt.Errorf("unknown tokenizer %q: use deepseek-v3, o200k, cl100k or heuristic", name)
	}
	return open()
}

// printEval prints the report, one column per set. chosen is the
// --tokenizer the user gave ("" for none): the header names the tokenizer
// by it, with the encoding's own name beside it when that differs
// ("o200k (o200k_base)"); JSON carries the encoding's name.
func printEval(w io.Writer, path, chosen string, rec *eval.Recording, results []*eval.Result, p eval.Prices) {
	fmt.Fprintf(w, "eval of %s: %d turns, %d recorded requests\n", path, len(rec.Turns), len(rec.Requests))
	fmt.Fprintf(w, "method: %s\n", assumption)
	if len(results) > 0 {
		name := results[0].Tokenizer
		if chosen != "" && chosen != name {
			name = chosen + " (" + name + ")"
		}
		fmt.Fprintf(w, "tokenizer %s · context window %d · prices $/M tokens: cache hit %g, cache miss %g, output %g\n\n",
			name, results[0].Window, p.CacheHit, p.CacheMiss, p.Output)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(label string, f func(r *eval.Result) string) {
		fmt.Fprintf(tw, "%-34s\t", label)
		for _, r := range results {
			fmt.Fprintf(tw, "%s\t", f(r))
		}
		fmt.Fprintln(tw)
	}
	row("", func(r *eval.Result) string { return termSafe(r.Set) })
	row("requests", func(r *eval.Result) string { return strconv.Itoa(r.Totals.Requests) })
	row("reproduced byte for byte", func(r *eval.Result) string {
		if !r.Baseline {
			return "-"
		}
		return fmt.Sprintf("%d/%d", r.Totals.Reproduced, len(rec.Requests))
	})
	row("input tokens", func(r *eval.Result) string { return strconv.FormatInt(r.Totals.InputTokens, 10) })
	row("cached prefix tokens", func(r *eval.Result) string { return strconv.FormatInt(r.Totals.CachedTokens, 10) })
	row("output tokens (recorded)", func(r *eval.Result) string { return strconv.FormatInt(r.Totals.OutputTokens, 10) })
	row("prefix breaks", func(r *eval.Result) string { return strconv.Itoa(r.Totals.Breaks.Total()) })
	row("  prompt change", func(r *eval.Result) string { return strconv.Itoa(r.Totals.Breaks.Prompt) })
	row("  tool change", func(r *eval.Result) string { return strconv.Itoa(r.Totals.Breaks.Tools) })
	row("  compaction", func(r *eval.Result) string { return strconv.Itoa(r.Totals.Breaks.Compaction) })
	row("  other", func(r *eval.Result) string { return strconv.Itoa(r.Totals.Breaks.Other) })
	row("compactions", func(r *eval.Result) string { return strconv.Itoa(r.Totals.Compactions) })
	row("summarize calls", func(r *eval.Result) string { return strconv.Itoa(r.Totals.Summaries.Total()) })
	row("  reused from the log", func(r *eval.Result) string { return strconv.Itoa(r.Totals.Summaries.Reused) })
	row("  offline (extractive)", func(r *eval.Result) string { return strconv.Itoa(r.Totals.Summaries.Offline) })
	row("  model", func(r *eval.Result) string { return strconv.Itoa(r.Totals.Summaries.Model) })
	row("peak input tokens", func(r *eval.Result) string { return strconv.FormatInt(r.Totals.PeakTokens, 10) })
	row("requests over the window", func(r *eval.Result) string { return strconv.Itoa(r.Totals.OverWindow) })
	row("plugin time", func(r *eval.Result) string { return (time.Duration(r.Totals.PluginMs) * time.Millisecond).String() })
	row("plugin time, loading", func(r *eval.Result) string { return (time.Duration(r.Totals.LoadMs) * time.Millisecond).String() })
	row("plugin failures", func(r *eval.Result) string { return strconv.Itoa(r.Totals.PluginFailures) })
	row("est. cost $", func(r *eval.Result) string { return fmt.Sprintf("%.6f", r.Totals.Cost.Total) })
	row("  cache hit", func(r *eval.Result) string { return fmt.Sprintf("%.6f", r.Totals.Cost.CacheHit) })
	row("  cache miss", func(r *eval.Result) string { return fmt.Sprintf("%.6f", r.Totals.Cost.CacheMiss) })
	row("  output", func(r *eval.Result) string { return fmt.Sprintf("%.6f", r.Totals.Cost.Output) })
	if len(results) > 0 {
		for i, pr := range results[0].Probes {
			row(fmt.Sprintf("probe %q last seen", clipLabel(pr.Text)), func(r *eval.Result) string {
				if r.Probes[i].LastVisible == 0 {
					return "never"
				}
				return "request " + strconv.Itoa(r.Probes[i].LastVisible)
			})
		}
	}
	row("notes", func(r *eval.Result) string { return strconv.Itoa(len(r.Notes)) })
	tw.Flush()

	fmt.Fprintln(w, "\nper request: input tokens / cached prefix tokens, then a mark (C compaction before it, P prompt change, ! over the window, break cause)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "#\tturn.step\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t", termSafe(r.Set))
	}
	fmt.Fprintln(tw)
	n := 0
	for _, r := range results {
		n = max(n, len(r.Requests))
	}
	for i := 0; i < n; i++ {
		fmt.Fprintf(tw, "%d\t", i+1)
		step := ""
		for _, r := range results {
			if i < len(r.Requests) && step == "" {
				step = fmt.Sprintf("%d.%d", r.Requests[i].Turn, r.Requests[i].Step)
			}
		}
		fmt.Fprintf(tw, "%s\t", step)
		for _, r := range results {
			if i >= len(r.Requests) {
				fmt.Fprint(tw, "-\t")
				continue
			}
			q := r.Requests[i]
			mark := ""
			if q.Compactions > 0 {
				mark += "C"
			}
			if q.PromptChange {
				mark += "P"
			}
			if q.OverWindow {
				mark += "!"
			}
			if q.Break != "" {
				mark += " " + q.Break
			}
			fmt.Fprintf(tw, "%d / %d %s\t", q.InputTokens, q.CachedTokens, strings.TrimSpace(mark))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	for _, r := range results {
		for _, note := range r.Notes {
			fmt.Fprintf(w, "note (%s): %s\n", termSafe(r.Set), termSafe(note))
		}
	}
}

func clipLabel(s string) string {
	r := []rune(s)
	if len(r) > 24 {
		return string(r[:23]) + "…"
	}
	return s
}
