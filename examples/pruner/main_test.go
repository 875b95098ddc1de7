package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
	"github.com/weirhost/weir/surface"
)

// The tests drive the plugin under the real sandbox (plugintest builds it
// once per source change) with a session kept in a surface.Log, and admit
// its proposals through the log, which applies the same rules as the host:
// the tool-result rewrite rule, coverage, contiguity.

// session is a session log and the host view the plugin gets of it.
type session struct {
	t     *testing.T
	p     *plugin.Plugin
	log   *surface.Log
	state []byte
	total int64 // the measured request size the host reports
	// explicitStep makes pre-step requests carry the step about to start.
	explicitStep bool
	ids          int
}

func newSession(t *testing.T, config string) *session {
	p := plugintest.Load(t, ".", plugin.WithConfig([]byte(config)))
	return &session{t: t, p: p, log: surface.New(surface.WithClock(func() int64 { return 1 }))}
}

func (s *session) add(typ string, data any, op surface.Op, sources ...int64) int64 {
	s.t.Helper()
	b, err := json.Marshal(data)
	require.NoError(s.t, err)
	p := surface.Proposal{Type: typ, Data: b, Op: op}
	if len(sources) > 0 {
		p.Sources = sources
	}
	e, err := s.log.Append(p)
	require.NoError(s.t, err)
	return e.Seq
}

func (s *session) id() string { s.ids++; return fmt.Sprint("m", s.ids) }

type stepMessage struct {
	Turn    int64           `json:"turn"`
	Step    int64           `json:"step"`
	Message json.RawMessage `json:"message"`
}

// turn runs the steps of one turn; each step gets its pre-step call
// unless skip lists it.
func (s *session) turn(n int64, steps []func(turn, step int64), skip ...int64) {
	s.add(surface.TypeTurnStart, map[string]int64{"turn": n}, surface.Op{})
	for i, body := range steps {
		step := int64(i + 1)
		if !contains(skip, step) {
			s.preStep(n, step)
		}
		s.add(surface.TypeStepStart, map[string]int64{"turn": n, "step": step}, surface.Op{})
		body(n, step)
		s.add(surface.TypeStepEnd, map[string]int64{"turn": n, "step": step}, surface.Op{})
	}
	s.add(surface.TypeTurnEnd, map[string]any{"turn": n, "reason": map[string]string{"kind": "completed"}}, surface.Op{})
}

func contains(xs []int64, x int64) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// preStep calls the plugin before step of turn and admits its proposals.
func (s *session) preStep(turn, step int64) []surface.Event {
	req := &abi.CompactionRequest{Turn: turn, Limits: abi.Limits{ContextWindow: 10000}, State: s.state}
	if s.explicitStep {
		req.Step = step
	}
	res, err := s.p.PreStep(context.Background(), host{s}, req)
	require.NoError(s.t, err)
	return s.admit(res, true)
}

func (s *session) admit(res *abi.CompactionResult, apply bool) []surface.Event {
	if res.HasState {
		s.state = res.State
	}
	if !apply || len(res.Proposals) == 0 {
		return nil
	}
	ps := make([]surface.Proposal, len(res.Proposals))
	for i, p := range res.Proposals {
		ps[i] = surface.Proposal{Type: p.Type, Data: p.Data}
		if p.Intent.Kind == abi.IntentReplace {
			ps[i].Op = surface.Replace(p.Intent.StartSeq, p.Intent.EndSeq)
		}
		if p.HasSourceEventSeqs {
			ps[i].Sources = p.SourceEventSeqs
		}
	}
	evs, err := s.log.AppendBatch(ps)
	require.NoError(s.t, err, "the log admits the plugin's proposals")
	return evs
}

func (s *session) user(turn, step int64, text string) {
	s.add(surface.TypeUserMessage, map[string]any{"id": s.id(), "role": "user", "source": map[string]string{"kind": "user"},
		"content": []map[string]string{{"type": "text", "text": text}}}, surface.Append)
}

func (s *session) reply(turn, step int64, text string, calls ...string) {
	content := []map[string]string{}
	if text != "" {
		content = append(content, map[string]string{"type": "text", "text": text})
	}
	for _, c := range calls {
		content = append(content, map[string]string{"type": "tool-call", "id": c, "name": "read", "arguments": `{"path":"x"}`})
	}
	msg, _ := json.Marshal(map[string]any{"id": s.id(), "role": "assistant", "source": map[string]string{"kind": "model", "provider": "p", "model": "m"}, "content": content})
	s.add(surface.TypeAssistantMessage, stepMessage{turn, step, msg}, surface.Append)
}

