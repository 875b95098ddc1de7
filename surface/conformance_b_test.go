package surface_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
)

// Conformance checklist, group B: the surface fold.

// users returns a log of n appended user messages (seqs 0..n-1).
func users(t testing.TB, n int) *tlog {
	l := newTLog(t)
	for i := 0; i < n; i++ {
		l.user(fmt.Sprintf("m%d", i))
	}
	return l
}

// requireFolds requires that the complete fold and a restore of l's events
// reproduce l's nodes and generations, and returns the complete fold.
func requireFolds(t testing.TB, l *surface.Log) surface.FoldResult {
	t.Helper()
	res, err := surface.Fold(l.Events())
	require.NoError(t, err)
	require.Equal(t, l.Nodes(), res.Nodes)
	require.Equal(t, gens(l), [2]uint64{res.ReplaceGeneration, res.ContentGeneration})
	r, err := surface.Restore(l.Events())
	require.NoError(t, err)
	require.Equal(t, l.Nodes(), r.Nodes())
	require.Equal(t, gens(l), gens(r))
	return res
}

func TestB13_AppendsFoldInOrder(t *testing.T) {
	l := newTLog(t)
	turn, step := l.step() // seqs 0, 1
	require.Equal(t, int64(2), l.add(pUser("u", "a")))
	require.Equal(t, int64(3), l.add(pAssistant(turn, step, "a", "b")))
	require.Equal(t, int64(4), l.add(pUser("u2", "c")))
	require.Equal(t, []int64{2, 3, 4}, l.Nodes())
	require.Equal(t, [2]uint64{0, 0}, gens(l.Log))

	u := users(t, 3)
	res := requireFolds(t, u.Log)
	require.Equal(t, []int64{0, 1, 2}, res.Nodes)
	require.Equal(t, uint64(0), res.ReplaceGeneration)
	require.Equal(t, uint64(0), res.ContentGeneration)
	require.Empty(t, res.Replacements)
}

func TestB14_SingleNodeReplace(t *testing.T) {
	l := users(t, 3)
	require.Equal(t, int64(3), l.add(replacing(pUser("r", "x"), 1, 1, 1)))
	require.Equal(t, []int64{0, 3, 2}, l.Nodes())
	require.Equal(t, uint64(1), l.ReplaceGeneration())
	requireFolds(t, l.Log)
}

func TestB15_RangeReplaceReportsShadowed(t *testing.T) {
	l := users(t, 2)
	l.add(replacing(pUser("r", "x"), 0, 1, 0, 1))
	require.Equal(t, []int64{2}, l.Nodes())
	res := requireFolds(t, l.Log)
	require.Equal(t, []surface.Replacement{{Seq: 2, Start: 0, End: 1, Shadowed: []int64{0, 1}}}, res.Replacements)
}

func TestB16_ReplaceWithStartAboveEnd(t *testing.T) {
	l := users(t, 2)
	l.add(replacing(pUser("r2", "x"), 0, 0, 0))
	require.Equal(t, []int64{2, 1}, l.Nodes())
	l.add(replacing(pUser("r3", "y"), 2, 1, 2, 1))
	require.Equal(t, []int64{3}, l.Nodes())
	res := requireFolds(t, l.Log)
	require.Equal(t, []surface.Replacement{
		{Seq: 2, Start: 0, End: 0, Shadowed: []int64{0}},
		{Seq: 3, Start: 2, End: 1, Shadowed: []int64{2, 1}},
	}, res.Replacements)
	require.Equal(t, uint64(2), res.ReplaceGeneration)
}

func TestB17_EndpointNotOnSurface(t *testing.T) {
	// Surface [3, 2] after 0 and 1 were replaced by 3.
	l := users(t, 3)
	l.add(replacing(pUser("r", "x"), 0, 1, 0, 1))
	require.Equal(t, []int64{3, 2}, l.Nodes())
	cases := []struct {
		name       string
		start, end int64
		sources    []int64
		frag       string
	}{
		{"start shadowed", 0, 2, []int64{0, 2}, "replace start seq 0 not found in surface"},
		{"end shadowed", 3, 1, []int64{3, 1}, "replace end seq 1 not found in surface"},
		{"both shadowed", 1, 0, []int64{0, 1}, "replace start seq 1 not found in surface"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l.reject(replacing(pUser("n", "y"), c.start, c.end, c.sources...), surface.RuleRange, c.frag)
		})
	}
}

