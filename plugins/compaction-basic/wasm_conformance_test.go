package compactionbasic

// Conformance group I (behaviour.md section 15, items 84-104) run against
// the first-party compaction-basic module (plugins.FirstParty) under the
// real sandbox, adapted by host/provider and driven by the real agent loop;
// the token meter is the first-party token-meter module where an item
// measures. The scenarios follow native/*_test.go with the native provider
// replaced by the WASM one.
//
// What the ABI changes, and how the tests observe it:
//   - The region items (93, 95, 96) run through manual or pressure
//     compaction, whose ranges the plugin selects itself, as they did
//     before the ABI had compaction.region (minor 2); wasm_region_test.go
//     runs compaction.region itself.
//   - The plugin writes warnings without proposals to stderr; the runtime
//     logs them at WARN under the plugin's name (the logs buffer here).
//   - Compaction ids derive from the bracket's seq alone (the ABI carries
//     no session id): compact.CompactionID("", seq).
//   - The adapter discards proposals when the log moved during the call
//     (items 99, 104): nothing of that call lands.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/plugin"
	adapter "github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/plugins"
	"github.com/weirhost/weir/plugins/compaction-basic/compact"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
	"github.com/weirhost/weir/surface"
)

// syncBuffer collects the runtime's and the hosts' logs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// One runtime per test binary, compiling through the shared disk cache
// (WEIR_WAZERO_CACHE); each (module, configuration) pair is loaded once.
var (
	wasmOnce  sync.Once
	wasmRT    *plugin.Runtime
	wasmErr   error
	wasmLogs  = &syncBuffer{}
	wasmMu    sync.Mutex
	wasmLoads = map[string]*adapter.Plugin{}
)

func runtimeForTests(t *testing.T) *plugin.Runtime {
	t.Helper()
	wasmOnce.Do(func() {
		wasmRT, wasmErr = plugin.NewRuntime(context.Background(),
			plugin.WithLogger(hclog.New(&hclog.LoggerOptions{Output: wasmLogs, Level: hclog.Warn})), plugin.WithCacheDir(plugintest.CacheDir()))
	})
	require.NoError(t, wasmErr)
	return wasmRT
}

// loadFirstParty loads a first-party module with a configuration, at most
// once per test binary.
func loadFirstParty(t *testing.T, name string, role adapter.Role, config string) *adapter.Plugin {
	t.Helper()
	wasmMu.Lock()
	defer wasmMu.Unlock()
	key := name + "\x00" + config
	if p := wasmLoads[key]; p != nil {
		return p
	}
	p, err := adapter.Load(context.Background(), runtimeForTests(t), adapter.Spec{Name: name, Role: role,
		Wasm: plugins.FirstParty[name], Config: []byte(config)})
	require.NoError(t, err)
	wasmLoads[key] = p
	return p
}

// wasmCompaction is a fresh adapter (fresh per-session state) over the
// compaction-basic module loaded with config.
func wasmCompaction(t *testing.T, config string) *adapter.Compaction {
	c, err := loadFirstParty(t, plugins.CompactionBasic, adapter.RoleCompaction, config).Compaction()
	require.NoError(t, err)
	return c
}

// recModel plays scripted replies (default "ok") and records requests.
type recModel struct {
	replies []func(context.Context, *llm.Request) (*llm.Result, error)
	reqs    []*llm.Request
}

func (m *recModel) Stream(ctx context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Result, error) {
	m.reqs = append(m.reqs, req)
	if len(m.replies) == 0 {
		return say("ok")(ctx, req)
	}
	next := m.replies[0]
	m.replies = m.replies[1:]
	return next(ctx, req)
}

func (m *recModel) then(fns ...func(context.Context, *llm.Request) (*llm.Result, error)) {
	m.replies = append(m.replies, fns...)
}

func failWith(code string) func(context.Context, *llm.Request) (*llm.Result, error) {
	return func(context.Context, *llm.Request) (*llm.Result, error) {
		return &llm.Result{}, &llm.Error{Code: code, What: "scripted " + code}
	}
}

const shortSummary = "## Primary Request and Intent\n- keep going"

// scripted is a host.Summarizer (default: a short checkpoint).
type scripted struct {
	reqs  []host.SummaryRequest
	reply func(req host.SummaryRequest) (*host.SummaryResult, error)
}

func (s *scripted) Summarize(_ context.Context, req host.SummaryRequest) (*host.SummaryResult, error) {
	s.reqs = append(s.reqs, req)
	if s.reply != nil {
		return s.reply(req)
	}
	return &host.SummaryResult{Content: []surface.Block{surface.Text(shortSummary)}, FinishReason: "stop"}, nil
}

// memStore records what the session made durable.
type memStore struct{ events []surface.Event }

func (s *memStore) Append(evs []surface.Event) error {
	s.events = append(s.events, evs...)
	return nil
}

// priceMeter is a test meter: node i of the surface costs prices[i]
// (1 past the list). skew, when set, edits the measurement's nodes.
type priceMeter struct {
	s      *host.Session
	prices []int64
	skew   func([]host.NodeTokens) []host.NodeTokens
	err    error
}

func (m *priceMeter) ID() string                    { return "price-meter" }
func (m *priceMeter) Observe([]surface.Event) error { return nil }
func (m *priceMeter) Measure(context.Context, *surface.Header) (*host.Measurement, error) {
	if m.err != nil {
		return nil, m.err
	}
	out := &host.Measurement{LogRevision: m.s.Log().NextSeq(), Baseline: "estimated"}
	for i, seq := range m.s.Log().Nodes() {
		p := int64(1)
		if i < len(m.prices) {
			p = m.prices[i]
		}
		out.Nodes = append(out.Nodes, host.NodeTokens{Seq: seq, Tokens: p, HeuristicTokens: p})
		out.TotalTokens += p
	}
	out.SurfaceTokens = out.TotalTokens
	if m.skew != nil {
		out.Nodes = m.skew(out.Nodes)
	}
	return out, nil
}

type wh struct {
	t     *testing.T
	s     *host.Session
	a     *host.Agent
	model *recModel
	sum   *scripted
	store *memStore
	comp  *adapter.Compaction
	meter *priceMeter
	cfg   host.Config
	logAt int // wasmLogs offset when the harness started
}

