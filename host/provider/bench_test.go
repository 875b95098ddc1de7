package provider_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/plugins"
	cbnative "github.com/weirhost/weir/plugins/compaction-basic/native"
	"github.com/weirhost/weir/plugins/token-meter/meter"
	tmnative "github.com/weirhost/weir/plugins/token-meter/native"
	"github.com/weirhost/weir/sdk/plugintest"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

// Benchmarks of a step's plugin work with the three providers.
//
// BenchmarkStep prepares a session whose surface has 100, 1,000 or 10,000
// nodes (the log about three times as long) and measures per iteration what
// the providers do before a step of the loop: the pre-step compaction call
// (no pressure: the meter folds the previous step's events and measures)
// and the prompt render. Between iterations, untimed, the loop's events of
// a step are appended (a turn with a user and an assistant message, then a
// compaction bracket that keeps the surface size); the meter, attached to
// the session as the agent attaches it, queues them. The meter has no
// per-step call of its own in the loop: its folding happens inside the next
// pre-step's measurement, so it is timed there.
//
// Variants: wasm (the first-party plugins under plugins/) and native
// (host.SectionPrompt, compaction-basic's native provider, token-meter's
// native meter), each "idle" (the assembly unchanged) and "prompt" (one
// section changes every step, so the prompt is rendered anew). Run with
//
//	go test -run XXX -bench BenchmarkStep -benchtime 200x ./host/provider

// bigRoute is far from any compaction threshold.
var bigRoute = host.Route{Provider: "test", Model: "m1", ContextWindow: 100_000_000}

// history returns the events of a session with a surface of nodes nodes
// and a log of about n events, built once per (nodes, n).
func history(tb testing.TB, nodes, n int) []surface.Event {
	historyMu.Lock()
	defer historyMu.Unlock()
	key := [2]int{nodes, n}
	if evs, ok := histories[key]; ok {
		return evs
	}
	g := newGen(tb)
	for g.s.Log().NextSeq() < int64(n-3*nodes-10) {
		g.turn(min(nodes/2, 50))
		if g.s.Log().NodeCount() >= nodes-100 {
			ns := g.s.Log().Nodes()
			g.compact(ns[1 : len(ns)-1])
		}
	}
	for g.s.Log().NodeCount() < nodes-60 {
		g.turn(50)
	}
	users := nodes - g.s.Log().NodeCount() - 1 // and an answer
	if g.s.Log().Header() == nil {
		users-- // and the system prompt
	}
	g.turn(users)
	require.Equal(tb, nodes, g.s.Log().NodeCount())
	histories[key] = g.s.Log().Events()
	return histories[key]
}

var (
	historyMu sync.Mutex
	histories = map[[2]int][]surface.Event{}
)

// gen appends loop-shaped events to a session.
type gen struct {
	tb     testing.TB
	s      *host.Session
	turnNo int64
	ids    int
}

func newGen(tb testing.TB) *gen {
	log := surface.New(surface.WithClock(func() int64 { return 1_750_000_000_000 }))
	return &gen{tb: tb, s: host.NewSession("bench", log, nil)}
}

func restoreGen(tb testing.TB, events []surface.Event) *gen {
	log, err := surface.Restore(events, surface.WithClock(func() int64 { return 1_750_000_000_000 }))
	require.NoError(tb, err)
	return &gen{tb: tb, s: host.NewSession("bench", log, nil), turnNo: log.LastTurn(), ids: len(events)}
}

func (g *gen) add(typ string, data any, op surface.Op, sources []int64) surface.Event {
	b, err := surface.Data(data)
	require.NoError(g.tb, err)
	evs, err := g.s.Propose(host.Proposer{Kind: host.ByLoop}, surface.Proposal{Type: typ, Data: b, Op: op, Sources: sources})
	require.NoError(g.tb, err)
	return evs[0]
}

func (g *gen) id() string { g.ids++; return "m" + strconv.Itoa(g.ids) }

var filler = strings.Repeat("The quick brown fox jumps over the lazy dog. ", 6)