func TestB18_StartAfterEnd(t *testing.T) {
	l := users(t, 3)
	l.reject(replacing(pUser("n", "y"), 2, 0, 0, 1, 2), surface.RuleRange, "replace start seq 2 (node 2) is after end seq 0 (node 0)")
}

func TestB19_EndpointsMustBeEarlier(t *testing.T) {
	cases := []struct {
		name       string
		start, end int64
	}{
		{"start is own seq", 3, 0},
		{"end is own seq", 0, 3},
		{"start beyond", 9, 1},
		{"end beyond", 1, 9},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := users(t, 3)
			// reject also folds the candidate completely and incrementally.
			l.reject(replacing(pUser("n", "y"), c.start, c.end, 0, 1, 2), surface.RuleSurfaceOp, "must reference earlier events")
		})
	}
}

func TestB20_InvalidReplaceOpShapes(t *testing.T) {
	prefix := users(t, 2).Events()
	data := string(userData("r", "x"))
	cases := []struct{ name, op, frag string }{
		{"extra key", `{"op":"replace","startSeq":0,"endSeq":1,"note":"x"}`, "invalid replace surfaceOp"},
		{"start/end keys", `{"op":"replace","start":0,"end":1}`, "invalid replace surfaceOp"},
		{"start key with endSeq", `{"op":"replace","start":0,"endSeq":1}`, "invalid replace surfaceOp"},
		{"missing endSeq", `{"op":"replace","startSeq":0}`, "invalid replace surfaceOp"},
		{"missing op", `{"startSeq":0,"endSeq":1}`, "invalid replace surfaceOp"},
		{"op append object", `{"op":"append","startSeq":0,"endSeq":1}`, "invalid replace surfaceOp"},
		{"-0 startSeq", `{"op":"replace","startSeq":-0,"endSeq":1}`, "invalid replace surfaceOp"},
		{"-0 endSeq", `{"op":"replace","startSeq":0,"endSeq":-0}`, "invalid replace surfaceOp"},
		{"-0.0 endSeq", `{"op":"replace","startSeq":0,"endSeq":-0.0}`, "invalid replace surfaceOp"},
		{"negative", `{"op":"replace","startSeq":-1,"endSeq":1}`, "invalid replace surfaceOp"},
		{"fractional", `{"op":"replace","startSeq":0.5,"endSeq":1}`, "invalid replace surfaceOp"},
		{"string seq", `{"op":"replace","startSeq":"0","endSeq":1}`, "invalid replace surfaceOp"},
		{"unsafe seq", `{"op":"replace","startSeq":0,"endSeq":9007199254740992}`, "invalid replace surfaceOp"},
		{"null", `null`, "invalid surfaceOp"},
		{"array", `["replace",0,1]`, "invalid surfaceOp"},
		{"other string", `"prepend"`, "invalid surfaceOp"},
		{"number", `0`, "invalid surfaceOp"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := loadLine(t, prefix, line(surface.TypeUserMessage, 2, data, `"surfaceOp":`+c.op+`,"sourceEventSeqs":[0,1]`))
			requireRule(t, err, surface.RuleSurfaceOp, c.frag)
		})
	}
	// The canonical shape, with keys in any order, is accepted.
	require.NoError(t, loadLine(t, prefix, line(surface.TypeUserMessage, 2, data, `"surfaceOp":{"endSeq":1,"startSeq":0,"op":"replace"},"sourceEventSeqs":[0,1]`)))
}

func TestB21_ReplaceMustCiteEveryShadowedNode(t *testing.T) {
	l := users(t, 2)
	l.reject(replacing(pUser("n", "y"), 0, 1, 0), surface.RuleCoverage, "replace must cite every shadowed node in sourceEventSeqs; missing [1]")
	l.reject(replacing(pUser("n", "y"), 0, 1), surface.RuleCoverage, "missing [0 1]")

	err := loadLine(t, l.Events(), line(surface.TypeUserMessage, 2, string(userData("n", "y")), `"surfaceOp":{"op":"replace","startSeq":0,"endSeq":1},"sourceEventSeqs":[0]`))
	requireRule(t, err, surface.RuleCoverage, "missing [1]")
}