// newWH runs compaction-basic (config as JSON) as a WASM provider in a real
// agent loop over an in-memory log. The route has a window of 1000 tokens
// and no completion cap; without a meter the plugin estimates.
func newWH(t *testing.T, sys, config string, mod func(h *wh)) *wh {
	h := &wh{t: t, model: &recModel{}, sum: &scripted{}, store: &memStore{}, logAt: len(wasmLogs.String())}
	h.comp = wasmCompaction(t, config)
	h.s = host.NewSession("sess", surface.New(surface.WithClock(func() int64 { return 1000 })), h.store, host.WithIDs(host.CounterIDs("m")))
	h.cfg = host.Config{Route: host.Route{Provider: "test", Model: "m1", ContextWindow: 1000}, Model: h.model, Prompt: prompt(sys),
		Compactors: []host.CompactionProvider{h.comp}, Summarizer: h.sum,
		Logger: hclog.New(&hclog.LoggerOptions{Output: wasmLogs, Level: hclog.Warn})}
	if mod != nil {
		mod(h)
	}
	var err error
	h.a, err = host.NewAgent(h.s, h.cfg)
	require.NoError(t, err)
	return h
}

// withPrices installs a priceMeter as the session's meter.
func withPrices(h *wh) {
	h.meter = &priceMeter{s: h.s}
	h.cfg.Meter = h.meter
}

// withWASMMeter installs the first-party token-meter module as the meter.
func withWASMMeter(h *wh) {
	m, err := loadFirstParty(h.t, plugins.TokenMeter, adapter.RoleTokenMeter, "").Meter(h.s)
	require.NoError(h.t, err)
	h.cfg.Meter = m
}

func (h *wh) turn(text string) *host.TurnResult {
	res, err := h.a.Run(context.Background(), h.a.UserMessage(text))
	require.NoError(h.t, err)
	return res
}

// logs is what the runtime and the host logged since the harness started.
func (h *wh) logs() string { return wasmLogs.String()[h.logAt:] }

