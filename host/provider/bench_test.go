package provider_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
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
	cbnative "github.com/weirhost/weir/plugins/compaction-basic/native"
	"github.com/weirhost/weir/plugins/token-meter/meter"
	tmnative "github.com/weirhost/weir/plugins/token-meter/native"
	"github.com/weirhost/weir/sdk/plugintest"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

// Benchmarks of a step's plugin work with the three providers.
//
// BenchmarkStep prepares a session whose surface has 1,000 nodes and whose
// log has about 1,000 or 100,000 events, and measures per iteration what
// the providers do in one step of the loop: the pre-step compaction call
// (pressure, nothing to compact: it reads the surface and the meter, which
// folds the previous step's events), the prompt render, and the per-step
// measurement. Between iterations, untimed, the loop's events of a step are
// appended (a turn with a user and an assistant message, then a
// compaction bracket that keeps the surface at 1,000 nodes).
//
// Three variants: wasm-test-guests (benign's prompt and meter, the
// checkpoint guest: trivial logic, so the figure is the cost of the
// adapters, the runtime and the host imports), wasm-first-party (the
// plugins under plugins/: the same logic as the native variant, when they
// build; skipped otherwise) and native (host.SectionPrompt,
// compaction-basic's native provider, token-meter's native meter). Run
// with
//
//	go test -run XXX -bench . -benchtime 200x ./host/provider

const surfaceNodes = 1000

// bigRoute is far from any compaction threshold.
var bigRoute = host.Route{Provider: "test", Model: "m1", ContextWindow: 100_000_000}

// history returns the events of a session with a 1,000-node surface and
// about n events, built once per n.
func history(tb testing.TB, n int) []surface.Event {
	historyMu.Lock()
	defer historyMu.Unlock()
	if evs, ok := histories[n]; ok {
		return evs
	}
	g := newGen(tb)
	for g.s.Log().NextSeq() < int64(n-surfaceNodes-10) {
		g.turn(1)
		if g.s.Log().NodeCount() >= surfaceNodes-100 {
			nodes := g.s.Log().Nodes()
			g.compact(nodes[1 : len(nodes)-1])
		}
	}
	users := surfaceNodes - g.s.Log().NodeCount() - 1 // and an answer
	if g.s.Log().Header() == nil {
		users-- // and the system prompt
	}
	g.turn(users)
	require.Equal(tb, surfaceNodes, g.s.Log().NodeCount())
	histories[n] = g.s.Log().Events()
	return histories[n]
}

var (
	historyMu sync.Mutex
	histories = map[int][]surface.Event{}
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
	testGuestSet  = &pluginSet{modules: [3]string{"benign", "checkpoint", "benign"},
		configs: [3]string{"", `{"maxNodes":100000}`, ""}}
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
			loaded[i], ps.err = provider.Load(ctx, rt, provider.Spec{Name: ps.modules[i] + "-" + string(role), Role: role,
				Wasm: wasm, Config: []byte(ps.configs[i])}, counters)
			if ps.err != nil {
				return
			}
			ps.what += " " + string(role) + "=" + ps.modules[i]
		}
		ps.prompt, ps.comp, ps.met = loaded[0], loaded[1], loaded[2]
		ps.what = "wasm:" + ps.what
	})
	if ps.err != nil {
		tb.Skipf("plugins: %v", ps.err)
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

func testGuestProviders(tb testing.TB, s *host.Session) providers {
	testGuestSet.load(tb, func(testing.TB) map[string][]byte { return modules })
	return testGuestSet.providers(tb, s)
}

// firstParty builds the first-party plugins that exist and build; the
// others are left out (and the benchmark falls back to test guests).
func firstParty(tb testing.TB) map[string][]byte {
	out := map[string][]byte{}
	for _, name := range []string{"system-prompt", "compaction-basic", "token-meter"} {
		dir := filepath.Join("..", "..", "plugins", name)
		if _, err := os.Stat(filepath.Join(dir, "main.go")); err != nil {
			continue
		}
		mods, err := plugintest.BuildDirs(context.Background(), dir)
		if err != nil {
			tb.Logf("first-party plugin %s does not build, using a test guest: %v", name, err)
			continue
		}
		out[name] = mods[dir]
	}
	return out
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
	return text("unused"), nil
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
	compact, render, measured time.Duration
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

// measure is the per-step measurement after the step.
func (sb *stepBench) measure(tb testing.TB) {
	start := time.Now()
	if _, err := sb.p.meter.Measure(context.Background(), nil); err != nil {
		tb.Fatal(err)
	}
	sb.measured += time.Since(start)
}

// rest appends the remainder of the step and a compaction that keeps the
// surface size.
func (sb *stepBench) rest() {
	sb.g.step(1)
	nodes := sb.g.s.Log().Nodes()
	sb.g.compact(nodes[1:4])
}

func BenchmarkStep(b *testing.B) {
	sizes := []int{1_000, 100_000}
	for _, n := range sizes {
		history(b, n) // both up front: every run sees the same host heap
	}
	for _, n := range sizes {
		events := history(b, n)
		for _, v := range []struct {
			name string
			set  providerSet
		}{{"wasm-test-guests", testGuestProviders}, {"wasm-first-party", firstPartyProviders}, {"native", nativeProviders}} {
			b.Run(fmt.Sprintf("%s/log=%d", v.name, n), func(b *testing.B) {
				sb := newStepBench(b, events, v.set)
				b.Log(sb.p.what)
				// Warm up: instances started, caches filled.
				sb.g.open()
				sb.prestep(b)
				sb.rest()
				sb.measure(b)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					sb.g.open()
					b.StartTimer()
					sb.prestep(b)
					b.StopTimer()
					sb.rest()
					b.StartTimer()
					sb.measure(b)
				}
				b.StopTimer()
				require.Equal(b, surfaceNodes, sb.g.s.Log().NodeCount())
				n := float64(b.N + 1)
				b.ReportMetric(float64(sb.compact.Microseconds())/n, "compact-µs/op")
				b.ReportMetric(float64(sb.render.Microseconds())/n, "render-µs/op")
				b.ReportMetric(float64(sb.measured.Microseconds())/n, "measure-µs/op")
			})
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