// result records a tool call and its result of size bytes.
func (s *session) result(turn, step int64, call string, size int, isError bool) int64 {
	cs := s.add(surface.TypeToolCall, map[string]any{"turn": turn, "step": step, "callId": call, "name": "read", "arguments": `{"path":"x"}`}, surface.Op{})
	msg, _ := json.Marshal(map[string]any{"id": s.id(), "role": "user", "source": map[string]string{"kind": "tool", "callId": call},
		"content": []map[string]any{{"type": "tool-result", "toolCallId": call, "isError": isError,
			"content": []map[string]string{{"type": "text", "text": strings.Repeat("line of output\n", size/15)}}}}})
	data := map[string]any{"turn": turn, "step": step, "message": json.RawMessage(msg)}
	if isError {
		data["error"] = map[string]string{"name": "read", "code": "TOOL_ERROR", "reason": "no such file"}
	}
	return s.add(surface.TypeToolResult, data, surface.Append, cs)
}

// history is two turns: turn 1 calls c1 (large) and c2 (small) in step 1,
// c3 (large) and c5 (large, failing) in step 2 and answers in step 3;
// turn 2 calls c4 (large) and answers. It returns the results' seqs.
func (s *session) history(skip ...int64) map[string]int64 {
	r := map[string]int64{}
	s.turn(1, []func(int64, int64){
		func(t, st int64) {
			s.user(t, st, "read the files")
			s.reply(t, st, "", "c1", "c2")
			r["c1"] = s.result(t, st, "c1", 6000, false)
			r["c2"] = s.result(t, st, "c2", 100, false)
		},
		func(t, st int64) {
			s.reply(t, st, "and two more", "c3", "c5")
			r["c3"] = s.result(t, st, "c3", 6000, false)
			r["c5"] = s.result(t, st, "c5", 6000, true)
		},
		func(t, st int64) { s.reply(t, st, "done") },
	}, skip...)
	s.turn(2, []func(int64, int64){
		func(t, st int64) {
			s.user(t, st, "one more")
			s.reply(t, st, "", "c4")
			r["c4"] = s.result(t, st, "c4", 6000, false)
		},
		func(t, st int64) { s.reply(t, st, "ok") },
	})
	return r
}

func (s *session) textOf(seq int64) string {
	m, ok := s.log.Message(seq)
	require.True(s.t, ok)
	return surface.TextOf(m.Content[0].Content)
}

const testConfig = `{"minBytes": 1000, "keepRecent": 1, "triggerRatio": 0.5, "notice": "[pruned]"}`

func TestPrunesOldLargeResults(t *testing.T) {
	for _, explicit := range []bool{false, true} {
		t.Run(fmt.Sprintf("explicitStep=%v", explicit), func(t *testing.T) {
			s := newSession(t, testConfig)
			s.explicitStep = explicit
			r := s.history()
			s.add(surface.TypeTurnStart, map[string]int64{"turn": 3}, surface.Op{})
			require.Empty(t, s.preStep(3, 1), "below the trigger: nothing")

			s.total = 6000
			before := s.log.Nodes()
			evs := s.preStep(3, 1)
			require.Len(t, evs, 4, "c1 and c3: large, attributed, not the newest; c5 failed; c2 small; c4 newest")
			for i, seq := range []int64{r["c1"], r["c3"]} {
				prune, rw := evs[2*i], evs[2*i+1]
				require.Equal(t, surface.TypeCompactionPrune, prune.Type)
				var note map[string]any
				require.NoError(t, json.Unmarshal(prune.Data, &note))
				require.Equal(t, map[string]any{"start": float64(seq), "end": float64(seq)}, note["shadowedRange"])
				require.Equal(t, []any{float64(seq)}, note["shadowedSeqs"])
				orig, _ := s.log.Message(seq)
				require.Equal(t, float64(estimate(orig)), note["shadowedTokenCount"], "the heuristic price of the replaced node")
				require.Equal(t, surface.Replace(seq, seq), rw.Op)
				require.Equal(t, []int64{prune.Seq, seq}, rw.Sources)
				require.Equal(t, "[pruned]", s.textOf(rw.Seq))
			}
			after := s.log.Nodes()
			require.Len(t, after, len(before), "rewrites replace one node each")
			require.Equal(t, strings.Repeat("line of output\n", 400), s.textOf(r["c4"]), "the newest result stays")

			// Nothing left to prune; the rewritten results are small.
			require.Empty(t, s.preStep(3, 2))
			var st state
			require.NoError(t, json.Unmarshal(s.state, &st))
			require.Equal(t, origin{1, 1}, st.Origins[evs[1].Seq], "a rewrite keeps its origin")
			require.Equal(t, origin{1, 2}, st.Origins[evs[3].Seq])
			require.Equal(t, origin{2, 1}, st.Origins[r["c4"]])
		})
	}
}