func (h *wh) events(typ string) []surface.Event {
	var out []surface.Event
	for _, e := range h.s.Log().Events() {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func (h *wh) compactionEvents() []surface.Event {
	var out []surface.Event
	for _, e := range h.s.Log().Events() {
		if strings.HasPrefix(e.Type, "compaction/") || (e.Type == surface.TypeUserMessage && e.Op.Kind == surface.OpReplace) {
			out = append(out, e)
		}
	}
	return out
}

func typesOf(evs []surface.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

func dataOf(t *testing.T, e surface.Event) map[string]any {
	var m map[string]any
	require.NoError(t, json.Unmarshal(e.Data, &m))
	return m
}

func rolesOf(ms []*surface.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Role)
	}
	return out
}

func messagesJSON(t *testing.T, ms []*surface.Message) string {
	b, err := json.Marshal(ms)
	require.NoError(t, err)
	return string(b)
}

var bracket = []string{surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeUserMessage, surface.TypeCompactionEnd}

// --- 84-86: configuration ---

// Defaults, observed through the loop: window 100000 and no completion cap
// give threshold floor(min(100000*0.8, 100000-0-65536)) = 34464 (pressure
// compacts at the threshold) and a retained tail of floor(100000*0.16) =
// 16000 tokens; the priceMeter sets the totals, while the messages are
// long enough for the host's own check that a checkpoint shrinks them; summaries are capped
// at 65536 tokens; auto is on; one overflow recovery per sequence.
func TestI84_WASM_DefaultConfig(t *testing.T) {
	for _, cfg := range []string{"", "{}", "null"} {
		loadFirstParty(t, plugins.CompactionBasic, adapter.RoleCompaction, cfg)
	}
	run := func(prices []int64) *wh {
		h := newWH(t, "You are helpful.", "", func(h *wh) { h.cfg.Route.ContextWindow = 100_000; withPrices(h) })
		h.model.then(say(words(200)), say(words(200)))
		h.turn(words(200))
		h.turn(words(200))
		require.Empty(t, h.compactionEvents())
		h.meter.prices = prices
		h.turn("three")
		return h
	}
	// Below the threshold: nothing.
	h := run([]int64{1, 6155, 6154, 6154, 15999})
	require.Empty(t, h.compactionEvents())
	require.Empty(t, h.sum.reqs)

	// At the threshold: the tail keeps the last two nodes (15999 < 16000).
	h = run([]int64{1, 6155, 6155, 6154, 15999})
	nodes := h.s.Log().Nodes()
	evs := h.compactionEvents()
	require.Equal(t, bracket, typesOf(evs))
	cp := evs[2]
	require.Equal(t, float64(34464), dataOf(t, evs[3])["tokensBefore"])
	require.Len(t, h.sum.reqs, 1)
	require.Equal(t, int64(65536), h.sum.reqs[0].MaxTokens)
	require.Equal(t, float64(65536), dataOf(t, evs[1])["maxTokens"])
	start := cp.Op.Start
	require.Equal(t, nodes[0], h.s.Log().Nodes()[0])
	m, _ := h.s.Log().Message(cp.Op.End)
	require.Equal(t, surface.RoleAssistant, m.Role, "the range ends at turn 1's reply: turn 2's user message and reply are kept")
	require.Equal(t, []int64{evs[0].Seq, evs[1].Seq}, cp.Sources[:2])
	require.Equal(t, start, cp.Sources[2])

	// With exactly 16000 in the last node, only that node is kept.
	h = run([]int64{1, 6155, 6154, 6155, 16000})
	cp = h.compactionEvents()[2]
	m, _ = h.s.Log().Message(cp.Op.End)
	require.Equal(t, surface.RoleUser, m.Role, "the range ends at turn 2's user message")

	// Overflow: recovered once per sequence, even when the host allows more.
	h = newWH(t, "You are helpful.", "", func(h *wh) { h.cfg.Route.ContextWindow = 100_000; h.cfg.MaxOverflowRetries = 5 })
	h.turn(words(100))
	h.turn(words(100))
	h.model.then(failWith(llm.CodeContextOverflow), failWith(llm.CodeContextOverflow))
	res := h.turn("three")
	require.Equal(t, surface.EndError, res.Reason.Kind)
	require.Equal(t, llm.CodeContextOverflow, res.Reason.Error.Code)
	require.Equal(t, bracket, typesOf(h.compactionEvents()), "auto: one recovery, then the limit")
	require.Contains(t, h.logs(), "recovery attempt(s) already made")
}

// A bad configuration fails the load with an error naming the key.
func TestI85_WASM_BadConfigFailsLoad(t *testing.T) {
	for _, tc := range []struct{ name, doc string }{
		{"bogus", `{"thresholdRatio": 0.5, "bogus": 1}`},
		{"retainTokens", `{"retainRatio": 0.1, "retainTokens": 100}`},
		{"retainRatio", `{"thresholdRatio": 0.5, "retainRatio": 0.5}`},
		{"summarizationProvider", `{"summarizationProvider": "p"}`},
		{"summarizationModel", `{"summarizationModel": "m"}`},
		{"modelPolicies[1]", `{"modelPolicies": [{"provider": "p", "model": "m"}, {"provider": "p", "model": "m", "maxTokens": 5}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := adapter.Load(context.Background(), runtimeForTests(t), adapter.Spec{Name: plugins.CompactionBasic,
				Role: adapter.RoleCompaction, Wasm: plugins.FirstParty[plugins.CompactionBasic], Config: []byte(tc.doc)})
			require.ErrorContains(t, err, "configure: compaction config")
			require.ErrorContains(t, err, tc.name)
		})
	}
}

// The threshold is floor(min(window*ratio, window-reserved-headroom)),
// observed as the total at which pressure starts (at the threshold); an unusable target is
// reported once per provider/model and compacts nothing.
func TestI86_WASM_ResolveSpec(t *testing.T) {
	for _, tc := range []struct {
		ratio              string
		reserved, headroom int64
		threshold          int64
	}{
		{"0.5", 0, 0, 500},
		{"0.5", 300, 250, 450},
		{"0.75", 100, 150, 750},
		{"0.9", 200, 0, 800},
	} {
		t.Run(fmt.Sprintf("ratio=%s,r=%d,h=%d", tc.ratio, tc.reserved, tc.headroom), func(t *testing.T) {
			cfg := fmt.Sprintf(`{"thresholdRatio": %s, "headroomTokens": %d, "retainTokens": 50}`, tc.ratio, tc.headroom)
			for _, total := range []int64{tc.threshold - 1, tc.threshold} {
				h := newWH(t, "You are helpful.", cfg, func(h *wh) { h.cfg.Route.MaxTokens = tc.reserved; withPrices(h) })
				h.turn(words(200))
				// [S, U, A]: the user message carries the rest of the total.
				h.meter.prices = []int64{1, total - 101, 100}
				h.turn("two")
				if total < tc.threshold {
					require.Empty(t, h.compactionEvents(), "below the threshold")
				} else {
					require.Equal(t, bracket, typesOf(h.compactionEvents()), "at the threshold")
				}
			}
		})
	}
	for _, tc := range []struct {
		name, cfg string
		route     host.Route
		want      string
	}{
		{"no window", `{}`, host.Route{Provider: "test", Model: "m1"}, "no context window"},
		{"no message budget", `{"headroomTokens": 0}`, host.Route{Provider: "test", Model: "m1", ContextWindow: 1000, MaxTokens: 1000}, "no message budget"},
		{"no pressure budget", `{}`, host.Route{Provider: "test", Model: "m1", ContextWindow: 1000}, "no pressure budget: message budget 1000 minus headroomTokens 65536"},
		{"retain not below threshold", `{"headroomTokens": 0, "thresholdRatio": 0.5, "retainTokens": 500}`, host.Route{Provider: "test", Model: "m1", ContextWindow: 1000}, "retained tail 500 tokens is not below the threshold 500 tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newWH(t, "You are helpful.", tc.cfg, func(h *wh) { h.cfg.Route = tc.route })
			h.turn(words(600))
			h.turn(words(600))
			h.turn(words(600))
			require.Equal(t, 1, strings.Count(h.logs(), tc.want), h.logs())
			require.Empty(t, h.compactionEvents())
			// Another model is another target: reported once more.
			r := tc.route
			r.Model = "m2"
			h.a.SetRoute(r)
			h.turn("four")
			h.turn("five")
			require.Equal(t, 2, strings.Count(h.logs(), tc.want), h.logs())
		})
	}
}

// --- 87-92: pressure and selection ---

const pressureCfg = `{"headroomTokens": 0, "thresholdRatio": 0.5, "retainTokens": 50, "maxTokens": 200}`

func pressureScenario(t *testing.T, mod func(h *wh)) (*wh, []int64) {
	h := newWH(t, "You are helpful.", pressureCfg, mod)
	h.turn("hi")
	h.turn("hello")
	h.model.then(say(words(100)))
	h.turn(words(300))
	require.Empty(t, h.compactionEvents(), "below the threshold: nothing")
	require.Empty(t, h.sum.reqs)
	before := h.s.Log().Nodes()
	h.turn("next")
	return h, before
}

func TestI87_WASM_NoHeaderNoPressureCompaction(t *testing.T) {
	h := newWH(t, "You are helpful.", pressureCfg, nil)
	res := h.turn(words(600)) // far above the threshold, but no header yet
	require.Equal(t, surface.EndCompleted, res.Reason.Kind)
	require.Empty(t, h.compactionEvents())
	require.Empty(t, h.sum.reqs, "no summarization without a logged header")
	require.Len(t, h.model.reqs, 1)
}

func TestI88_WASM_PressureCompactsHeadRange(t *testing.T) {
	for _, meter := range []bool{false, true} {
		t.Run(fmt.Sprintf("meter=%v", meter), func(t *testing.T) {
			var mod func(h *wh)
			if meter {
				mod = withWASMMeter
			}
			h, before := pressureScenario(t, mod)
			evs := h.compactionEvents()
			require.Equal(t, bracket, typesOf(evs))
			cp := evs[2]
			require.Equal(t, surface.Replace(before[1], before[len(before)-2]), cp.Op, "everything but the head and the retained tail")
			nodes := h.s.Log().Nodes()
			require.Equal(t, []int64{before[0], cp.Seq, before[len(before)-1]}, nodes[:3])
			require.Len(t, nodes, 5, "head, checkpoint, kept reply, new user message, new reply")
			all := h.s.Log().Events()
			require.Equal(t, surface.TypeTurnStart, all[evs[0].Seq-1].Type)
			require.Equal(t, host.TypePluginState, all[evs[3].Seq+1].Type, "the plugin's changed state ends the result's batch")
			require.Equal(t, host.TypePluginCall, all[evs[3].Seq+2].Type, "the summarize call is recorded after the batch")
			require.Equal(t, surface.TypeStepStart, all[evs[3].Seq+3].Type)
			start, end := dataOf(t, evs[0]), dataOf(t, evs[3])
			require.Equal(t, float64(4), start["turn"])
			require.Less(t, end["tokensAfter"], float64(500))
			require.Greater(t, end["tokensBefore"], float64(500))
			require.Equal(t, compact.CompactionID("", evs[0].Seq), start["compactionId"])
			last := h.model.reqs[len(h.model.reqs)-1]
			require.Equal(t, []string{"system", "user", "assistant", "user"}, rolesOf(last.Messages))
			require.True(t, compact.IsCheckpoint(last.Messages[1]))
			h.turn("again")
			require.Len(t, h.compactionEvents(), 4, "below the threshold again")
		})
	}
}

func TestI89_WASM_SystemHeadStaysAndLeadsTheInput(t *testing.T) {
	h, before := pressureScenario(t, nil)
	cp := h.compactionEvents()[2]
	require.Equal(t, before[1], cp.Op.Start, "the range starts at the first node after the head")
	require.Equal(t, before[0], h.s.Log().Nodes()[0], "the head stays node 0")
	require.Len(t, h.sum.reqs, 1)
	req := h.sum.reqs[0]
	require.Equal(t, "system", req.Messages[0].Role)
	require.Equal(t, "You are helpful.", surface.TextOf(req.Messages[0].Content))
	sys := 0
	for _, m := range req.Messages {
		if m.Role == "system" {
			sys++
		}
	}
	require.Equal(t, 1, sys, "exactly one system message")
	require.Equal(t, compact.Instruction, surface.TextOf(req.Messages[len(req.Messages)-1].Content))
	require.Equal(t, int64(200), req.MaxTokens)
	require.Equal(t, "test", req.Provider)
}

// Above the threshold, but the retained tail starts right after the head:
// no range, no events, no summarization.
func TestI90_WASM_OnlySystemHeadBeforeTail(t *testing.T) {
	h := newWH(t, "You are helpful.", pressureCfg, withPrices)
	h.turn("one")
	h.meter.prices = []int64{1, 600, 10} // [S, U, A]: the tail needs U too
	h.turn("two")
	require.Empty(t, h.compactionEvents())
	require.Empty(t, h.sum.reqs)

	// With the newest node alone covering the tail, U is compacted.
	h = newWH(t, "You are helpful.", pressureCfg, withPrices)
	h.turn(words(200))
	before := h.s.Log().Nodes()
	h.meter.prices = []int64{1, 400, 600}
	h.turn("two")
	require.Equal(t, surface.Replace(before[1], before[1]), h.compactionEvents()[2].Op)
}

// A retention cut inside a tool pair moves head-ward (pressure, through the
// loop). Through the loop a pair always follows a user message, so the
// indivisible case (a surface that is one pair) is run against the module
// directly with a hand-built session.
func TestI91_WASM_CutMovesOutOfToolPairs(t *testing.T) {
	// Turn 2's first pre-step sees [S, U1, A1] (201 tokens, below 500);
	// its second sees [S, U1, A1, U2, A(call), T] (511): the 50-token tail
	// would start at T, inside the pair, so the cut moves before A(call).
	h := newWH(t, "You are helpful.", pressureCfg, func(h *wh) { withPrices(h); h.cfg.Tools = []host.Tool{echo} })
	h.model.then(say(words(200)))
	h.turn(words(200))
	base := h.s.Log().Nodes()
	h.model.then(callTool("c1"), say("done"))
	h.meter.prices = []int64{1, 100, 100, 100, 150, 60}
	h.turn(words(200))
	evs := h.compactionEvents()
	require.Equal(t, bracket, typesOf(evs))
	require.Equal(t, base[1], evs[2].Op.Start)
	m, _ := h.s.Log().Message(evs[2].Op.End)
	require.Equal(t, surface.RoleUser, m.Role, "the range ends before the assistant's tool call")
	require.Equal(t, words(200), surface.TextOf(m.Content))
	steps := h.events(surface.TypeStepStart)
	require.Less(t, steps[len(steps)-2].Seq, evs[0].Seq, "compacted in step 2's pre-step")

	// The module itself: a surface that is one indivisible pair yields no
	// proposals and no summarization, for pressure and for overflow.
	call, err := json.Marshal(surface.Message{ID: "a", Role: "assistant", Source: surface.Source{Kind: "model", Provider: "p", Model: "m"},
		Content: []surface.Block{surface.ToolCall("c1", "echo", `{}`)}})
	require.NoError(t, err)
	result, err := json.Marshal(surface.Message{ID: "t", Role: "user", Source: surface.Source{Kind: "tool", CallID: "c1"},
		Content: []surface.Block{surface.ToolResult("c1", false, surface.Text(words(400)))}})
	require.NoError(t, err)
	raw, err := runtimeForTests(t).Load(context.Background(), Name, plugins.FirstParty[plugins.CompactionBasic],
		plugin.WithConfig([]byte(`{"headroomTokens": 0}`)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Close(context.Background()) })
	for _, method := range []string{"prestep", "overflow"} {
		s := &plugintest.Session{
			Nodes: []abi.Node{{Seq: 3, Type: surface.TypeAssistantMessage, Role: "assistant"},
				{Seq: 4, Type: surface.TypeToolResult, Role: "user"}},
			Messages:    map[int64][]byte{3: call, 4: result},
			Gens:        abi.Generations{LogLength: 5},
			HeaderJSON:  []byte(`{"config":{"provider":"p","model":"m"}}`),
			Measurement: &abi.Measurement{TotalTokens: 600, Nodes: []abi.NodeTokens{{Seq: 3, Tokens: 100}, {Seq: 4, Tokens: 500}}},
			Summarizer: func(context.Context, *abi.SummarizeRequest) (*abi.SummarizeResult, error) {
				return nil, errors.New("must not summarize")
			},
		}
		req := &abi.CompactionRequest{Turn: 1, Route: abi.Route{Provider: "p", Model: "m"}, Limits: abi.Limits{ContextWindow: 200}}
		var res *abi.CompactionResult
		if method == "prestep" {
			res, err = raw.PreStep(context.Background(), s, req)
		} else {
			res, err = raw.Overflow(context.Background(), s, req)
		}
		require.NoError(t, err, method)
		require.Empty(t, res.Proposals, method)
		require.NotContains(t, s.Calls(), "Summarize", method)
	}
}

// A measurement whose nodes are not the surface's fails the call before
// any event is written; the host logs the provider's error.
func TestI92_WASM_MeasurementMustMatchSurface(t *testing.T) {
	for name, skew := range map[string]func([]host.NodeTokens) []host.NodeTokens{
		"missing node": func(ns []host.NodeTokens) []host.NodeTokens { return ns[:len(ns)-1] },
		"other seq":    func(ns []host.NodeTokens) []host.NodeTokens { ns[1].Seq = 999; return ns },
	} {
		t.Run(name, func(t *testing.T) {
			h := newWH(t, "You are helpful.", pressureCfg, withPrices)
			h.turn("one")
			h.meter.prices = []int64{1, 10, 600}
			h.meter.skew = skew
			res := h.turn("two")
			require.Equal(t, surface.EndCompleted, res.Reason.Kind, "a failing compaction provider does not end the turn")
			require.Empty(t, h.compactionEvents())
			require.Empty(t, h.sum.reqs)
			require.Contains(t, h.logs(), "does not match")
		})
	}
}

// --- 93-104: the transaction ---

// twoTurns runs two turns of 100 words each.
func twoTurns(t *testing.T, sys, config string, mod func(h *wh)) *wh {
	h := newWH(t, sys, config, mod)
	h.model.then(say(words(100)))
	h.turn(words(100))
	h.turn("second")
	return h
}

// The bracket is produced by manual compaction, whose range the plugin
// selects (head excluded, newest node kept); wasm_region_test.go covers
// compaction.region.
func TestI93_WASM_CompactionLands(t *testing.T) {
	h := twoTurns(t, "You are helpful.", `{"maxTokens": 300}`, nil)
	before := h.s.Log().Nodes()
	changed, err := h.a.CompactNow(context.Background())
	require.NoError(t, err)
	require.True(t, changed)
	evs := h.compactionEvents()
	require.Equal(t, bracket, typesOf(evs))
	for i := 1; i < 4; i++ {
		require.Equal(t, evs[0].Seq+int64(i), evs[i].Seq, "one contiguous batch")
	}
	cp := evs[2]
	require.Equal(t, surface.Replace(before[1], before[len(before)-2]), cp.Op)
	require.Equal(t, append([]int64{evs[0].Seq, evs[1].Seq}, before[1:len(before)-1]...), cp.Sources)
	msg, ok := h.s.Log().Message(cp.Seq)
	require.True(t, ok)
	require.True(t, compact.IsCheckpoint(msg))
	require.True(t, strings.HasPrefix(msg.Content[0].Text, compact.Preamble+"\n\n"))
	require.True(t, strings.HasSuffix(msg.Content[0].Text, compact.OpenTag))
	require.Equal(t, shortSummary, msg.Content[1].Text)
	require.Equal(t, compact.CloseTag, msg.Content[2].Text)
	id := dataOf(t, evs[0])["compactionId"]
	require.Equal(t, compact.CompactionID("", evs[0].Seq), id)
	sum := dataOf(t, evs[1])
	require.Equal(t, id, sum["compactionId"])
	require.Equal(t, shortSummary, sum["summary"])
	require.Equal(t, float64(300), sum["maxTokens"])
	require.Equal(t, id, dataOf(t, evs[3])["compactionId"])
	require.Equal(t, []int64{before[0], cp.Seq, before[len(before)-1]}, h.s.Log().Nodes())
	replay, err := surface.Restore(h.s.Log().Events())
	require.NoError(t, err)
	require.Equal(t, messagesJSON(t, h.s.Log().Messages()), messagesJSON(t, replay.Messages()))
	fold, err := surface.Fold(h.s.Log().Events())
	require.NoError(t, err)
	require.Len(t, fold.Replacements, 1)
	require.Equal(t, before[1:len(before)-1], fold.Replacements[0].Shadowed)
	require.Equal(t, len(h.s.Log().Events()), len(h.store.events))
}

func TestI94_WASM_SummarizerInput(t *testing.T) {
	h := twoTurns(t, "You are helpful.", `{"maxTokens": 300}`, func(h *wh) { h.cfg.Tools = []host.Tool{echo} })
	nodes := h.s.Log().Nodes()
	_, err := h.a.CompactNow(context.Background())
	require.NoError(t, err)
	require.Len(t, h.sum.reqs, 1)
	req := h.sum.reqs[0]
	var want []*surface.Message
	for _, seq := range nodes[:len(nodes)-1] {
		m, _ := h.s.Log().Message(seq)
		want = append(want, m)
	}
	require.Equal(t, messagesJSON(t, want), messagesJSON(t, req.Messages[:len(want)]), "the system message, then the span")
	require.Len(t, req.Messages, len(want)+1, "plus the instruction")
	require.Equal(t, compact.Instruction, surface.TextOf(req.Messages[len(want)].Content))
	require.Equal(t, h.s.Log().Header().Tools, req.Tools)
	require.NotEmpty(t, req.Tools)

	// An empty head contributes no message (and stays node 0).
	h = twoTurns(t, "", `{}`, nil)
	nodes = h.s.Log().Nodes()
	_, err = h.a.CompactNow(context.Background())
	require.NoError(t, err)
	req = h.sum.reqs[0]
	require.Equal(t, []string{"user", "assistant", "user", "user"}, rolesOf(req.Messages))
	require.Nil(t, req.Tools)
	require.Equal(t, nodes[0], h.s.Log().Nodes()[0])
}

// Nearest observable behaviour for item 95 (no region request in the ABI):
// the plugin never proposes a range over node 0, system or empty; and a
// batch that tries (edited on its way to the host) is rejected whole by
// the session, the surface unchanged.
func TestI95_WASM_HeadIsNeverCompacted(t *testing.T) {
	for _, sys := range []string{"You are helpful.", ""} {
		h := twoTurns(t, sys, `{}`, nil)
		before := h.s.Log().Nodes()
		changed, err := h.a.CompactNow(context.Background())
		require.NoError(t, err)
		require.True(t, changed)
		require.Equal(t, before[1], h.compactionEvents()[2].Op.Start)
		require.Equal(t, before[0], h.s.Log().Nodes()[0])
	}

	comp := wasmCompaction(t, `{}`)
	var edited compactorFunc = func(ctx context.Context, v *host.View, req host.CompactionRequest) ([]surface.Proposal, error) {
		ps, err := comp.Compact(ctx, v, req)
		if len(ps) == 4 {
			head := v.Nodes()[0].Seq
			ps[2].Op = surface.Replace(head, ps[2].Op.End)
			ps[2].Sources = append(ps[2].Sources, head)
		}
		return ps, err
	}
	h := twoTurns(t, "You are helpful.", `{}`, func(h *wh) { h.cfg.Compactors = []host.CompactionProvider{edited} })
	before := h.s.Log().Nodes()
	logLen := h.s.Log().NextSeq()
	_, err := h.a.CompactNow(context.Background())
	require.ErrorContains(t, err, "protected system prompt")
	require.Empty(t, h.compactionEvents(), "the host admits a batch all or nothing")
	require.Equal(t, before, h.s.Log().Nodes())
	require.Equal(t, logLen+2, h.s.Log().NextSeq(), "only the record of the summarize call and the failure record")
	call, _ := h.s.Log().Event(logLen)
	require.Equal(t, host.TypePluginCall, call.Type)
	failure, _ := h.s.Log().Event(logLen + 1)
	require.Equal(t, surface.TypePluginFailure, failure.Type)
	require.Contains(t, string(failure.Data), "protected system prompt")
}

// compactorFunc is a compaction provider made of a function that passes on
// (or edits) compaction-basic's proposals, so it proposes under its name:
// the host requires a checkpoint's source to name its proposer.
type compactorFunc func(ctx context.Context, v *host.View, req host.CompactionRequest) ([]surface.Proposal, error)

func (f compactorFunc) ID() string { return "compaction-basic" }
func (f compactorFunc) Compact(ctx context.Context, v *host.View, req host.CompactionRequest) ([]surface.Proposal, error) {
	return f(ctx, v, req)
}

// Nearest observable behaviour for item 96 (the plugin picks its own
// endpoints): its ranges never split a tool pair, and a failure to read
// the session fails the call before any event is written.
func TestI96_WASM_BalancedEndpointsAndNoEventOnFailure(t *testing.T) {
	h := newWH(t, "You are helpful.", `{}`, func(h *wh) { h.cfg.Tools = []host.Tool{echo} })
	h.model.then(callTool("c1"), say("done"))
	h.turn("use the tool")
	h.model.then(callTool("c2"))
	h.turn("again") // ends with [A(call), T, A("ok")]
	changed, err := h.a.CompactNow(context.Background())
	require.NoError(t, err)
	require.True(t, changed)
	cp := h.compactionEvents()[2]
	end, _ := h.s.Log().Event(cp.Op.End)
	require.Equal(t, surface.TypeToolResult, end.Type, "the range ends after the pair")

	h = newWH(t, "You are helpful.", pressureCfg, withPrices)
	h.turn("one")
	h.meter.err = errors.New("meter offline")
	logLen := h.s.Log().NextSeq()
	h.turn("two")
	require.Empty(t, h.compactionEvents())
	require.Empty(t, h.sum.reqs)
	require.Contains(t, h.logs(), "meter offline")
	require.Equal(t, surface.TypeTurnStart, h.s.Log().Events()[logLen].Type)
}

// The owner turn and the lock. The host asks for automatic compaction only
// inside a turn, and manual compaction inside an open turn is busy. The
// plugin cannot read the log (compaction-basic leaves the open-bracket
// check to the host): with an orphan compaction/start in the log the WASM
// provider still compacts; after a re-seed it proceeds as the spec says.
func TestI97_WASM_OwnerTurnAndLock(t *testing.T) {
	var got error
	comp := wasmCompaction(t, `{}`)
	h := newWH(t, "You are helpful.", `{}`, func(h *wh) {
		h.cfg.Compactors = []host.CompactionProvider{compactorFunc(func(ctx context.Context, v *host.View, req host.CompactionRequest) ([]surface.Proposal, error) {
			req.Reason = host.CompactManual
			_, got = comp.Compact(ctx, v, req)
			return nil, nil
		})}
	})
	h.turn("one")
	require.ErrorContains(t, got, "compaction is busy: turn 1 is open")

	// An orphan start before a later end-seed: compaction proceeds.
	h = twoTurns(t, "You are helpful.", `{}`, nil)
	_, err := h.s.Propose(host.Proposer{Kind: host.ByLoop},
		surface.Proposal{Type: surface.TypeCompactionStart, Data: []byte(`{"compactionId":"cmp-orphan","turn":null}`)})
	require.NoError(t, err)
	orphaned := h.s.Log().Events()
	// The plugin cannot see the orphan, but the host keeps the lock: the
	// bracket is refused as busy and nothing of it lands.
	changed, err := h.a.CompactNow(context.Background())
	require.ErrorContains(t, err, "a compaction is already in progress")
	require.False(t, changed)
	require.Equal(t, []string{surface.TypeCompactionStart}, typesOf(h.compactionEvents()))

	// Re-seeded, the orphan lies before the new end-seed: a dead lifecycle,
	// and compaction proceeds as the spec requires.
	seeded, err := surface.Seed(orphaned)
	require.NoError(t, err)
	s2 := host.NewSession("sess", seeded, nil, host.WithIDs(host.CounterIDs("r")))
	cfg := h.cfg
	cfg.Compactors = []host.CompactionProvider{wasmCompaction(t, `{}`)}
	a2, err := host.NewAgent(s2, cfg)
	require.NoError(t, err)
	changed, err = a2.CompactNow(context.Background())
	require.NoError(t, err)
	require.True(t, changed)
	var types []string
	for _, e := range seeded.Events() {
		if strings.HasPrefix(e.Type, "compaction/") {
			types = append(types, e.Type)
		}
	}
	require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeCompactionEnd}, types)
}

func TestI98_WASM_SummarizerFailureLeavesSurface(t *testing.T) {
	h := newWH(t, "You are helpful.", `{}`, nil)
	h.turn(words(100))
	h.turn(words(100))
	before := h.s.Log().Nodes()
	h.sum.reply = func(host.SummaryRequest) (*host.SummaryResult, error) {
		return nil, &llm.Error{Code: llm.CodeServer, What: "provider down"}
	}
	changed, err := h.a.CompactNow(context.Background())
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, before, h.s.Log().Nodes())
	evs := h.compactionEvents()
	require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionEnd}, typesOf(evs))
	require.Contains(t, dataOf(t, evs[1])["error"], "summarization failed")
	require.Contains(t, dataOf(t, evs[1])["error"], "provider down")
}

// A summarizer that panics with a non-error value: the panic unwinds
// through the host function, the sandbox reports the call as trapped with
// the value's text and replaces the instance, so no bracket is written at
// all (nearest observable to "compaction/end.error holds its text"): the
// value's text is in the error, the log and surface are unchanged, and the
// next compaction works.
func TestI98_WASM_SummarizerPanicLeavesSurface(t *testing.T) {
	h := newWH(t, "You are helpful.", `{}`, nil)
	h.turn(words(100))
	h.turn(words(100))
	before := h.s.Log().Nodes()
	logLen := h.s.Log().NextSeq()
	h.sum.reply = func(host.SummaryRequest) (*host.SummaryResult, error) { panic("quota gone") }
	changed, err := h.a.CompactNow(context.Background())
	require.ErrorContains(t, err, "quota gone")
	require.False(t, changed)
	require.Equal(t, before, h.s.Log().Nodes())
	require.Empty(t, h.compactionEvents())
	for _, e := range h.s.Log().Events()[logLen:] {
		require.Equal(t, surface.TypePluginFailure, e.Type, "at most the failure record")
	}
	h.sum.reply = nil
	changed, err = h.a.CompactNow(context.Background())
	require.NoError(t, err)
	require.True(t, changed)
}

// Appends during summarization. The WASM adapter answers the plugin's
// reads at the call's start and refuses proposals made against a log that
// moved during the call (the plugin cannot see the move), so both a
// log-only and a surface append make the call's proposals stale: nothing
// of the bracket lands, the appended event stays, and the next pre-step
// compacts.
func TestI99_WASM_AppendsDuringSummarization(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    surface.Proposal
	}{
		{"log-only", surface.Proposal{Type: "test/note", Data: []byte(`{"n":1}`), Ignorable: true}},
		{"surface", surface.Proposal{Type: surface.TypeUserMessage,
			Data: []byte(`{"id":"late","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"late"}]}`), Op: surface.Append}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			once := false
			h, before := pressureScenario(t, func(x *wh) {
				x.sum.reply = func(host.SummaryRequest) (*host.SummaryResult, error) {
					if !once {
						once = true
						_, err := x.s.Propose(host.Proposer{Kind: host.ByLoop}, tc.p)
						require.NoError(x.t, err)
					}
					return &host.SummaryResult{Content: []surface.Block{surface.Text(shortSummary)}, FinishReason: "stop"}, nil
				}
			})
			require.True(t, once)
			require.Empty(t, h.compactionEvents(), "the stale bracket did not land")
			require.Contains(t, h.logs(), "during the call; its proposals are stale")
			require.Equal(t, before, h.s.Log().Nodes()[:len(before)], "nothing was replaced")
			require.True(t, slices.ContainsFunc(h.events(tc.p.Type), func(e surface.Event) bool { return string(e.Data) == string(tc.p.Data) }),
				"the appended event stays")
			h.turn("after")
			require.Equal(t, bracket, typesOf(h.compactionEvents()), "the next pre-step compacts")
		})
	}
}

func TestI100_WASM_SummaryNotSmaller(t *testing.T) {
	h := newWH(t, "You are helpful.", `{}`, nil)
	h.turn(words(100))
	h.turn(words(100))
	before := h.s.Log().Nodes()
	h.sum.reply = func(host.SummaryRequest) (*host.SummaryResult, error) {
		return &host.SummaryResult{Content: []surface.Block{surface.Text(words(300))}, FinishReason: "stop"}, nil
	}
	changed, err := h.a.CompactNow(context.Background())
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, before, h.s.Log().Nodes())
	evs := h.compactionEvents()
	require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionEnd}, typesOf(evs))
	require.Contains(t, dataOf(t, evs[1])["error"], "summary is not smaller than the span it replaces")
}

