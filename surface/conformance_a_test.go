package surface_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
)

// Conformance checklist, group A: envelope and admission.

func TestA01_LogOnlyWithSurfaceKeysRejected(t *testing.T) {
	cases := []struct {
		name    string
		op      surface.Op
		sources []int64
		extra   string // the same keys on a line
	}{
		{"sourceEventSeqs", surface.Op{}, []int64{0}, `"sourceEventSeqs":[0]`},
		{"empty sourceEventSeqs", surface.Op{}, []int64{}, `"sourceEventSeqs":[]`},
		{"surfaceOp append", surface.Append, nil, `"surfaceOp":"append"`},
		{"surfaceOp replace", surface.Replace(0, 0), []int64{0}, `"surfaceOp":{"op":"replace","startSeq":0,"endSeq":0},"sourceEventSeqs":[0]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newTLog(t)
			l.user("hi")
			p := pLogOnly(surface.TypeTurnStart, `{"turn":1}`)
			p.Op, p.Sources = c.op, c.sources
			l.reject(p, surface.RuleEligibility, "log-only event turn/start must not carry surfaceOp or sourceEventSeqs")
			require.Equal(t, 1, l.Len())

			err := loadLine(t, l.Events(), line(surface.TypeTurnStart, 1, `{"turn":1}`, c.extra))
			requireRule(t, err, surface.RuleEligibility, "must not carry surfaceOp or sourceEventSeqs")
		})
	}
}

func TestA02_SeededSurfaceEventWithoutOpRejected(t *testing.T) {
	seed := []surface.Event{{Type: surface.TypeUserMessage, Seq: 0, Time: 1, Data: userData("u0", "hi")}}
	l, err := surface.Seed(seed)
	require.Nil(t, l)
	requireRule(t, err, surface.RuleEligibility, "surface event user/message requires surfaceOp")

	ev, err := surface.DecodeEvent([]byte(line(surface.TypeUserMessage, 0, string(userData("u0", "hi")), "")))
	require.NoError(t, err)
	_, err = surface.Seed([]surface.Event{ev})
	requireRule(t, err, surface.RuleEligibility, "requires surfaceOp")
}

func TestA03_SeedSeqMustEqualIndex(t *testing.T) {
	seed := []surface.Event{
		{Type: surface.TypeUserMessage, Seq: 0, Time: 1, Data: userData("u0", "a"), Op: surface.Append},
		{Type: surface.TypeUserMessage, Seq: 2, Time: 1, Data: userData("u2", "b"), Op: surface.Append},
	}
	_, err := surface.Seed(seed)
	requireRule(t, err, surface.RuleContiguous, "expected seq 1")
	var se *surface.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, int64(1), se.Seq)
	require.Equal(t, "seq 1 (user/message): contiguity: seq 2 is not contiguous: expected seq 1", err.Error())
}

func TestA04_NonLosslessDataRejectedAtAppend(t *testing.T) {
	msg := func(extra string) string {
		return `{"id":"u1","role":"user","source":{"kind":"user"},"content":[],"x":` + extra + `}`
	}
	cases := []struct {
		name, data string
		rule       surface.Rule
		frag       string
	}{
		{"NaN", msg("NaN"), surface.RuleLossless, "not valid lossless JSON"},
		{"Infinity", msg("Infinity"), surface.RuleLossless, "not valid lossless JSON"},
		{"undefined", msg("undefined"), surface.RuleLossless, "not valid lossless JSON"},
		{"-0", msg("-0"), surface.RuleLossless, "-0"},
		{"-0.0", msg("-0.0"), surface.RuleLossless, "-0"},
		{"-0e5 in array", msg("[1,-0e5]"), surface.RuleLossless, "-0"},
		{"nested -0", msg(`{"a":{"b":-0}}`), surface.RuleLossless, "-0"},
		{"hole", msg("[1,,2]"), surface.RuleLossless, "not valid lossless JSON"},
		{"duplicate key", `{"id":"u1","id":"u2","role":"user","source":{"kind":"user"},"content":[]}`, surface.RuleLossless, "duplicate key"},
		{"invalid UTF-8", msg("\"\xff\""), surface.RuleLossless, "invalid UTF-8"},
		{"two values", msg("1") + ` {}`, surface.RuleLossless, "not valid lossless JSON"},
		{"not an object", `[1]`, surface.RuleEnvelope, "data is not an object"},
		{"missing", ``, surface.RuleEnvelope, "missing data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newTLog(t)
			l.user("before")
			p := surface.Proposal{Type: surface.TypeUserMessage, Data: []byte(c.data), Op: surface.Append}
			l.reject(p, c.rule, c.frag)
			require.Equal(t, 1, l.Len())
		})
	}
	// A -0 inside a string is text, and a negative zero exponent is an
	// ordinary number.
	for _, ok := range []string{`"-0"`, `1e-0`, `-1E-00`, `[0,-0.5,-1e-0]`} {
		l := newTLog(t)
		l.add(surface.Proposal{Type: surface.TypeUserMessage, Data: []byte(msg(ok)), Op: surface.Append})
		requireFolds(t, l.Log)
	}
	l := newTLog(t)
	l.reject(surface.Proposal{Type: surface.TypeUserMessage, Data: []byte(msg(`-0e-5`)), Op: surface.Append}, surface.RuleLossless, "-0")
}

func TestA05_AppendSnapshotsCallerInput(t *testing.T) {
	l := newTLog(t)
	l.user("a")
	l.user("b")
	data := userData("sum", "summary")
	sources := []int64{0, 1}
	p := surface.Proposal{Type: surface.TypeUserMessage, Data: data, Op: surface.Replace(0, 1), Sources: sources}
	got, err := l.Append(p)
	require.NoError(t, err)
	want := string(surface.AppendEvent(nil, &got))

	for i := range data {
		data[i] = 'x'
	}
	sources[0], sources[1] = 7, 7
	p.Op = surface.Replace(5, 6)

	ev, ok := l.Event(2)
	require.True(t, ok)
	require.Equal(t, want, string(surface.AppendEvent(nil, &ev)))
	require.Equal(t, string(userData("sum", "summary")), string(ev.Data))
	require.Equal(t, []int64{0, 1}, ev.Sources)
	require.Equal(t, surface.Replace(0, 1), ev.Op)
	m, ok := l.Message(2)
	require.True(t, ok)
	require.Equal(t, "summary", surface.TextOf(m.Content))

	// The logged event is unaffected and still folds to the same surface.
	res, err := surface.Fold(l.Events())
	require.NoError(t, err)
	require.Equal(t, []int64{2}, res.Nodes)
}

// headerLine is request/header data with the given header members.
func headerData(header string) string {
	return `{"header":{"config":{"provider":"deepseek","model":"deepseek-chat"}` + header + `},"reason":"initial"}`
}

func TestA06_HeaderSystemRejected(t *testing.T) {
	l := newTLog(t)
	l.add(pLogOnly(surface.TypeTurnStart, `{"turn":1}`))
	data := headerData(`,"system":"be brief"`)
	l.reject(pLogOnly(surface.TypeRequestHeader, data), surface.RuleHeader, "header.system is not allowed in format v3: use system/message")

	// Loaded: the same event read from a line refuses the log.
	err := loadLine(t, l.Events(), line(surface.TypeRequestHeader, 1, data, ""))
	requireRule(t, err, surface.RuleHeader, "header.system is not allowed")
	// Even an empty or null system member is refused.
	err = loadLine(t, l.Events(), line(surface.TypeRequestHeader, 1, headerData(`,"system":null`), ""))
	requireRule(t, err, surface.RuleHeader, "header.system is not allowed")

	// Without system the header is accepted.
	l.add(pLogOnly(surface.TypeRequestHeader, headerData("")))
	require.Equal(t, "deepseek-chat", l.Header().Config.Model)
}

func TestA07_EmptyToolsOrAdapterDefaultsRejected(t *testing.T) {
	cases := []struct{ name, header, frag string }{
		{"tools []", `,"tools":[]`, "header.tools, when present, must be non-empty"},
		{"adapterDefaults {}", `,"adapterDefaults":{}`, "header.adapterDefaults, when present, must be non-empty"},
		{"adapterDefaults false", `,"adapterDefaults":{"maxTokens":false}`, "must be exactly true"},
		{"adapterDefaults unknown key", `,"adapterDefaults":{"temperature":true}`, "unknown key"},
		{"adapterDefaults unmarked config", `,"adapterDefaults":{"maxTokens":true}`, "which config lacks"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newTLog(t)
			l.add(pLogOnly(surface.TypeTurnStart, `{"turn":1}`))
			l.reject(pLogOnly(surface.TypeRequestHeader, headerData(c.header)), surface.RuleHeader, c.frag)
			require.Nil(t, l.Header())
		})
	}
	l := newTLog(t)
	l.add(pLogOnly(surface.TypeTurnStart, `{"turn":1}`))
	l.add(pLogOnly(surface.TypeRequestHeader, headerData(`,"tools":[{"name":"read"}]`)))
	require.Len(t, l.Header().Tools, 1)
}

func TestA08_ToolResultErrorNeedsIsError(t *testing.T) {
	l := newTLog(t)
	turn, step := l.step()
	l.add(pAssistant(turn, step, "a1", "", "c1"))
	l.add(pLogOnly(surface.TypeToolCall, `{"turn":1,"step":1,"callId":"c1","name":"read","arguments":"{}"}`))
	r := toolResult{turn: turn, step: step, id: "r1", callID: "c1", text: "boom", isError: false,
		errorJSON: `{"name":"ToolError","code":"FAILED"}`}
	p := surface.Proposal{Type: surface.TypeToolResult, Data: r.data(), Op: surface.Append}
	l.reject(p, surface.RulePayload, "a tool result with error must have isError true")

	r.isError = true
	p.Data = r.data()
	l.add(p)
}

func TestA09_SeededSystemMessageRoleAndSource(t *testing.T) {
	prefix := []surface.Event{
		{Type: surface.TypeTurnStart, Seq: 0, Time: 1, Data: []byte(`{"turn":1}`)},
		{Type: surface.TypeStepStart, Seq: 1, Time: 1, Data: []byte(`{"turn":1,"step":1}`)},
	}
	msg := func(role, source string) []byte {
		return []byte(`{"turn":1,"step":1,"message":{"id":"s1","role":` + jq(role) + `,"source":` + source + `,"content":[{"type":"text","text":"be brief"}]}}`)
	}
	cases := []struct {
		name string
		data []byte
		frag string
	}{
		{"role user", msg("user", `{"kind":"plugin","plugin":"system-prompt"}`), `message role must be system, got "user"`},
		{"role assistant", msg("assistant", `{"kind":"plugin","plugin":"system-prompt"}`), `message role must be system`},
		{"source user", msg("system", `{"kind":"user"}`), `system message source must be {kind:"plugin", plugin:<id>}, got kind "user"`},
		{"source model", msg("system", `{"kind":"model","provider":"p","model":"m"}`), `got kind "model"`},
		{"plugin without id", msg("system", `{"kind":"plugin"}`), `system message source must be`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			seed := append(prefix[:2:2], surface.Event{Type: surface.TypeSystemMessage, Seq: 2, Time: 1, Data: c.data, Op: surface.Append})
			l, err := surface.Seed(seed)
			require.Nil(t, l)
			requireRule(t, err, surface.RulePayload, c.frag)
		})
	}
	seed := append(prefix[:2:2], surface.Event{Type: surface.TypeSystemMessage, Seq: 2, Time: 1,
		Data: msg("system", `{"kind":"plugin","plugin":"system-prompt"}`), Op: surface.Append})
	l, err := surface.Seed(seed)
	require.NoError(t, err)
	require.Equal(t, []int64{2}, l.Nodes())
}

func TestA10_UnknownTypes(t *testing.T) {
	l := newTLog(t)
	l.user("a")
	l.user("b")
	prefix := l.Events()

	err := loadLine(t, prefix, line("todo/write", 2, `{"items":[]}`, ""))
	requireRule(t, err, surface.RuleUnknownType, `unknown event type "todo/write" without ignorable: true`)

	// ignorable must be exactly true.
	err = loadLine(t, prefix, line("todo/write", 2, `{"items":[]}`, `"ignorable":false`))
	requireRule(t, err, surface.RuleEnvelope, "ignorable must be exactly true")

	// An ignorable unknown event loads, is kept verbatim (surface-looking keys
	// included) and leaves the surface alone.
	raw := line("todo/write", 2, `{"items":[]}`, `"ignorable":true,"surfaceOp":{"op":"replace","startSeq":0,"endSeq":1},"sourceEventSeqs":[0,1],"extra":{"k":1}`)
	ev, err := surface.DecodeEvent([]byte(raw))
	require.NoError(t, err)
	require.NoError(t, loadLine(t, prefix, raw))
	all := append(prefix[:2:2], ev, surface.Event{Type: surface.TypeUserMessage, Seq: 3, Time: 1, Data: userData("u3", "c"), Op: surface.Append})
	got, err := surface.Restore(all)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1, 3}, got.Nodes())
	require.Equal(t, [2]uint64{0, 0}, gens(got))
	require.Equal(t, []string{"u0", "u1", "u3"}, ids(got.Messages()))
	kept, ok := got.Event(2)
	require.True(t, ok)
	require.Equal(t, raw, string(surface.AppendEvent(nil, &kept)))
	_, ok = got.Message(2)
	require.False(t, ok)
}

func TestA11_SeedEndMarker(t *testing.T) {
	seed := []surface.Event{
		{Type: surface.TypeUserMessage, Seq: 0, Time: 5, Data: userData("u0", "a"), Op: surface.Append},
		{Type: surface.TypeUserMessage, Seq: 1, Time: 6, Data: userData("u1", "b"), Op: surface.Append},
	}
	l, err := surface.Seed(seed, surface.WithClock(func() int64 { return 99 }))
	require.NoError(t, err)
	require.Equal(t, 3, l.Len())
	marker, ok := l.Event(2)
	require.True(t, ok)
	require.Equal(t, surface.TypeEndSeed, marker.Type)
	require.Equal(t, int64(2), marker.Seq)
	require.Equal(t, int64(99), marker.Time)
	require.Equal(t, "{}", string(marker.Data))
	require.Equal(t, []int64{0, 1}, l.Nodes())

	// Re-seeding from the result does not grow the log.
	again, err := surface.Seed(l.Events())
	require.NoError(t, err)
	require.Equal(t, 3, again.Len())

	// An explicitly empty seed gets its marker at seq 0.
	empty, err := surface.Seed([]surface.Event{})
	require.NoError(t, err)
	require.Equal(t, 1, empty.Len())
	first, _ := empty.Event(0)
	require.Equal(t, surface.TypeEndSeed, first.Type)

	// No seed: no marker.
	require.Equal(t, 0, surface.New().Len())

	// A fork child writes its own inherited marker even after a marker.
	child, err := surface.Fork(l.Events())
	require.NoError(t, err)
	require.Equal(t, 4, child.Len())
	cut, _ := child.Event(3)
	require.Equal(t, surface.TypeEndSeed, cut.Type)
	require.Equal(t, `{"inherited":true}`, string(cut.Data))

	// Only the constructor writes the marker.
	nl := newTLog(t)
	_, err = nl.Append(pLogOnly(surface.TypeEndSeed, `{}`))
	requireRule(t, err, surface.RuleSeedMarker, "written only by the session constructor")
	require.Equal(t, 0, nl.Len())
}

func TestA12_RejectionLeavesEverythingUnchanged(t *testing.T) {
	// A log with both generations past 0, an open step and a header.
	l := newTLog(t)
	turn, step := l.step()
	s := l.system("be brief")
	u := l.user("a")
	l.add(pLogOnly(surface.TypeRequestHeader, headerData("")))
	l.add(replacing(pUser("sum", "summary"), u, u, u))
	require.Equal(t, [2]uint64{1, 1}, gens(l.Log))
	sum := l.NextSeq() - 1
	a := l.add(pAssistant(turn, step, "a1", "ok"))
	next := l.NextSeq()

	cases := []struct {
		name string
		p    surface.Proposal
		rule surface.Rule
		frag string
	}{
		{"lossless", surface.Proposal{Type: surface.TypeUserMessage, Data: []byte(`{"x":-0}`), Op: surface.Append}, surface.RuleLossless, "-0"},
		{"unknown type", pLogOnly("x/y", `{}`), surface.RuleUnknownType, "unknown event type"},
		{"eligibility", replacing(pLogOnly(surface.TypeStepEnd, `{"turn":1,"step":1}`), a, a, a), surface.RuleEligibility, "must not carry"},
		{"surface op", replacing(pUser("u", "x"), next, next, a), surface.RuleSurfaceOp, "must reference earlier events"},
		{"sources", replacing(pUser("u", "x"), a, a, a, a), surface.RuleSources, "duplicate"},
		{"range", replacing(pUser("u", "x"), u, u, u), surface.RuleRange, fmt.Sprintf("start seq %d not found in surface", u)},
		{"coverage", replacing(pUser("u", "x"), sum, a, sum), surface.RuleCoverage, fmt.Sprintf("missing [%d]", a)},
		{"system head", replacing(pUser("u", "x"), s, sum, s, sum), surface.RuleSystemHead, "surface node 0 holds the protected system prompt"},
		{"tool rewrite", replacing(surface.Proposal{Type: surface.TypeToolResult, Data: toolResult{turn: 1, step: 1, id: "r", callID: "c"}.data()}, a, a, a), surface.RuleToolRewrite, "must target a current tool/result"},
		{"payload", surface.Proposal{Type: surface.TypeUserMessage, Data: []byte(`{"id":"","role":"user","source":{"kind":"user"},"content":[]}`), Op: surface.Append}, surface.RulePayload, "message id must be a non-empty string"},
		{"header", pLogOnly(surface.TypeRequestHeader, `{"header":{"config":{"provider":"","model":"m"}},"reason":"change"}`), surface.RuleHeader, "non-empty provider and model"},
		{"enclosure", pLogOnly(surface.TypeTurnStart, `{"turn":2}`), surface.RuleEnclosure, "while turn 1 is open"},
		{"empty type", surface.Proposal{Data: []byte(`{}`), Ignorable: true}, surface.RuleEnvelope, `type "" is not a non-empty UTF-8 string`},
		{"invalid UTF-8 type", surface.Proposal{Type: "todo/\xff", Data: []byte(`{}`), Ignorable: true}, surface.RuleEnvelope, "is not a non-empty UTF-8 string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l.reject(c.p, c.rule, c.frag)
		})
	}

	// A batch is all or nothing: a valid first proposal is not committed when
	// the second is rejected, and the error names the second's seq.
	before := stateOf(l.Log)
	_, err := l.AppendBatch([]surface.Proposal{pUser("ok", "fine"), replacing(pUser("bad", "x"), s, s, s)})
	requireRule(t, err, surface.RuleSystemHead, "surface node 0 holds the protected system prompt")
	require.Contains(t, err.Error(), fmt.Sprintf("seq %d ", next+1))
	require.Equal(t, before, stateOf(l.Log))

	// Re-entrant append from an observer is rejected and changes nothing.
	var inner error
	var innerState state
	remove := l.Observe(func(surface.Event) {
		innerState = stateOf(l.Log)
		_, inner = l.Append(pUser("again", "x"))
	})
	l.user("observed")
	remove()
	requireRule(t, inner, surface.RuleReentrant, "append from inside an observer")
	require.Equal(t, innerState, stateOf(l.Log))
}

func TestA05_AppendedDataFitsOneLine(t *testing.T) {
	// Data with whitespace around it or line breaks inside it is stored
	// compacted, so its line reads back byte-identical; strings are untouched.
	l := newTLog(t)
	data := []byte(" {\n  \"id\": \"u0\",\r\n  \"role\": \"user\", \"source\": {\"kind\": \"user\"},\n  \"content\": [{\"type\": \"text\", \"text\": \"a \\n b\"}]\n}\n")
	e, err := l.Append(surface.Proposal{Type: surface.TypeUserMessage, Data: data, Op: surface.Append})
	require.NoError(t, err)
	require.Equal(t, `{"id":"u0","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"a \n b"}]}`, string(e.Data))
	ln := surface.AppendEvent(nil, &e)
	require.NotContains(t, string(ln), "\n")
	back, err := surface.DecodeEvent(ln)
	require.NoError(t, err)
	require.Equal(t, e, back)
	m, _ := l.Message(0)
	require.Equal(t, "a \n b", surface.TextOf(m.Content))

	// Data already on one line is kept byte for byte.
	kept := []byte(`{"id":"u1", "role":"user","source":{"kind":"user"},"content":[]}`)
	e, err = l.Append(surface.Proposal{Type: surface.TypeUserMessage, Data: kept, Op: surface.Append})
	require.NoError(t, err)
	require.Equal(t, string(kept), string(e.Data))
}

func TestA06_LegacyHeaderDeltaRefusedEvenIgnorable(t *testing.T) {
	for _, line := range []string{
		`{"type":"request/header-delta","seq":0,"time":1,"data":{}}`,
		`{"type":"request/header-delta","seq":0,"time":1,"data":{},"ignorable":true}`,
	} {
		e, err := surface.DecodeEvent([]byte(line))
		require.NoError(t, err)
		_, err = surface.Restore([]surface.Event{e})
		require.Error(t, err)
		require.Equal(t, surface.RuleHeader, surface.RuleOf(err))
		require.Contains(t, err.Error(), "request/header-delta")
	}
}
