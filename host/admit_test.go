package host

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// admitFixture is a session inside turn 1, step 1: system prompt (seq 2),
// user (3), assistant with call c1 (4), tool/call (5), its result (6) and
// an assistant answer (7). Every message is long enough for a checkpoint
// to shrink it.
func admitFixture(t *testing.T) *Session {
	t.Helper()
	s := NewSession("s", surface.New(surface.WithClock(func() int64 { return 1 })), nil)
	long := strings.Repeat("lorem ipsum ", 40)
	loop := func(typ, data string, op surface.Op) {
		t.Helper()
		_, err := s.Propose(Proposer{Kind: ByLoop}, surface.Proposal{Type: typ, Data: []byte(data), Op: op})
		require.NoError(t, err)
	}
	loop(surface.TypeTurnStart, `{"turn":1}`, surface.Op{})
	loop(surface.TypeStepStart, `{"turn":1,"step":1}`, surface.Op{})
	loop(surface.TypeSystemMessage, `{"turn":1,"step":1,"message":{"id":"sys","role":"system","source":{"kind":"plugin","plugin":"system-prompt"},"content":[{"type":"text","text":"be brief"}]}}`, surface.Append)
	loop(surface.TypeUserMessage, `{"id":"u1","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"`+long+`"}]}`, surface.Append)
	loop(surface.TypeAssistantMessage, `{"turn":1,"step":1,"message":{"id":"a1","role":"assistant","source":{"kind":"model","provider":"p","model":"m"},"content":[{"type":"text","text":"`+long+`"},{"type":"tool-call","id":"c1","name":"read","arguments":"{}"}]},"stream":[]}`, surface.Append)
	loop(surface.TypeToolCall, `{"turn":1,"step":1,"callId":"c1","name":"read","arguments":"{}"}`, surface.Op{})
	loop(surface.TypeToolResult, `{"turn":1,"step":1,"message":{"id":"r1","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","isError":false,"content":[{"type":"text","text":"`+long+`"}]}]}}`, surface.Append)
	loop(surface.TypeAssistantMessage, `{"turn":1,"step":1,"message":{"id":"a2","role":"assistant","source":{"kind":"model","provider":"p","model":"m"},"content":[{"type":"text","text":"`+long+`"}]},"stream":[]}`, surface.Append)
	require.Equal(t, []int64{2, 3, 4, 6, 7}, s.Log().Nodes())
	return s
}

// batch builds a compaction batch at seq 8 over start..end: start,
// summary, checkpoint, end; edit may change any member before encoding.
type batch struct {
	start, summary, end map[string]any
	cpSource            map[string]any
	from, to            int64
	sources             []int64
	big                 string // appended to the checkpoint's text
	id                  string // the checkpoint's message id; "" is "cp"
}

func newBatch(from, to int64, shadowed ...int64) *batch {
	return &batch{
		start:    map[string]any{"compactionId": "c-8", "turn": 1},
		summary:  map[string]any{"compactionId": "c-8", "summary": "s", "shadowedSeqs": shadowed, "shadowedRange": map[string]any{"start": shadowed[0], "end": shadowed[len(shadowed)-1]}, "shadowedTokenCount": 100},
		end:      map[string]any{"compactionId": "c-8", "turn": 1, "tokensBefore": 500, "tokensAfter": 20},
		cpSource: map[string]any{"kind": "plugin", "plugin": "cb", "compactionId": "c-8"},
		from:     from, to: to, sources: append([]int64{8, 9}, shadowed...),
	}
}

func data(v any) []byte {
	b, err := surface.Data(v)
	if err != nil {
		panic(err)
	}
	return b
}

func (b *batch) checkpoint() surface.Proposal {
	id := b.id
	if id == "" {
		id = "cp"
	}
	return surface.Proposal{Type: surface.TypeUserMessage, Op: surface.Replace(b.from, b.to), Sources: b.sources,
		Data: data(map[string]any{"id": id, "role": "user", "source": b.cpSource, "content": []any{map[string]any{"type": "text", "text": "summary" + b.big}}})}
}

func (b *batch) proposals() []surface.Proposal {
	return []surface.Proposal{
		{Type: surface.TypeCompactionStart, Data: data(b.start)},
		{Type: surface.TypeCompactionSummary, Data: data(b.summary)},
		b.checkpoint(),
		{Type: surface.TypeCompactionEnd, Data: data(b.end)},
	}
}