func TestI101_WASM_StillAboveThreshold(t *testing.T) {
	h := newWH(t, "You are helpful.", `{"headroomTokens": 0, "thresholdRatio": 0.5, "retainTokens": 50, "compactionRetries": 0}`, nil)
	h.model.then(say(words(150)), say(words(350)))
	h.turn("hi")
	h.turn("hey")
	require.Empty(t, h.compactionEvents())
	h.sum.reply = func(host.SummaryRequest) (*host.SummaryResult, error) {
		return &host.SummaryResult{Content: []surface.Block{surface.Text(words(60))}, FinishReason: "stop"}, nil
	}
	h.turn("third")
	evs := h.compactionEvents()
	require.Equal(t, bracket, typesOf(evs))
	require.Contains(t, dataOf(t, evs[3])["warning"], "still above threshold after 1 attempt")
	require.Contains(t, h.logs(), "still above threshold after 1 attempt")
	require.Len(t, h.sum.reqs, 1, "compactionRetries 0: one pass")
}

// --- 102: overflow recovery ---

const noPressure = `{"headroomTokens": 0, "thresholdRatio": 1}`

func overflowWH(t *testing.T, config string, mod func(h *wh)) *wh {
	h := newWH(t, "You are helpful.", config, mod)
	h.turn(words(100))
	h.turn(words(100))
	return h
}