func TestB22_MalformedSourceEventSeqs(t *testing.T) {
	l := users(t, 2)
	prefix := l.Events()
	data := string(userData("n", "y"))

	// Shapes the Go API can express go through Append (and both folds).
	api := []struct {
		name    string
		sources []int64
		frag    string
	}{
		{"empty", []int64{}, "sourceEventSeqs must be non-empty when present"},
		{"duplicate", []int64{0, 1, 0}, "sourceEventSeqs has duplicate 0"},
		{"self reference", []int64{0, 2}, "sourceEventSeqs[1] = 2 must be less than the event's own seq 2"},
		{"future", []int64{5}, "must be less than the event's own seq 2"},
		{"negative", []int64{-1}, "sourceEventSeqs[0] = -1 is not a non-negative safe integer"},
		{"unsafe", []int64{surface.MaxSeq + 1}, "is not a non-negative safe integer"},
	}
	for _, c := range api {
		t.Run("api/"+c.name, func(t *testing.T) {
			p := pUser("n", "y")
			p.Sources = c.sources
			l.reject(p, surface.RuleSources, c.frag)
		})
	}

	// Shapes only JSON can express go through the decoder, then both folds.
	lines := []struct {
		name, src string
		rule      surface.Rule
		frag      string
	}{
		{"empty", `[]`, surface.RuleSources, "must be non-empty"},
		{"duplicate", `[0,0]`, surface.RuleSources, "duplicate 0"},
		{"self reference", `[2]`, surface.RuleSources, "must be less than the event's own seq 2"},
		{"negative", `[-1]`, surface.RuleSources, "sourceEventSeqs[0] = -1 is not a non-negative safe integer"},
		{"-0", `[0,-0]`, surface.RuleSources, "sourceEventSeqs[1] = -0 is not a non-negative safe integer"},
		{"fractional", `[0.5]`, surface.RuleSources, "sourceEventSeqs[0] = 0.5 is not a non-negative safe integer"},
		{"unsafe", `[9007199254740992]`, surface.RuleSources, "not a non-negative safe integer"},
		{"huge exponent", `[1e400]`, surface.RuleSources, "not a non-negative safe integer"},
		{"string element", `["0"]`, surface.RuleSources, `sourceEventSeqs[0] = "0" is not a non-negative safe integer`},
		{"bool element", `[true]`, surface.RuleSources, "not a non-negative safe integer"},
		{"object element", `[{}]`, surface.RuleSources, "not a non-negative safe integer"},
		{"null hole", `[0,null,1]`, surface.RuleSources, "sourceEventSeqs[1] is a hole (null)"},
		{"elided hole", `[0,,1]`, surface.RuleEnvelope, "not a JSON object"},
		{"object", `{"0":0}`, surface.RuleSources, "sourceEventSeqs is not an array"},
		{"number", `0`, surface.RuleSources, "not an array"},
		{"string", `"0,1"`, surface.RuleSources, "not an array"},
		{"null", `null`, surface.RuleSources, "not an array"},
		{"short run", `[[0,1]]`, surface.RuleSources, "not a non-negative safe integer"},
		{"reversed run", `[[5,1]]`, surface.RuleSources, "not a non-negative safe integer"},
		{"run reaching own seq", `[[0,2]]`, surface.RuleSources, "must be less than the event's own seq 2"},
		{"huge run", `[[0,9007199254740990]]`, surface.RuleSources, "must be less than the event's own seq 2"},
	}
	for _, c := range lines {
		t.Run("line/"+c.name, func(t *testing.T) {
			err := loadLine(t, prefix, line(surface.TypeUserMessage, 2, data, `"surfaceOp":"append","sourceEventSeqs":`+c.src))
			requireRule(t, err, c.rule, c.frag)
		})
	}

	// Sources may cite any earlier event, surface or log-only; a stored run
	// expands to the exact array.
	require.NoError(t, loadLine(t, prefix, line(surface.TypeUserMessage, 2, data, `"surfaceOp":"append","sourceEventSeqs":[1,0]`)))
	ev, err := surface.DecodeEvent([]byte(line(surface.TypeUserMessage, 9, data, `"surfaceOp":"append","sourceEventSeqs":[[2,5],8]`)))
	require.NoError(t, err)
	require.Equal(t, []int64{2, 3, 4, 5, 8}, ev.Sources)
}