type ref struct {
	Turn int64 `json:"turn"`
	Step int64 `json:"step,omitzero"`
}

// open starts a turn.
func (g *gen) open() {
	g.turnNo++
	g.add(surface.TypeTurnStart, ref{Turn: g.turnNo}, surface.Op{}, nil)
}

// step runs the rest of a turn: users user messages and an answer.
func (g *gen) step(users int) {
	t := g.turnNo
	g.add(surface.TypeStepStart, ref{t, 1}, surface.Op{}, nil)
	if g.s.Log().Header() == nil {
		g.add(surface.TypeSystemMessage, surface.StepMessage{Turn: t, Step: 1,
			Message: surface.SystemMessage(g.id(), "system-prompt", "You are a benchmark.")}, surface.Append, nil)
	}
	for range users {
		g.add(surface.TypeUserMessage, surface.Message{ID: g.id(), Role: surface.RoleUser, Source: surface.Source{Kind: "user"},
			Content: []surface.Block{surface.Text("question " + strconv.Itoa(g.ids) + ": " + filler)}}, surface.Append, nil)
	}
	if g.s.Log().Header() == nil {
		g.add(surface.TypeRequestHeader, surface.HeaderEvent{Header: surface.Header{Config: surface.CallConfig{Provider: "test", Model: "m1"}},
			Reason: surface.ReasonInitial}, surface.Op{}, nil)
	}
	g.add(surface.TypeAssistantMessage, surface.StepMessage{Turn: t, Step: 1, Message: surface.Message{ID: g.id(),
		Role: surface.RoleAssistant, Source: surface.Source{Kind: "model", Provider: "test", Model: "m1"},
		Content: []surface.Block{surface.Text("answer " + strconv.Itoa(g.ids) + ": " + filler + filler)}}}, surface.Append, nil)
	g.add(surface.TypeStepEnd, ref{t, 1}, surface.Op{}, nil)
	g.add(surface.TypeTurnEnd, surface.TurnEnd{Turn: t, Reason: surface.EndReason{Kind: surface.EndCompleted}}, surface.Op{}, nil)
}

func (g *gen) turn(users int) {
	g.open()
	g.step(users)
}

// compact replaces the nodes seqs (consecutive on the surface) with one
// checkpoint, in a bracket.
func (g *gen) compact(seqs []int64) {
	id := "cmp-" + strconv.FormatInt(g.s.Log().NextSeq(), 10)
	start := g.add(surface.TypeCompactionStart, map[string]any{"compactionId": id}, surface.Op{}, nil)
	sum := g.add(surface.TypeCompactionSummary, map[string]any{"compactionId": id, "summary": "summary"}, surface.Op{}, nil)
	g.add(surface.TypeUserMessage, surface.Message{ID: g.id(), Role: surface.RoleUser, Source: surface.Source{Kind: "plugin", Plugin: "compact"},
		Content: []surface.Block{surface.Text("<compacted-summary>summary</compacted-summary>")}},
		surface.Replace(seqs[0], seqs[len(seqs)-1]), append([]int64{start.Seq, sum.Seq}, seqs...))
	g.add(surface.TypeCompactionEnd, map[string]any{"compactionId": id}, surface.Op{}, nil)
}

// providers are the three providers of one session.
type providers struct {
	prompt host.SystemPromptProvider
	comp   host.CompactionProvider
	meter  host.Meter
	what   string
}

type providerSet func(tb testing.TB, s *host.Session) providers

func nativeProviders(tb testing.TB, s *host.Session) providers {
	comp, err := cbnative.New(nil)
	require.NoError(tb, err)
	m, err := tmnative.New(meter.Config{})
	require.NoError(tb, err)
	return providers{prompt: &host.SectionPrompt{}, comp: comp, meter: m,
		what: "native: host.SectionPrompt, compaction-basic/native, token-meter/native"}
}

// pluginSet is three plugins loaded once per benchmark binary: the
// modules and configurations of the prompt, compaction and meter roles.
type pluginSet struct {
	modules, configs  [3]string
	once              sync.Once
	prompt, comp, met *provider.Plugin
	what              string
	err               error
}