func endCode(t *testing.T, res *host.TurnResult) string {
	t.Helper()
	require.Equal(t, surface.EndError, res.Reason.Kind)
	return res.Reason.Error.Code
}

func TestI102_WASM_OverflowRecoveryRetries(t *testing.T) {
	h := overflowWH(t, noPressure, nil)
	before := h.s.Log().Nodes()
	gen := h.s.Log().ReplaceGeneration()
	h.model.then(failWith(llm.CodeContextOverflow), say("recovered"))
	res := h.turn("three")
	require.Equal(t, surface.EndCompleted, res.Reason.Kind)
	evs := h.compactionEvents()
	require.Equal(t, bracket, typesOf(evs))
	steps := h.events(surface.TypeStepStart)
	require.Len(t, steps, 3)
	require.Less(t, steps[2].Seq, evs[0].Seq)
	attempt := h.events(surface.TypeAssistantAttempt)
	require.Len(t, attempt, 1)
	require.Less(t, attempt[0].Seq, evs[0].Seq)
	require.Equal(t, float64(3), dataOf(t, evs[0])["turn"])
	require.Greater(t, h.s.Log().ReplaceGeneration(), gen, "retried because the surface advanced")
	cp := evs[2]
	require.Equal(t, surface.Replace(before[1], before[len(before)-1]), cp.Op)
	retry := h.model.reqs[len(h.model.reqs)-1]
	require.Equal(t, []string{"system", "user", "user"}, rolesOf(retry.Messages))
	require.True(t, compact.IsCheckpoint(retry.Messages[1]))
	require.Equal(t, "three", surface.TextOf(retry.Messages[2].Content))
	st, err := compact.DecodeState(h.comp.State("sess"))
	require.NoError(t, err)
	require.Equal(t, int64(1), st.OverflowCount)
}