func TestB22_RunExpansionIsBounded(t *testing.T) {
	// A short line must not be able to demand memory for 2^53 seqs.
	ln := line(surface.TypeUserMessage, surface.MaxSeq, string(userData("n", "y")), `"surfaceOp":"append","sourceEventSeqs":[[0,9007199254740990]]`)
	_, err := surface.DecodeEvent([]byte(ln))
	requireRule(t, err, surface.RuleSources, "sourceEventSeqs expands to more than")
}

func TestB23_AssistantMustNotCarrySources(t *testing.T) {
	for _, src := range [][]int64{{}, {0}} {
		t.Run(fmt.Sprint(src), func(t *testing.T) {
			l := newTLog(t)
			turn, step := l.step()
			p := pAssistant(turn, step, "a", "x")
			p.Sources = src
			l.reject(p, surface.RuleSources, "assistant/message must not carry sourceEventSeqs")
		})
	}
	l := newTLog(t)
	turn, step := l.step()
	for _, src := range []string{`[]`, `[0]`} {
		err := loadLine(t, l.Events(), line(surface.TypeAssistantMessage, 2, string(assistantData(turn, step, "a", "x")), `"surfaceOp":"append","sourceEventSeqs":`+src))
		requireRule(t, err, surface.RuleSources, "assistant/message must not carry sourceEventSeqs")
	}
}

func TestB24_AssistantReplaceLacksCoverage(t *testing.T) {
	l := newTLog(t)
	turn, step := l.step()
	u := l.user("a")
	a := l.add(pAssistant(turn, step, "a1", "b"))
	l.reject(replacing(pAssistant(turn, step, "a2", "c"), a, a), surface.RuleCoverage, fmt.Sprintf("missing [%d]", a))
	l.reject(replacing(pAssistant(turn, step, "a2", "c"), u, a), surface.RuleCoverage, fmt.Sprintf("missing [%d %d]", u, a))
	require.Equal(t, []int64{u, a}, l.Nodes())
}

func TestB25_ToolResultRewrites(t *testing.T) {
	l := newTLog(t)
	turn, step := l.step()
	l.add(pAssistant(turn, step, "a1", "", "c1", "c2"))
	l.add(pLogOnly(surface.TypeToolCall, `{"turn":1,"step":1,"callId":"c1","name":"read","arguments":"{}"}`))
	orig := toolResult{turn: turn, step: step, id: "r1", callID: "c1", text: "long output", metaJSON: `{"bytes":11}`}
	r1 := l.add(surface.Proposal{Type: surface.TypeToolResult, Data: orig.data(), Op: surface.Append})
	l.add(pLogOnly(surface.TypeToolCall, `{"turn":1,"step":1,"callId":"c2","name":"read","arguments":"{}"}`))
	r2 := l.add(surface.Proposal{Type: surface.TypeToolResult, Data: toolResult{turn: turn, step: step, id: "r2", callID: "c2", text: "x"}.data(), Op: surface.Append})
	u := l.user("next")

	rewrite := func(r toolResult, start, end int64, sources ...int64) surface.Proposal {
		return replacing(surface.Proposal{Type: surface.TypeToolResult, Data: r.data()}, start, end, sources...)
	}
	pruned := orig
	pruned.text = "[pruned]"
	with := func(f func(*toolResult)) toolResult { r := pruned; f(&r); return r }

	cases := []struct {
		name string
		p    surface.Proposal
		rule surface.Rule
		frag string
	}{
		{"spans two nodes", rewrite(pruned, r1, r2, r1, r2), surface.RuleToolRewrite, "must rewrite exactly one current node, not 2"},
		{"targets a user message", rewrite(pruned, u, u, u), surface.RuleToolRewrite, "must target a current tool/result"},
		{"changes toolCallId and callId", rewrite(with(func(r *toolResult) { r.callID = "c9" }), r1, r1, r1), surface.RuleToolRewrite, "may change only content"},
		{"changes toolCallId alone", rewrite(with(func(r *toolResult) { r.blockID = "c9" }), r1, r1, r1), surface.RulePayload, `toolCallId "c9" differs from source callId "c1"`},
		{"changes isError", rewrite(with(func(r *toolResult) { r.isError = true }), r1, r1, r1), surface.RuleToolRewrite, "may change only content"},
		{"changes meta", rewrite(with(func(r *toolResult) { r.metaJSON = `{"bytes":8}` }), r1, r1, r1), surface.RuleToolRewrite, "may change only content"},
		{"drops meta", rewrite(with(func(r *toolResult) { r.metaJSON = "" }), r1, r1, r1), surface.RuleToolRewrite, "may change only content"},
		{"changes message id", rewrite(with(func(r *toolResult) { r.id = "r1b" }), r1, r1, r1), surface.RuleToolRewrite, "may change only content"},
		{"changes step", rewrite(with(func(r *toolResult) { r.step = 2 }), r1, r1, r1), surface.RuleToolRewrite, "may change only content"},
		{"adds error", rewrite(with(func(r *toolResult) { r.isError, r.errorJSON = true, `{"name":"E","code":"X"}` }), r1, r1, r1), surface.RuleToolRewrite, "may change only content"},
		{"uncited", rewrite(pruned, r1, r1, r2), surface.RuleCoverage, fmt.Sprintf("missing [%d]", r1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l.reject(c.p, c.rule, c.frag)
		})
	}

	// Changing only the inner result content is accepted.
	before := gens(l.Log)
	p := rewrite(pruned, r1, r1, r1)
	seq := l.add(p)
	require.Equal(t, []int64{2, seq, r2, u}, l.Nodes())
	require.Equal(t, [2]uint64{before[0] + 1, before[1] + 1}, gens(l.Log))
	m, ok := l.Message(seq)
	require.True(t, ok)
	require.Equal(t, "r1", m.ID)
	require.Equal(t, "[pruned]", surface.TextOf(m.Content[0].Content))
	require.Equal(t, []string{"a1", "r1", "r2", ids(l.Messages())[3]}, ids(l.Messages()))
	requireFolds(t, l.Log)

	// The rewrite is itself a current tool/result and may be rewritten again;
	// the shadowed original is gone.
	again := pruned
	again.text = ""
	l.add(rewrite(again, seq, seq, seq))
	l.reject(rewrite(again, r1, r1, r1), surface.RuleRange, fmt.Sprintf("start seq %d not found in surface", r1))
}