var (
	firstPartySet = &pluginSet{modules: [3]string{"system-prompt", "compaction-basic", "token-meter"}}
)

var roles = [3]provider.Role{provider.RoleSystemPrompt, provider.RoleCompaction, provider.RoleTokenMeter}

func (ps *pluginSet) load(tb testing.TB, mods func(testing.TB) map[string][]byte) {
	ps.once.Do(func() {
		ctx := context.Background()
		rt := plugintest.Runtime(tb)
		counters := provider.WithTokenizers(map[string]tokenizer.Counter{"test-tokenizer": tokenizer.Heuristic})
		built := mods(tb)
		var loaded [3]*provider.Plugin
		for i, role := range roles {
			wasm := built[ps.modules[i]]
			if wasm == nil {
				ps.err = fmt.Errorf("module %s is not available", ps.modules[i])
				return
			}
			// Generous deadlines: the first calls on a 10,000-node session
			// (untimed warm-up) take seconds on a loaded machine. The name
			// is the module's: the first-party module serves the plugin its
			// name selects.
			loaded[i], ps.err = provider.Load(ctx, rt, provider.Spec{Name: ps.modules[i], Role: role,
				Wasm: wasm, Config: []byte(ps.configs[i]), Limits: provider.Limits{Call: time.Minute}}, counters)
			if ps.err != nil {
				return
			}
			ps.what += " " + string(role) + "=" + ps.modules[i]
		}
		ps.prompt, ps.comp, ps.met = loaded[0], loaded[1], loaded[2]
		ps.what = "wasm:" + ps.what
	})
	if ps.err != nil {
		tb.Fatalf("plugins: %v", ps.err)
	}
}

func (ps *pluginSet) providers(tb testing.TB, s *host.Session) providers {
	prompt, err := ps.prompt.SystemPrompt(s)
	require.NoError(tb, err)
	comp, err := ps.comp.Compaction()
	require.NoError(tb, err)
	m, err := ps.met.Meter(s)
	require.NoError(tb, err)
	return providers{prompt: prompt, comp: comp, meter: m, what: ps.what}
}

func firstPartyProviders(tb testing.TB, s *host.Session) providers {
	firstPartySet.load(tb, firstParty)
	return firstPartySet.providers(tb, s)
}

// firstParty is the first-party module under each plugin's name, as the
// host embeds it (go run ./plugins/internal/wasmbuild -check proves it is
// what the sources build).
func firstParty(testing.TB) map[string][]byte {
	return plugins.FirstParty
}

// capture is a compaction provider that keeps the view it is handed.
type capture struct{ view *host.View }

func (c *capture) ID() string { return "capture" }
func (c *capture) Compact(_ context.Context, v *host.View, _ host.CompactionRequest) ([]surface.Proposal, error) {
	c.view = v
	return nil, nil
}

type idleModel struct{}

func (idleModel) Stream(context.Context, *llm.Request, func(llm.Delta)) (*llm.Result, error) {
	return &llm.Result{Content: []surface.Block{surface.Text("unused")}, FinishReason: llm.FinishStop}, nil
}

// stepBench is one prepared session with its providers and the session's
// view (obtained from an agent attached to it, so the view's meter is the
// providers' meter, fed by the agent's observer).
type stepBench struct {
	g    *gen
	p    providers
	view *host.View
	asm  host.Assembly
	// time spent in each provider call
	compact, render time.Duration
}

func newStepBench(tb testing.TB, events []surface.Event, set providerSet) *stepBench {
	sb := &stepBench{g: restoreGen(tb, events)}
	sb.p = set(tb, sb.g.s)
	c := &capture{}
	a, err := host.NewAgent(sb.g.s, host.Config{Route: bigRoute, Model: idleModel{}, Prompt: sb.p.prompt,
		Meter: sb.p.meter, Compactors: []host.CompactionProvider{c}})
	require.NoError(tb, err)
	_, err = a.CompactNow(context.Background())
	require.NoError(tb, err)
	require.NotNil(tb, c.view)
	sb.view = c.view
	sb.asm = host.Assembly{Sections: []host.Section{{Key: "role", Text: "You are a benchmark."}, {Key: "style", Text: "Be terse."}},
		Data: map[string]string{"date": "2025-05-01", "cwd": "/work"}, Route: bigRoute}
	return sb
}