func TestI102_WASM_OverflowDisabledOrNotOverflow(t *testing.T) {
	h := overflowWH(t, `{"headroomTokens": 0, "thresholdRatio": 1, "maxOverflowRetries": 0}`, nil)
	h.model.then(failWith(llm.CodeContextOverflow))
	require.Equal(t, llm.CodeContextOverflow, endCode(t, h.turn("three")))
	require.Empty(t, h.compactionEvents())
	require.Empty(t, h.sum.reqs)

	h = overflowWH(t, `{"auto": false, "headroomTokens": 0, "thresholdRatio": 0.01, "retainTokens": 0}`, nil)
	h.model.then(failWith(llm.CodeContextOverflow))
	require.Equal(t, llm.CodeContextOverflow, endCode(t, h.turn("three")))
	require.Empty(t, h.compactionEvents())

	h = overflowWH(t, noPressure, nil)
	h.model.then(failWith(llm.CodeBadRequest))
	require.Equal(t, llm.CodeBadRequest, endCode(t, h.turn("three")))
	require.Empty(t, h.compactionEvents())
	require.Empty(t, h.sum.reqs)
}

func TestI102_WASM_OverflowCancelledDelegates(t *testing.T) {
	h := overflowWH(t, noPressure, nil)
	ctx, cancel := context.WithCancelCause(context.Background())
	h.model.then(func(context.Context, *llm.Request) (*llm.Result, error) {
		cancel(errors.New("user pressed stop"))
		return &llm.Result{}, &llm.Error{Code: llm.CodeContextOverflow, What: "too long"}
	})
	res, err := h.a.Run(ctx, h.a.UserMessage("three"))
	require.NoError(t, err)
	require.Equal(t, surface.EndAborted, res.Reason.Kind)
	require.Empty(t, h.compactionEvents())
	require.Empty(t, h.sum.reqs)
}