func TestAdmissionOfProviderProposals(t *testing.T) {
	cb := Proposer{Kind: ByCompaction, ID: "cb", Events: []string{"cb/note"}}
	with := func(edit func(b *batch)) func() []surface.Proposal {
		return func() []surface.Proposal {
			b := newBatch(3, 7, 3, 4, 6, 7)
			edit(b)
			return b.proposals()
		}
	}
	note := func(p surface.Proposal) func() []surface.Proposal {
		return func() []surface.Proposal { return []surface.Proposal{p} }
	}
	cases := []struct {
		name    string
		by      Proposer
		propose func() []surface.Proposal
		rule    surface.Rule // "": admitted
		frag    string
	}{
		{"a well-formed bracket", cb, with(func(*batch) {}), "", ""},
		{"a bracket failing without a summary", cb, func() []surface.Proposal {
			return []surface.Proposal{{Type: surface.TypeCompactionStart, Data: []byte(`{"compactionId":"c-8","turn":1}`)},
				{Type: surface.TypeCompactionEnd, Data: []byte(`{"compactionId":"c-8","error":"summarizer failed"}`)}}
		}, "", ""},
		{"a declared ignorable event", cb, note(surface.Proposal{Type: "cb/note", Data: []byte(`{"n":1}`), Ignorable: true}), "", ""},

		// Provenance.
		{"checkpoint speaking as the user", cb, with(func(b *batch) { b.cpSource = map[string]any{"kind": "user"} }),
			RuleProvenance, `claims source {kind: "user", plugin: ""}`},
		{"checkpoint speaking as another plugin", cb, with(func(b *batch) { b.cpSource["plugin"] = "system-prompt" }),
			RuleProvenance, `must carry source {kind: "plugin", plugin: "cb"}`},
		{"prompt speaking as another plugin", Proposer{Kind: ByPrompt, ID: "sp"}, note(surface.Proposal{Type: surface.TypeSystemMessage,
			Op: surface.Replace(2, 2), Sources: []int64{2},
			Data: []byte(`{"turn":1,"step":1,"message":{"id":"sys2","role":"system","source":{"kind":"plugin","plugin":"system-prompt"},"content":[{"type":"text","text":"x"}]}}`)}),
			RuleProvenance, `a message proposed by prompt provider "sp"`},

		// Schemas.
		{"empty compaction id", cb, with(func(b *batch) { b.start["compactionId"] = "" }), RuleCompactionSchema, "compactionId must be a non-empty printable string"},
		{"control character in the id", cb, with(func(b *batch) { b.start["compactionId"] = "c\x01" }), RuleCompactionSchema, "compactionId must be"},
		{"a bracket naming another turn", cb, with(func(b *batch) { b.start["turn"] = 2 }), RuleCompactionSchema, "turn is 2, but the open turn is 1"},
		{"a null bracket inside a turn", cb, with(func(b *batch) { b.start["turn"] = nil }), RuleCompactionSchema, "turn is null, but turn 1 is open"},
		{"an end naming another turn", cb, with(func(b *batch) { b.end["turn"] = 3 }), RuleCompactionSchema, "compaction/end names turn 3, its compaction/start turn 1"},
		{"shadowed seq that does not exist yet", cb, with(func(b *batch) { b.summary["shadowedSeqs"] = []int64{3, 40} }), RuleCompactionSchema, "shadowedSeqs[1] is 40, not the seq of an earlier event"},
		{"negative shadowed seq", cb, with(func(b *batch) { b.summary["shadowedSeqs"] = []int64{-1, 7} }), RuleCompactionSchema, "shadowedSeqs[0] is -1"},
		{"no shadowed seqs", cb, with(func(b *batch) { b.summary["shadowedSeqs"] = []int64{} }), RuleCompactionSchema, "shadowedSeqs must be a non-empty array"},
		{"missing shadowed seqs", cb, with(func(b *batch) { delete(b.summary, "shadowedSeqs") }), RuleCompactionSchema, "shadowedSeqs is missing"},
		{"a range that is not the seqs'", cb, with(func(b *batch) { b.summary["shadowedRange"] = map[string]any{"start": 3, "end": 6} }), RuleCompactionSchema, "does not match the first and last of shadowedSeqs (3, 7)"},
		{"negative token count", cb, with(func(b *batch) { b.summary["shadowedTokenCount"] = -5 }), RuleCompactionSchema, "shadowedTokenCount is -5, not an integer from 0 to 1099511627776"},
		{"huge token count", cb, with(func(b *batch) { b.summary["shadowedTokenCount"] = int64(1) << 62 }), RuleCompactionSchema, "shadowedTokenCount is 4611686018427387904"},
		{"fractional token count", cb, with(func(b *batch) { b.summary["shadowedTokenCount"] = 1.5 }), RuleCompactionSchema, "shadowedTokenCount is 1.5"},
		{"negative usage", cb, with(func(b *batch) { b.summary["usage"] = map[string]any{"input": -1} }), RuleCompactionSchema, "usage.input is -1"},
		{"huge tokens after", cb, with(func(b *batch) { b.end["tokensAfter"] = int64(1) << 50 }), RuleCompactionSchema, "tokensAfter is 1125899906842624"},
		{"a summary that is not a string", cb, with(func(b *batch) { b.summary["summary"] = 5 }), RuleCompactionSchema, "summary must be a string"},

		// Bracket order.
		{"summary ids differ", cb, with(func(b *batch) { b.summary["compactionId"] = "c-other" }), RuleCompactionBracket, `compaction/summary names compaction "c-other" inside the bracket of compaction "c-8"`},
		{"end ids differ", cb, with(func(b *batch) { b.end["compactionId"] = "c-other" }), RuleCompactionBracket, `compaction/end names compaction "c-other"`},
		{"checkpoint names another compaction", cb, with(func(b *batch) { b.cpSource["compactionId"] = "c-other" }), RuleCompactionBracket, `the checkpoint names compaction "c-other"`},
		{"summary without start", cb, note(surface.Proposal{Type: surface.TypeCompactionSummary, Data: []byte(`{"compactionId":"c-8","shadowedSeqs":[3]}`)}),
			RuleCompactionBracket, "has no compaction/start before it"},
		{"end without start", cb, note(surface.Proposal{Type: surface.TypeCompactionEnd, Data: []byte(`{"compactionId":"c-8"}`)}),
			RuleCompactionBracket, "has no compaction/start before it"},
		{"a start never closed", cb, note(surface.Proposal{Type: surface.TypeCompactionStart, Data: []byte(`{"compactionId":"c-8","turn":1}`)}),
			RuleCompactionBracket, "is opened and never closed"},
		{"a checkpoint outside any bracket", cb, func() []surface.Proposal {
			b := newBatch(3, 7, 3, 4, 6, 7)
			b.sources = []int64{3, 4, 6, 7}
			return []surface.Proposal{b.checkpoint()}
		},
			RuleCompactionBracket, "a checkpoint must sit inside a compaction bracket"},
		{"a checkpoint before the summary", cb, func() []surface.Proposal {
			b := newBatch(3, 7, 3, 4, 6, 7)
			b.sources = []int64{8, 3, 4, 6, 7}
			ps := b.proposals()
			ps[1], ps[2] = ps[2], ps[1]
			return ps
		}, RuleCompactionBracket, `the checkpoint of compaction "c-8" comes before its compaction/summary`},
		{"two summaries", cb, func() []surface.Proposal {
			ps := newBatch(3, 7, 3, 4, 6, 7).proposals()
			return append(ps[:2:2], append([]surface.Proposal{ps[1]}, ps[2:]...)...)
		}, RuleCompactionBracket, `compaction "c-8" already has a summary at seq 9`},
		{"a success without a summary", cb, func() []surface.Proposal {
			return []surface.Proposal{{Type: surface.TypeCompactionStart, Data: []byte(`{"compactionId":"c-8","turn":1}`)},
				{Type: surface.TypeCompactionEnd, Data: []byte(`{"compactionId":"c-8","turn":1}`)}}
		}, RuleCompactionBracket, `compaction "c-8" ends successfully without a compaction/summary`},
		{"a failure after the checkpoint", cb, with(func(b *batch) { b.end["error"] = "late" }), RuleCompactionBracket, `compaction "c-8" ends with an error after its checkpoint at seq 10`},

		// Declared event types.
		{"an undeclared type", cb, note(surface.Proposal{Type: "cb/other", Data: []byte(`{}`), Ignorable: true}),
			RuleUndeclaredEvent, `"cb/other" is not a type of the compaction kind, and the plugin did not declare it`},
		{"an unknown compaction/* type", cb, note(surface.Proposal{Type: "compaction/other", Data: []byte(`{}`), Ignorable: true}),
			RuleUndeclaredEvent, `"compaction/other" is not a type of the compaction kind`},
		{"a declared type, not ignorable", cb, note(surface.Proposal{Type: "cb/note", Data: []byte(`{}`)}),
			RuleDeclaredNotIgnorable, "must be proposed with ignorable: true"},
		{"a declared type on the surface", cb, note(surface.Proposal{Type: "cb/note", Data: []byte(`{}`), Ignorable: true, Op: surface.Append}),
			RuleDeclaredSurfaceOp, "must not carry surfaceOp or sourceEventSeqs"},
		{"a declared type citing sources", cb, note(surface.Proposal{Type: "cb/note", Data: []byte(`{}`), Ignorable: true, Sources: []int64{3}}),
			RuleDeclaredSurfaceOp, "must not carry surfaceOp or sourceEventSeqs"},
		{"a declared event too large", cb, note(surface.Proposal{Type: "cb/note", Data: []byte(`{"x":"` + strings.Repeat("a", MaxDeclaredEventBytes) + `"}`), Ignorable: true}),
			RuleDeclaredTooLarge, "more than 65536"},

		// Wire rules.
		{"a checkpoint orphaning a tool result", cb, func() []surface.Proposal { return newBatch(4, 4, 4).proposals() },
			surface.RuleToolResultOrphaned, `the tool result at seq 6 answers call "c1", but no assistant message precedes it`},
		{"a checkpoint leaving a call without its result", cb, func() []surface.Proposal { return newBatch(6, 6, 6).proposals() },
			surface.RuleToolCallUnanswered, `the assistant message at seq 4 has tool call(s) "c1" without a result, and seq 10 follows it`},
		{"a checkpoint before a call keeps the pair together", cb, func() []surface.Proposal { return newBatch(3, 3, 3).proposals() }, "", ""},
		{"a checkpoint over a call and its result", cb, func() []surface.Proposal { return newBatch(4, 6, 4, 6).proposals() }, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := admitFixture(t)
			before := s.Log().Events()
			nodes := s.Log().Nodes()
			evs, err := s.Propose(c.by, c.propose()...)
			if c.rule == "" {
				require.NoError(t, err)
				require.NotEmpty(t, evs)
				require.Nil(t, s.Log().CheckWire())
				return
			}
			require.Error(t, err)
			require.Nil(t, evs)
			require.Equal(t, c.rule, surface.RuleOf(err), err.Error())
			require.ErrorContains(t, err, fmt.Sprintf("%s: proposal rejected: ", c.by))
			require.ErrorContains(t, err, string(c.rule)+": ")
			require.ErrorContains(t, err, c.frag)
			require.Equal(t, before, s.Log().Events(), "the log is unchanged")
			require.Equal(t, nodes, s.Log().Nodes())
			_, err = surface.Restore(s.Log().Events())
			require.NoError(t, err, "the log replays")
			// The session goes on: the loop appends.
			_, err = s.Propose(Proposer{Kind: ByLoop}, surface.Proposal{Type: surface.TypeStepEnd, Data: []byte(`{"turn":1,"step":1}`)})
			require.NoError(t, err)
		})
	}
}