// prestep is the providers' work before a step: compaction, then the
// prompt.
func (sb *stepBench) prestep(tb testing.TB) {
	ctx := context.Background()
	start := time.Now()
	ps, err := sb.p.comp.Compact(ctx, sb.view, host.CompactionRequest{Reason: host.CompactPressure, Turn: sb.g.turnNo, Route: bigRoute})
	if err != nil || len(ps) > 0 {
		tb.Fatalf("compaction: %d proposals, error %v", len(ps), err)
	}
	mid := time.Now()
	if _, err := sb.p.prompt.Render(ctx, &sb.asm); err != nil {
		tb.Fatal(err)
	}
	sb.compact += mid.Sub(start)
	sb.render += time.Since(mid)
}

// rest appends the remainder of the step and a compaction that keeps the
// surface size.
func (sb *stepBench) rest() {
	sb.g.step(1)
	nodes := sb.g.s.Log().Nodes()
	sb.g.compact(nodes[1:4])
}

var stepSets = []struct {
	name string
	set  providerSet
}{{"wasm", firstPartyProviders}, {"native", nativeProviders}}

// stepSizes are the surface sizes of BenchmarkStep, with their log lengths.
var stepSizes = [][2]int{{100, 1_000}, {1_000, 3_000}, {10_000, 30_000}}

func BenchmarkStep(b *testing.B) {
	for _, sz := range stepSizes {
		history(b, sz[0], sz[1]) // all up front: every run sees the same host heap
	}
	for _, sz := range stepSizes {
		events := history(b, sz[0], sz[1])
		for _, v := range stepSets {
			for _, change := range []bool{false, true} {
				name := "idle"
				if change {
					name = "prompt"
				}
				b.Run(fmt.Sprintf("%s/nodes=%d/%s", v.name, sz[0], name), func(b *testing.B) {
					sb := newStepBench(b, events, v.set)
					b.Log(sb.p.what)
					// Warm up: instances started, caches filled.
					sb.g.open()
					sb.prestep(b)
					sb.rest()
					b.ReportAllocs()
					b.ResetTimer()
					for i := range b.N {
						b.StopTimer()
						sb.g.open()
						if change {
							sb.asm.Sections[1].Text = "Be terse, step " + strconv.Itoa(i) + "."
						}
						b.StartTimer()
						sb.prestep(b)
						b.StopTimer()
						sb.rest()
						b.StartTimer()
					}
					b.StopTimer()
					require.Equal(b, sz[0], sb.g.s.Log().NodeCount())
					n := float64(b.N + 1)
					b.ReportMetric(float64(sb.compact.Microseconds())/n, "compact-µs/op")
					b.ReportMetric(float64(sb.render.Microseconds())/n, "render-µs/op")
				})
			}
		}
	}
}