func TestI102_WASM_OverflowCountPerSequence(t *testing.T) {
	h := overflowWH(t, noPressure, func(h *wh) { h.cfg.MaxOverflowRetries = 5 })
	h.model.then(failWith(llm.CodeContextOverflow), failWith(llm.CodeContextOverflow))
	require.Equal(t, llm.CodeContextOverflow, endCode(t, h.turn("three")))
	require.Len(t, h.compactionEvents(), 4, "one recovery, then the limit")
	require.Len(t, h.sum.reqs, 1)
	require.Contains(t, h.logs(), "recovery attempt(s) already made")
	h.model.then(failWith(llm.CodeContextOverflow), say("fine"))
	h.turn(words(50))
	require.Len(t, h.compactionEvents(), 8, "a new turn starts a new sequence")
}

// A failed summarization closes a failed bracket without advancing the
// surface, so the host does not retry (compaction-basic does not prune).
func TestI102_WASM_OverflowSummaryFailureNoRetry(t *testing.T) {
	h := overflowWH(t, noPressure, nil)
	h.sum.reply = func(host.SummaryRequest) (*host.SummaryResult, error) { return nil, errors.New("summarizer offline") }
	h.model.then(failWith(llm.CodeContextOverflow))
	calls := len(h.model.reqs)
	require.Equal(t, llm.CodeContextOverflow, endCode(t, h.turn("three")))
	evs := h.compactionEvents()
	require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionEnd}, typesOf(evs))
	require.Contains(t, dataOf(t, evs[1])["error"], "summarizer offline")
	require.Equal(t, calls+1, len(h.model.reqs), "no retry")
}

