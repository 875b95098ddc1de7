package provider_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/host/provider"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

// toolModel asks for the tool once per turn and then answers: its replies
// depend only on the turn's user message, never on what the plugins did to
// the rest of the request.
type toolModel struct{}

func (toolModel) Stream(_ context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Result, error) {
	last := req.Messages[len(req.Messages)-1]
	if msg := surface.TextOf(last.Content); last.Role == surface.RoleUser && strings.HasPrefix(msg, "message ") {
		id := "call-" + strings.ReplaceAll(msg, " ", "-")
		return &llm.Result{Content: []surface.Block{surface.ToolCall(id, "bulk", `{"n":1}`)}, FinishReason: llm.FinishToolCalls,
			Usage: &surface.Usage{Input: 10, Output: 5}}, nil
	}
	return text("done"), nil
}

// bulkTool returns a large output, the kind the pruner rewrites.
var bulkTool = &host.FuncTool{ToolName: "bulk", Description: "A large output.",
	Fn: func(_ context.Context, args string) (string, error) {
		return strings.Repeat("output line "+args+"\n", 300), nil
	}}

// surfaceMeter prices a session's surface at a token per four bytes of
// node data: a meter whose answer is a function of the log alone.
type surfaceMeter struct{ s *host.Session }

func (surfaceMeter) ID() string                    { return "surface-meter" }
func (surfaceMeter) Observe([]surface.Event) error { return nil }

func (m surfaceMeter) Measure(context.Context, *surface.Header) (*host.Measurement, error) {
	l := m.s.Log()
	r := &host.Measurement{LogRevision: l.NextSeq(), Baseline: "estimated"}
	for _, seq := range l.Nodes() {
		e, _ := l.Event(seq)
		n := int64(len(e.Data) / 4)
		r.Nodes = append(r.Nodes, host.NodeTokens{Seq: seq, Tokens: n, HeuristicTokens: n})
		r.SurfaceTokens += n
	}
	r.TotalTokens, r.SurfaceDeltaTokens, r.Breakdown.User = r.SurfaceTokens, r.SurfaceTokens, r.SurfaceTokens
	return r, nil
}

// digestSummarizer summarizes by counting: its summary depends on the
// request only.
type digestSummarizer struct{}

func (digestSummarizer) Summarize(_ context.Context, req host.SummaryRequest) (*host.SummaryResult, error) {
	return &host.SummaryResult{Content: []surface.Block{surface.Text(fmt.Sprintf("summary of %d messages", len(req.Messages)))},
		FinishReason: "stop", Provider: req.Provider, Model: req.Model}, nil
}

// stateKind is one plugin set of the same-log test: the plugins a process
// loads, and what the test reads of them after the run.
type stateKind struct {
	name   string
	plugin string // the compaction plugin's name
	module string // its module, as load takes it
	route  host.Route
	// load loads the set's plugins for one process.
	load func(t *testing.T) *stateSet
}

type stateSet struct {
	cfg   func(s *host.Session, c *host.Config)
	comp  *provider.Compaction // the compaction plugin whose state is compared
	meter *provider.Meter      // the WASM meter, when the set has one (set by cfg)
}

// stateRun is what a run leaves: the log, the state blob each call of
// the compaction plugin was handed, with the seq of the call, and the
// state its next call would carry.
type stateRun struct {
	log    string
	states []string
	final  []byte
	prunes int
	starts int
	events int // plugin/state events
	bytes  int // and the bytes of their JSON lines
	meter  []byte
}