func TestB26_ReplaceNamingLogOnlyEventNotFound(t *testing.T) {
	l := newTLog(t)
	l.step() // 0 turn/start, 1 step/start
	u := l.user("a")
	l.reject(replacing(pUser("n", "y"), 1, u, 1, u), surface.RuleRange, "replace start seq 1 not found in surface")
	l.reject(replacing(pUser("n", "y"), u, 0, u, 0), surface.RuleRange, "replace end seq 0 not found in surface")
}

func TestB27_WindowFold(t *testing.T) {
	const base = 400000
	ev := func(seq int64, id string, op surface.Op, sources ...int64) surface.Event {
		return surface.Event{Type: surface.TypeUserMessage, Seq: seq, Time: 1, Data: userData(id, id), Op: op, Sources: sources}
	}
	window := []surface.Event{
		ev(base, "a", surface.Append),
		ev(base+1, "b", surface.Append),
		ev(base+2, "c", surface.Replace(base, base), base),
	}
	l, err := surface.RestoreWindow(base, window)
	require.NoError(t, err)
	require.Equal(t, []int64{base + 2, base + 1}, l.Nodes())
	require.Equal(t, uint64(1), l.ReplaceGeneration())
	require.Equal(t, int64(base), l.BaseSeq())
	require.Equal(t, int64(base+3), l.NextSeq())
	require.Equal(t, []string{"c", "b"}, ids(l.Messages()))

	// A replace reaching before the window is "not found", restored or appended.
	bad := append(window[:3:3], ev(base+3, "d", surface.Replace(base-1, base-1), base-1))
	_, err = surface.RestoreWindow(base, bad)
	requireRule(t, err, surface.RuleRange, fmt.Sprintf("replace start seq %d not found in surface", base-1))
	tl := &tlog{t: t, Log: l}
	before := stateOf(l)
	_, err = l.Append(replacing(pUser("d", "d"), base-1, base-1, base-1))
	requireRule(t, err, surface.RuleRange, fmt.Sprintf("replace start seq %d not found in surface", base-1))
	require.Equal(t, before, stateOf(l))
	tl.add(replacing(pUser("e", "e"), base+2, base+1, base+1, base+2))
	require.Equal(t, []int64{base + 3}, l.Nodes())
}