func TestI103_WASM_SummarizerResultRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *host.SummaryResult
		want string
	}{
		{"max tokens", &host.SummaryResult{Content: []surface.Block{surface.Text("## Primary")}, FinishReason: "max-tokens"}, "MAX_TOKENS"},
		{"length", &host.SummaryResult{Content: []surface.Block{surface.Text("## Primary")}, FinishReason: "length"}, "MAX_TOKENS"},
		{"image", &host.SummaryResult{Content: []surface.Block{surface.Text("x"), {Type: "image", Unknown: []byte(`{"type":"image","data":"AAAA"}`)}}, FinishReason: "stop"}, `unsupported content (a "image" block)`},
		{"no text", &host.SummaryResult{Content: []surface.Block{{Type: surface.BlockReasoning, Text: "thinking"}}, FinishReason: "stop"}, "no text"},
		{"blank text", &host.SummaryResult{Content: []surface.Block{surface.Text(" \n\t ")}, FinishReason: "stop"}, "no text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := twoTurns(t, "You are helpful.", `{}`, nil)
			before := h.s.Log().Nodes()
			h.sum.reply = func(host.SummaryRequest) (*host.SummaryResult, error) { return tc.res, nil }
			changed, err := h.a.CompactNow(context.Background())
			require.NoError(t, err)
			require.False(t, changed)
			require.Equal(t, before, h.s.Log().Nodes())
			evs := h.compactionEvents()
			require.Equal(t, []string{surface.TypeCompactionStart, surface.TypeCompactionEnd}, typesOf(evs))
			require.Contains(t, dataOf(t, evs[1])["error"], tc.want)
		})
	}
}

func TestI104_WASM_ManualCompaction(t *testing.T) {
	h := newWH(t, "You are helpful.", `{}`, nil)
	changed, err := h.a.CompactNow(context.Background())
	require.NoError(t, err)
	require.False(t, changed)
	require.Empty(t, h.s.Log().Events(), "nothing to compact: no events")

	h.turn(words(100))
	h.turn(words(100))
	before := h.s.Log().Nodes()
	flushed := len(h.store.events)
	changed, err = h.a.CompactNow(context.Background())
	require.NoError(t, err)
	require.True(t, changed)
	evs := h.compactionEvents()
	require.Equal(t, bracket, typesOf(evs))
	start := dataOf(t, evs[0])
	require.Contains(t, start, "turn")
	require.Nil(t, start["turn"], "manual brackets have no owner")
	require.Nil(t, dataOf(t, evs[3])["turn"])
	require.Equal(t, surface.TypeTurnEnd, h.s.Log().Events()[evs[0].Seq-1].Type, "between turns")
	require.Equal(t, surface.Replace(before[1], before[len(before)-2]), evs[2].Op)
	require.Len(t, h.store.events, flushed+5, "flushed to the store, with the record of the summarize call")
	for range 4 {
		h.turn(words(100))
		_, err = h.a.CompactNow(context.Background())
		require.NoError(t, err)
	}
	require.Len(t, h.events(surface.TypeCompactionEnd), 5, "manual compaction is not bounded by the automatic limit")
}

// A span replaced while the summarizer runs: the adapter refuses the
// call's proposals as stale (the plugin cannot see the move), so only the
// concurrent rewrite lands.
func TestI104_WASM_ManualSpanChanged(t *testing.T) {
	h := newWH(t, "You are helpful.", `{}`, nil)
	h.turn(words(100))
	h.turn(words(100))
	first := h.s.Log().Nodes()[1]
	h.sum.reply = func(host.SummaryRequest) (*host.SummaryResult, error) {
		_, err := h.s.Propose(host.Proposer{Kind: host.ByLoop}, surface.Proposal{Type: surface.TypeUserMessage,
			Data: []byte(`{"id":"x","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"rewritten"}]}`),
			Op:   surface.Replace(first, first), Sources: []int64{first}})
		require.NoError(t, err)
		return &host.SummaryResult{Content: []surface.Block{surface.Text(shortSummary)}, FinishReason: "stop"}, nil
	}
	_, err := h.a.CompactNow(context.Background())
	require.ErrorContains(t, err, "its proposals are stale")
	evs := h.compactionEvents()
	require.Equal(t, []string{surface.TypeUserMessage}, typesOf(evs))
	m, _ := h.s.Log().Message(h.s.Log().Nodes()[1])
	require.Equal(t, "rewritten", surface.TextOf(m.Content))
	require.False(t, slices.Contains(typesOf(h.s.Log().Events()), surface.TypeCompactionStart))
}