// runProcesses runs turns, one process per group of bounds (bounds are
// the turn counts at which a process stops), each process reopening the
// session from its file and, when fresh, loading its plugins again; with
// fresh false one set of plugins serves every process, as in one
// process whose session was reopened. cuts, when given, kills process i
// cuts[i] events before its end: the file loses its last cuts[i] lines,
// as if the process died before they were written.
func runProcesses(t *testing.T, k stateKind, turns int, bounds []int, fresh bool, cuts ...int) stateRun {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "session.jsonl")
	var run stateRun
	var set *stateSet
	turn := 0
	for proc, end := range append(bounds, turns) {
		if fresh || proc == 0 {
			set = k.load(t)
		}
		s, err := host.OpenFile(path, host.WithClock(func() int64 { return 1_750_000_000_000 }),
			host.WithIDs(host.CounterIDs(fmt.Sprintf("p%d-", proc))))
		require.NoError(t, err)
		rec := &recordingCompactor{Compaction: set.comp, id: s.ID()}
		c := host.Config{Route: k.route, Model: toolModel{}, Prompt: &host.SectionPrompt{}, Summarizer: digestSummarizer{},
			Tools: []host.Tool{bulkTool}}
		set.cfg(s, &c)
		for i, cp := range c.Compactors {
			if cp == host.CompactionProvider(set.comp) {
				c.Compactors[i] = rec
			}
		}
		a, err := host.NewAgent(s, c)
		require.NoError(t, err)
		for ; turn < end; turn++ {
			res, err := a.Run(ctx, a.UserMessage(fmt.Sprintf("message %d", turn)))
			require.NoError(t, err)
			require.Equal(t, surface.EndCompleted, res.Reason.Kind, "turn %d: %+v", turn, res.Reason.Error)
		}
		run.states = append(run.states, rec.states...)
		if set.meter != nil {
			run.meter = set.meter.State()
		}
		if proc == len(bounds) {
			run.final = set.comp.State(s.ID())
			for _, e := range s.Log().Events() {
				run.log += string(surface.AppendEvent(nil, &e)) + "\n"
				switch e.Type {
				case surface.TypeCompactionPrune:
					run.prunes++
				case surface.TypeCompactionStart:
					run.starts++
				case host.TypePluginState:
					run.events++
					run.bytes += len(surface.AppendEvent(nil, &e))
				case surface.TypePluginFailure:
					if len(cuts) == 0 || !strings.Contains(string(e.Data), "was never closed before the session stopped") {
						t.Errorf("a plugin failed: %s", e.Data) // a kill may cut a compaction's batch in two
					}
				}
			}
		}
		require.NoError(t, s.Close())
		if proc < len(cuts) && cuts[proc] > 0 {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			lines := strings.SplitAfter(string(b), "\n")
			lines = lines[:len(lines)-1-cuts[proc]] // the last is empty
			require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644))
		}
	}
	return run
}

// recordingCompactor records the state each call was handed: what the
// adapter holds once the call returned, before the host commits its
// result.
type recordingCompactor struct {
	*provider.Compaction
	id     string
	states []string
}

func (r *recordingCompactor) Compact(ctx context.Context, v *host.View, req host.CompactionRequest) ([]surface.Proposal, error) {
	ps, err := r.Compaction.Compact(ctx, v, req)
	r.states = append(r.states, fmt.Sprintf("after seq %d: %s", v.NextSeq(), r.Compaction.State(r.id)))
	return ps, err
}

// TestStateSameLog shows that a session's plugins behave the same whether
// its turns run in one process, in one process per turn (each loading its
// plugins afresh and reopening the session from its file, as `host run`
// does), in processes stopped at random turns, or in processes killed
// inside a turn: the compaction plugin's
// state lives in the log, so every process hands the plugin the state a
// single process would have, and the token meter's state is a fold of the
// log.
func TestStateSameLog(t *testing.T) {
	counters := provider.WithTokenizers(map[string]tokenizer.Counter{"test-tokenizer": tokenizer.Heuristic})
	kinds := []stateKind{{
		name:   "pruner",
		plugin: "pruner",
		module: "../../examples/pruner",
		route:  host.Route{Provider: "test", Model: "m1", ContextWindow: 12_000},
		load: func(t *testing.T) *stateSet {
			pr := load(t, "../../examples/pruner", "pruner", provider.RoleCompaction,
				`{"minBytes": 2000, "keepRecent": 1, "triggerRatio": 0.3}`, provider.Limits{})
			prompt := load(t, "benign", "benign-prompt", provider.RoleSystemPrompt, "", provider.Limits{})
			comp, err := pr.Compaction()
			require.NoError(t, err)
			return &stateSet{comp: comp, cfg: func(s *host.Session, c *host.Config) {
				sp, err := prompt.SystemPrompt(s)
				require.NoError(t, err)
				c.Prompt, c.Meter, c.Compactors = sp, surfaceMeter{s}, []host.CompactionProvider{comp}
			}}
		},
	}, {
		name:   "checkpoint with a WASM meter",
		plugin: "checkpoint",
		module: "checkpoint",
		route:  host.Route{Provider: "test", Model: "m1", ContextWindow: 100_000},
		load: func(t *testing.T) *stateSet {
			cp := load(t, "checkpoint", "checkpoint", provider.RoleCompaction, `{"maxNodes":6}`, provider.Limits{})
			mp := load(t, "benign", "benign-meter", provider.RoleTokenMeter, "", provider.Limits{}, counters)
			comp, err := cp.Compaction()
			require.NoError(t, err)
			set := &stateSet{comp: comp}
			set.cfg = func(s *host.Session, c *host.Config) {
				m, err := mp.Meter(s)
				require.NoError(t, err)
				set.meter = m
				c.Meter, c.Compactors = m, []host.CompactionProvider{comp}
			}
			return set
		},
	}}
	const turns = 10
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			one := runProcesses(t, k, turns, nil, true)
			require.Positive(t, one.prunes+one.starts, "the plugin compacted in one process")
			t.Logf("one process: %d prune passes, %d compactions, %d plugin/state events (%d bytes) in a log of %d bytes",
				one.prunes, one.starts, one.events, one.bytes, len(one.log))

			every := make([]int, turns-1)
			for i := range every {
				every[i] = i + 1
			}
			perTurn := runProcesses(t, k, turns, every, true)
			perTurnOne := runProcesses(t, k, turns, every, false)
			require.Equal(t, perTurnOne.log, perTurn.log, "a process per turn writes the log one set of plugins writes")
			require.Equal(t, perTurnOne.states, perTurn.states, "and hands the plugin the same states")
			require.Equal(t, one.prunes, perTurn.prunes, "as many prune passes as in one process")
			require.Equal(t, one.starts, perTurn.starts, "as many compactions as in one process")
			require.Equal(t, surfaceOf(t, one.log), surfaceOf(t, perTurn.log), "the same history as in one process")

			// The log alone gives the state: keyed by plugin and module,
			// so another version of the module starts from nothing.
			l := decodeLog(t, perTurn.log)
			wasm, ok := modules[k.module]
			if !ok {
				wasm = plugintest.Build(t, k.module)
			}
			require.NotEmpty(t, perTurn.final)
			require.Equal(t, perTurn.final, provider.StateOf(l, k.plugin, sha256.Sum256(wasm)))
			require.Nil(t, provider.StateOf(l, k.plugin, sha256.Sum256(append(wasm, 0))), "a new module version")
			require.Nil(t, provider.StateOf(l, "other", sha256.Sum256(wasm)), "another plugin")

			rng := rand.New(rand.NewPCG(24, uint64(len(k.name))))
			for range 2 {
				var bounds []int
				for b := 1; b < turns; b++ {
					if rng.IntN(3) == 0 {
						bounds = append(bounds, b)
					}
				}
				killed := runProcesses(t, k, turns, bounds, true)
				kept := runProcesses(t, k, turns, bounds, false)
				require.Equal(t, kept.log, killed.log, "processes stopped after turns %v", bounds)
				require.Equal(t, kept.states, killed.states, "processes stopped after turns %v", bounds)
				require.Equal(t, one.prunes, killed.prunes)
				require.Equal(t, one.starts, killed.starts)

				// Killed inside a turn: the file keeps a random prefix of
				// the process's events and the next process resumes there.
				cuts := make([]int, len(bounds))
				for i := range cuts {
					cuts[i] = 1 + rng.IntN(12)
				}
				killed = runProcesses(t, k, turns, bounds, true, cuts...)
				kept = runProcesses(t, k, turns, bounds, false, cuts...)
				require.Equal(t, kept.log, killed.log, "processes killed %v events before the ends of turns %v", cuts, bounds)
				require.Equal(t, kept.states, killed.states, "processes killed %v events before the ends of turns %v", cuts, bounds)
			}
		})
	}
}