func TestB28_CompleteFoldAndSeedFailAlike(t *testing.T) {
	good := users(t, 3).Events()
	ev := func(seq int64, op surface.Op, sources ...int64) surface.Event {
		return surface.Event{Type: surface.TypeUserMessage, Seq: seq, Time: 1, Data: userData("x", "x"), Op: op, Sources: sources}
	}
	sys := []surface.Event{
		{Type: surface.TypeTurnStart, Seq: 0, Time: 1, Data: []byte(`{"turn":1}`)},
		{Type: surface.TypeStepStart, Seq: 1, Time: 1, Data: []byte(`{"turn":1,"step":1}`)},
		{Type: surface.TypeSystemMessage, Seq: 2, Time: 1, Data: systemData(1, 1, "s", "be brief"), Op: surface.Append},
		ev(3, surface.Append),
	}
	cases := []struct {
		name   string
		events []surface.Event
		rule   surface.Rule
	}{
		{"gap", append(good[:3:3], ev(4, surface.Append)), surface.RuleContiguous},
		{"missing coverage", append(good[:3:3], ev(3, surface.Replace(0, 1), 0)), surface.RuleCoverage},
		{"not found", append(good[:3:3], ev(3, surface.Replace(0, 0), 0), ev(4, surface.Replace(0, 0), 0)), surface.RuleRange},
		{"system head", append(sys, ev(4, surface.Replace(2, 3), 2, 3)), surface.RuleSystemHead},
		{"unknown type", append(good[:3:3], surface.Event{Type: "x/y", Seq: 3, Time: 1, Data: []byte(`{}`)}), surface.RuleUnknownType},
		{"lossless", append(good[:3:3], surface.Event{Type: surface.TypeTurnStart, Seq: 3, Time: 1, Data: []byte(`{"turn":-0}`)}), surface.RuleLossless},
		{"payload", append(good[:3:3], surface.Event{Type: surface.TypeUserMessage, Seq: 3, Time: 1, Data: []byte(`{"id":"x"}`), Op: surface.Append}), surface.RulePayload},
		{"enclosure", append(good[:3:3], surface.Event{Type: surface.TypeStepStart, Seq: 3, Time: 1, Data: []byte(`{"turn":1,"step":1}`)}), surface.RuleEnclosure},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, ferr := surface.Fold(c.events)
			_, serr := surface.Seed(c.events)
			_, rerr := surface.Restore(c.events)
			require.Error(t, ferr)
			require.Equal(t, c.rule, surface.RuleOf(ferr), "%v", ferr)
			require.Error(t, serr)
			require.Error(t, rerr)
			require.Equal(t, ferr.Error(), serr.Error())
			require.Equal(t, ferr.Error(), rerr.Error())
		})
	}
}

func TestB29_GenerationReadBeforeNodes(t *testing.T) {
	l := users(t, 3)
	l.add(replacing(pUser("r", "x"), 0, 1, 0, 1))
	require.Equal(t, uint64(1), l.ReplaceGeneration())
	require.Equal(t, []int64{3, 2}, l.Nodes())

	// The same on a restored log, reading the generation first.
	r, err := surface.Restore(l.Events())
	require.NoError(t, err)
	require.Equal(t, uint64(1), r.ReplaceGeneration())
	require.Equal(t, uint64(1), r.ContentGeneration())
	require.Equal(t, []int64{3, 2}, r.Nodes())
}

func TestB30_ContentGeneration(t *testing.T) {
	l := newTLog(t)
	turn, step := l.step()
	l.system("be brief")
	l.user("a")
	l.add(pAssistant(turn, step, "a", "b"))
	l.user("c")
	require.Equal(t, uint64(0), l.ContentGeneration())
	require.Equal(t, uint64(0), l.ReplaceGeneration())
	l.add(replacing(pUser("r", "x"), 3, 4, 3, 4))
	require.Equal(t, uint64(1), l.ContentGeneration())
	require.Equal(t, uint64(1), l.ReplaceGeneration())
	l.user("d")
	require.Equal(t, uint64(1), l.ContentGeneration())
	requireFolds(t, l.Log)
}