func TestCheckpointOfFindsTheBracket(t *testing.T) {
	s := admitFixture(t)
	_, err := s.Propose(Proposer{Kind: ByCompaction, ID: "cb"}, newBatch(3, 7, 3, 4, 6, 7).proposals()...)
	require.NoError(t, err)
	id, plugin, ok := CheckpointOf(s.Log(), 10)
	require.True(t, ok)
	require.Equal(t, "c-8", id)
	require.Equal(t, "cb", plugin)
	for _, seq := range []int64{3, 8, 9, 11, 99} {
		_, _, ok := CheckpointOf(s.Log(), seq)
		require.False(t, ok, "seq %d is no checkpoint", seq)
	}
}

func TestValidateMeasurement(t *testing.T) {
	good := func() *Measurement {
		return &Measurement{LogRevision: 9, Baseline: "estimated", BaselineTokens: 34, TotalTokens: 34, SurfaceTokens: 30,
			Nodes:     []NodeTokens{{Seq: 2, Tokens: 10, HeuristicTokens: 9}, {Seq: 3, Tokens: 20, HeuristicTokens: 21}},
			Breakdown: Breakdown{System: 10, User: 20, Tools: 4}, Tokenizer: "deepseek-v3"}
	}
	est := func(v int64) *int64 { return &v }
	cases := []struct {
		name string
		edit func(m *Measurement)
		frag string // "": valid
	}{
		{"an honest measurement", func(*Measurement) {}, ""},
		{"no nodes, coarse breakdown", func(m *Measurement) { m.Nodes = nil; m.Breakdown = Breakdown{User: 7} }, ""},
		{"negative node", func(m *Measurement) { m.Nodes[0].Tokens = -1 }, "node 0 (seq 2) is priced -1 tokens"},
		{"negative heuristic", func(m *Measurement) { m.Nodes[1].HeuristicTokens = -1 }, "node 1 (seq 3) is priced 20 tokens (heuristic -1)"},
		{"node near 2^63", func(m *Measurement) { m.Nodes[0].Tokens = 1<<63 - 1 }, "is priced 9223372036854775807 tokens"},
		{"nodes whose sum overflows", func(m *Measurement) {
			m.Nodes = []NodeTokens{{Seq: 1, Tokens: MaxCount}, {Seq: 2, Tokens: MaxCount}}
		}, "the nodes' tokens add up to more than 1099511627776"},
		{"nodes not adding up", func(m *Measurement) { m.SurfaceTokens = 31 }, "the nodes' tokens add up to 30, but surfaceTokens is 31"},
		{"breakdown not adding up", func(m *Measurement) { m.Breakdown.User = 21 }, "add up to 31, but surfaceTokens is 30"},
		{"a replaced head: seqs not ascending", func(m *Measurement) { m.Nodes[0].Seq = 22 }, ""},
		{"a seq twice", func(m *Measurement) { m.Nodes[1].Seq = 2 }, "node 1 has seq 2, like node 0"},
		{"negative total", func(m *Measurement) { m.TotalTokens = -3 }, "totalTokens is -3"},
		{"total not baseline plus delta", func(m *Measurement) { m.TotalTokens = 35 },
			"totalTokens is 35, but baselineTokens 34 plus surfaceDeltaTokens 0 is 34"},
		{"a usage baseline with a delta", func(m *Measurement) {
			m.Baseline, m.BaselineTokens, m.SurfaceDeltaTokens, m.TotalTokens = "usage", 40, 5, 45
		}, ""},
		{"a negative sum is clamped", func(m *Measurement) {
			*m = Measurement{Baseline: "usage", BaselineTokens: 3, SurfaceDeltaTokens: -5}
		}, ""},
		{"total below its parts", func(m *Measurement) { m.BaselineTokens, m.TotalTokens = 7, 7 },
			"totalTokens is 7, less than the 34 tokens its parts are priced (breakdown.tools 4 plus the surface's 30)"},
		{"total below a coarse breakdown", func(m *Measurement) {
			m.Nodes, m.SurfaceTokens, m.Breakdown = nil, 0, Breakdown{User: 1863, System: 7}
			m.BaselineTokens, m.TotalTokens = 7, 7
		}, "totalTokens is 7, less than the 1870 tokens its parts are priced (breakdown.tools 0 plus the surface's 1870)"},
		{"huge baseline", func(m *Measurement) { m.BaselineTokens = 1 << 62 }, "baselineTokens is 4611686018427387904"},
		{"negative breakdown", func(m *Measurement) { m.Breakdown.Tools = -1 }, "breakdown.tools is -1"},
		{"huge delta", func(m *Measurement) { m.SurfaceDeltaTokens = -1 << 62 }, "surfaceDeltaTokens is -4611686018427387904"},
		{"huge estimate error", func(m *Measurement) { m.EstimateError = est(1 << 50) }, "estimateError is 1125899906842624"},
		{"unprintable tokenizer", func(m *Measurement) { m.Tokenizer = "a\nb" }, `the tokenizer name "a\nb" has the unprintable character U+000A`},
		{"long tokenizer", func(m *Measurement) { m.Tokenizer = strings.Repeat("t", 65) }, "at most 64 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := good()
			c.edit(m)
			err := ValidateMeasurement(m)
			if c.frag == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, "meter/measurement: ")
			require.ErrorContains(t, err, c.frag)
			require.ErrorIs(t, err, ErrBadMeasurement)
			require.ErrorIs(t, err, ErrNotGranted)
		})
	}
}