// surfaceOf is the model-visible history of a log: the role and text of
// each surface node, without the seqs and ids a reopening changes.
func surfaceOf(t *testing.T, log string) []string {
	l := decodeLog(t, log)
	var out []string
	for _, seq := range l.Nodes() {
		m, ok := l.Message(seq)
		require.True(t, ok)
		out = append(out, string(m.Role)+": "+surface.TextOf(m.Content))
	}
	return out
}

// decodeLog reads a log written as JSON lines.
func decodeLog(t *testing.T, log string) *surface.Log {
	l := surface.New()
	for line := range strings.SplitSeq(strings.TrimSpace(log), "\n") {
		e, err := surface.DecodeEvent([]byte(line))
		require.NoError(t, err)
		require.NoError(t, l.Admit(e))
	}
	return l
}

// TestStateRules shows the refusals of the state path: a plugin cannot
// write plugin/state events itself, and a state past the limit is the
// plugin's failure, naming the rule, with the previous state kept.
func TestStateRules(t *testing.T) {
	_, err := provider.ConvertProposals([]abi.Proposal{{Type: host.TypePluginState, Data: []byte(`{}`), Ignorable: true}})
	require.ErrorContains(t, err, "malformed output: proposal 0 has type plugin/state, which only the host writes (rule plugin-state)")

	cp := load(t, "checkpoint", "checkpoint-small", provider.RoleCompaction, `{"maxNodes":6}`, provider.Limits{}, provider.WithStateLimit(0))
	comp, err := cp.Compaction()
	require.NoError(t, err)
	l := newLoop(t, func(s *host.Session, c *host.Config) { c.Compactors = []host.CompactionProvider{comp} })
	for i := range 6 {
		l.turn(fmt.Sprintf("message %d", i))
	}
	fs := l.failures()
	require.NotEmpty(t, fs)
	require.Contains(t, fs[0].Error, `plugin "checkpoint-small": call compaction.prestep: state of 1 bytes exceeds the 0-byte limit (rule plugin-state)`)
	require.Empty(t, l.events(host.TypePluginState), "nothing of a refused result is recorded")
	require.Empty(t, l.events(surface.TypeCompactionStart))
	require.Empty(t, comp.State(l.s.ID()))
}