// BenchmarkResume measures the first step of a process that resumes a
// session of 1,000 surface nodes and about 3,000 events: the providers are new
// (as in a new process; the plugin instances are warm, as after the first
// session of a process), the agent hands the meter the whole log, and the
// first pre-step compaction and render run. Restoring the log itself is
// host work without plugins and is not timed. Run with
//
//	go test -run XXX -bench BenchmarkResume -benchtime 20x ./host/provider
//
// wasm-cache is wasm with a provider.DirStateCache: the meter starts from
// the blob the warm-up left for the session instead of folding the log.
func BenchmarkResume(b *testing.B) {
	events := history(b, 1_000, 5_000)
	cache := &provider.DirStateCache{Dir: b.TempDir()}
	warm := false
	cached := func(tb testing.TB, s *host.Session) providers {
		p := firstPartyProviders(tb, s)
		c := provider.StateCache(cache)
		if warm {
			c = readOnlyCache{cache} // every iteration resumes the warm-up's log
		}
		m, err := firstPartySet.met.Meter(s, provider.WithStateCache(c))
		require.NoError(tb, err)
		p.meter = m
		return p
	}
	sets := append(stepSets[:1:1], struct {
		name string
		set  providerSet
	}{"wasm-cache", cached}, stepSets[1])
	for _, v := range sets {
		b.Run(v.name, func(b *testing.B) {
			warm = false
			newStepBench(b, events, v.set) // load and warm the plugins (and fill the cache)
			warm = true
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				g := restoreGen(b, events)
				b.StartTimer()
				sb := &stepBench{g: g}
				sb.p = v.set(b, g.s)
				c := &capture{}
				a, err := host.NewAgent(g.s, host.Config{Route: bigRoute, Model: idleModel{}, Prompt: sb.p.prompt,
					Meter: sb.p.meter, Compactors: []host.CompactionProvider{c}})
				require.NoError(b, err)
				_, err = a.CompactNow(context.Background())
				require.NoError(b, err)
				sb.view = c.view
				sb.asm = host.Assembly{Sections: []host.Section{{Key: "role", Text: "You are a benchmark."}}, Route: bigRoute}
				sb.g.open()
				sb.prestep(b)
			}
		})
	}
}

// BenchmarkThroughput runs whole turns (one step each: a user message and
// a model that answers at once) through host.Agent on a session of 100 or
// 1,000 surface nodes, with the three WASM providers and with the native
// ones, and reports steps per second. Every timed turn runs on a surface of
// exactly that size whatever -benchtime is: before it, untimed, the session
// (of nodes-2*throughputWarmup nodes) is restored afresh from its events,
// given new providers and an agent, and runs throughputWarmup turns: the
// first turn of a resumed session (the meter folds the log) and the few
// after it that the meter still sends from its blob. The timed turn is the
// steady state that follows. Each iteration does this for both variants,
// in rotating order, so that both see the same machine load. It reports
// steps/s of each variant (native: prefixed) and wasm/native, the ratio of
// their times per turn. Run with
//
//	go test -run XXX -bench BenchmarkThroughput -benchtime 100x ./host/provider
func BenchmarkThroughput(b *testing.B) {
	sizes := [][2]int{{100, 1_000}, {1_000, 3_000}}
	for _, sz := range sizes {
		history(b, sz[0]-2*throughputWarmup, sz[1])
	}
	for _, sz := range sizes {
		events := history(b, sz[0]-2*throughputWarmup, sz[1])
		b.Run(fmt.Sprintf("nodes=%d", sz[0]), func(b *testing.B) {
			took := make([]time.Duration, len(stepSets))
			for i := 0; b.Loop(); i++ {
				for k := range stepSets {
					j := (i + k) % len(stepSets)
					b.StopTimer()
					g, turn := throughputSession(b, events, stepSets[j].set)
					for t := range throughputWarmup {
						turn(t)
					}
					require.Equal(b, sz[0], g.s.Log().NodeCount())
					b.StartTimer()
					start := time.Now()
					turn(throughputWarmup)
					took[j] += time.Since(start)
					b.StopTimer()
					for _, e := range g.s.Log().Events() {
						if e.Type == surface.TypePluginFailure {
							b.Fatalf("%s: plugin failure: %s", stepSets[j].name, e.Data)
						}
					}
					b.StartTimer()
				}
			}
			b.StopTimer()
			per := make([]float64, len(stepSets))
			for j, v := range stepSets {
				per[j] = took[j].Seconds() / float64(b.N)
				prefix := ""
				if j > 0 {
					prefix = v.name + ":"
				}
				b.ReportMetric(1/per[j], prefix+"steps/s")
			}
			b.ReportMetric(per[0]/per[1], stepSets[0].name+"/"+stepSets[1].name)
		})
	}
}

// throughputWarmup is how many turns of a restored session
// BenchmarkThroughput runs before the timed one.
const throughputWarmup = 4