// estimate is the fixed estimator's price of a one-block tool-result
// message holding text blocks.
func estimate(m *surface.Message) int64 {
	var n int64
	for _, b := range m.Content[0].Content {
		n += (int64(len(b.Text))+3)/4 + 4
	}
	return n + 4 + 4
}

// A step that went by without a pre-step call leaves its results, and the
// ones of the steps after it in that turn, unattributed: never rewritten.
func TestUnseenStepIsNotGuessed(t *testing.T) {
	s := newSession(t, `{"minBytes": 1000, "keepRecent": 0, "triggerRatio": 0.5}`)
	r := s.history(2) // no pre-step call before turn 1's step 2
	s.add(surface.TypeTurnStart, map[string]int64{"turn": 3}, surface.Op{})
	s.total = 6000
	evs := s.preStep(3, 1)
	require.Len(t, evs, 2, "only c4, from turn 2")
	require.Equal(t, []int64{evs[0].Seq, r["c4"]}, evs[1].Sources)
}

// A refused batch is not proposed again.
func TestRefusedRewritesAreDropped(t *testing.T) {
	s := newSession(t, testConfig)
	r := s.history()
	s.add(surface.TypeTurnStart, map[string]int64{"turn": 3}, surface.Op{})
	s.total = 6000
	res, err := s.p.PreStep(context.Background(), host{s}, &abi.CompactionRequest{Turn: 3, Limits: abi.Limits{ContextWindow: 10000}, State: s.state})
	require.NoError(t, err)
	require.Len(t, res.Proposals, 4)
	s.admit(res, false) // the host refused the batch
	require.Empty(t, s.preStep(3, 1))
	var st state
	require.NoError(t, json.Unmarshal(s.state, &st))
	require.Equal(t, map[int64]origin{r["c2"]: {1, 1}, r["c4"]: {2, 1}}, st.Origins, "c1 and c3 are given up")
}

func TestManualPrunesWithoutPressure(t *testing.T) {
	s := newSession(t, testConfig)
	s.history()
	res, err := s.p.Manual(context.Background(), host{s}, &abi.CompactionRequest{State: s.state})
	require.NoError(t, err)
	require.Len(t, s.admit(res, true), 4)
}

func TestConfigErrors(t *testing.T) {
	wasm := plugintest.Build(t, ".")
	for cfg, want := range map[string]string{
		`{"minBytes": 0}`:       "minBytes must be at least 1, got 0",
		`{"triggerRatio": 1.5}`: "triggerRatio must be in (0,1], got 1.5",
		`{"keep": 1}`:           `json: unknown field "keep"`,
		`{"notice": ""}`:        "notice must not be empty",
		`{"maxPerCall": 600}`:   "maxPerCall must be 1 to 512, got 600",
	} {
		_, err := plugintest.Runtime(t).Load(context.Background(), "pruner", wasm, plugin.WithConfig([]byte(cfg)))
		require.ErrorContains(t, err, "configure: pruner config: "+want, cfg)
	}
}

// host answers the plugin's imports from the session log. Messages are
// written as the log writes them (surface types marshal with the JSON v2
// package).
type host struct{ s *session }

func (h host) SurfaceNodes(context.Context) ([]abi.Node, error) {
	var out []abi.Node
	for _, n := range h.s.log.Surface() {
		m, _ := h.s.log.Message(n.Seq)
		b, err := jsonv2.Marshal(m)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		out = append(out, abi.Node{Seq: n.Seq, Type: n.Type, Role: n.Role, Size: int64(len(b)), ContentHash: sum[:]})
	}
	return out, nil
}

func (h host) Message(_ context.Context, seq int64) ([]byte, error) {
	m, ok := h.s.log.Message(seq)
	if !ok {
		return nil, plugin.ErrNotFound
	}
	return jsonv2.Marshal(m)
}

func (h host) Generations(context.Context) (abi.Generations, error) {
	return abi.Generations{Replace: int64(h.s.log.ReplaceGeneration()), Content: int64(h.s.log.ContentGeneration()),
		LogLength: h.s.log.NextSeq()}, nil
}

func (h host) Header(context.Context) ([]byte, error) { return nil, plugin.ErrNotFound }

func (h host) Measure(context.Context) (*abi.Measurement, error) {
	return &abi.Measurement{TotalTokens: h.s.total}, nil
}

func (h host) Summarize(context.Context, *abi.SummarizeRequest) (*abi.SummarizeResult, error) {
	return nil, plugin.ErrNotGranted
}

func (h host) CountTokens(context.Context, string, []byte) (int, error) {
	return 0, plugin.ErrNotGranted
}