// throughputSession restores a session from events with the providers of
// set and an agent, and returns it with a function that runs turn i.
func throughputSession(tb testing.TB, events []surface.Event, set providerSet) (*gen, func(i int)) {
	g := restoreGen(tb, events)
	p := set(tb, g.s)
	a, err := host.NewAgent(g.s, host.Config{Route: bigRoute, Model: idleModel{}, Prompt: p.prompt, Meter: p.meter,
		Compactors: []host.CompactionProvider{p.comp},
		Sections:   []host.Section{{Key: "role", Text: "You are a benchmark."}}})
	require.NoError(tb, err)
	return g, func(i int) {
		res, err := a.Run(context.Background(), a.UserMessage("turn "+strconv.Itoa(i)))
		if err != nil || res.Reason.Kind != surface.EndCompleted {
			tb.Fatalf("turn %d: %v %v", i, res, err)
		}
	}
}

// BenchmarkSessionsRSS runs 100 sessions concurrently, each with its own
// agent and the three WASM providers (one runtime, one pool of instances
// per plugin), for three turns each, and reports the process's resident
// memory: base-MiB with the plugins loaded before any session, rss-MiB
// after the run, hwm-MiB its peak, and how many instances the pools
// started. Run with -benchtime 1x.
func BenchmarkSessionsRSS(b *testing.B) {
	set := firstPartySet
	set.load(b, firstParty)
	const sessions = 100
	runtime.GC()
	base, _ := memStatus(b)
	b.ReportMetric(base, "base-MiB")
	for range b.N {
		b.StopTimer()
		runs := make([]*sessionRun, sessions)
		for i := range runs {
			runs[i] = newSessionRun(b, set, i)
		}
		b.StartTimer()
		var wg sync.WaitGroup
		errs := make([]error, sessions)
		for i, r := range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = r.run()
			}()
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(b, err)
		}
	}
	b.StopTimer()
	rss, hwm := memStatus(b)
	b.ReportMetric(rss, "rss-MiB")
	b.ReportMetric(hwm, "hwm-MiB")
	started := set.prompt.Stats().Started + set.comp.Stats().Started + set.met.Stats().Started
	b.ReportMetric(float64(started), "instances")
	b.Log(set.what)
}

// sessionRun is one session of BenchmarkSessionsRSS.
type sessionRun struct {
	i int
	s *host.Session
	p providers
	a *host.Agent
}

func newSessionRun(tb testing.TB, set *pluginSet, i int) *sessionRun {
	r := &sessionRun{i: i, s: host.NewSession("s"+strconv.Itoa(i), surface.New(), nil)}
	r.p = set.providers(tb, r.s)
	a, err := host.NewAgent(r.s, host.Config{Route: host.Route{Provider: "test", Model: "m1", ContextWindow: 200_000},
		Model: idleModel{}, Prompt: r.p.prompt, Meter: r.p.meter, Compactors: []host.CompactionProvider{r.p.comp},
		Sections: []host.Section{{Key: "role", Text: "You are session " + strconv.Itoa(i) + "."}}})
	require.NoError(tb, err)
	r.a = a
	return r
}

func (r *sessionRun) run() error {
	for t := range 3 {
		res, err := r.a.Run(context.Background(), r.a.UserMessage("turn "+strconv.Itoa(t)+" "+filler))
		if err != nil {
			return err
		}
		if res.Reason.Kind != surface.EndCompleted {
			return fmt.Errorf("session %d turn %d ended %s", r.i, t, res.Reason.Kind)
		}
	}
	for _, e := range r.s.Log().Events() {
		if e.Type == surface.TypePluginFailure {
			return fmt.Errorf("session %d: plugin failure: %s", r.i, e.Data)
		}
	}
	_, err := r.p.meter.Measure(context.Background(), nil)
	return err
}

// memStatus reads VmRSS and VmHWM of this process, in MiB.
func memStatus(tb testing.TB) (rss, hwm float64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			hwm = kb / 1024
		}
	}
	return rss, hwm
}
