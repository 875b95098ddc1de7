package v2

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

// converted is a conversion checked against every property the importer
// promises.
type converted struct {
	f      *File
	res    *Result
	out    []byte
	events []surface.Event // decoded back from out
	log    *surface.Log
}

// convertChecked converts in and asserts: the output reloads from its bytes
// under surface.Restore; it derives the same wire messages as the v2 log,
// at the end and at every logged request; a second conversion gives the
// same bytes; every line is canonical v3; inserted events take the time of
// the event they follow.
func convertChecked(t *testing.T, in []byte) converted {
	t.Helper()
	f, err := Read(bytes.NewReader(in))
	require.NoError(t, err)
	res, err := Migrate(f)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, Write(&out, res))

	res2, err := Convert(bytes.NewReader(in))
	require.NoError(t, err)
	var out2 bytes.Buffer
	require.NoError(t, Write(&out2, res2))
	require.Equal(t, out.String(), out2.String(), "converting twice must give identical bytes")

	c := converted{f: f, res: res, out: out.Bytes()}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Contains(t, lines[0], `{"type":"session","version":3,`)
	require.True(t, strings.HasSuffix(lines[0], `,"migratedFrom":2}`), lines[0])
	require.NotContains(t, out.String(), `"system":`, "header.system must be gone")
	for i, line := range lines[1:] {
		ev, err := surface.DecodeEvent([]byte(line))
		require.NoError(t, err, "line %d", i+2)
		require.Equal(t, line, string(surface.AppendEvent(nil, &ev)), "line %d is not canonical v3", i+2)
		c.events = append(c.events, ev)
	}
	c.log, err = surface.Restore(c.events)
	require.NoError(t, err)
	sameMessages(t, f.Messages(), c.log.Messages())
	// The v3 store loads the written file as it is.
	loaded, err := jsonl.Read(bytes.NewReader(c.out))
	require.NoError(t, err)
	require.Equal(t, f.Header.ID, loaded.Header.ID)
	require.Equal(t, len(c.events), loaded.Log.Len())
	require.Equal(t, `{"migratedFrom":2}`, string(loaded.Header.Extra))
	sameMessages(t, f.Messages(), loaded.Log.Messages())

	for i := range f.Events {
		if f.Events[i].Type != surface.TypeRequestHeader {
			continue
		}
		prefix, err := surface.Restore(c.events[:res.SeqOf[i]+1])
		require.NoError(t, err)
		sameMessages(t, f.messagesThrough(i+1), prefix.Messages())
		h, err := surface.FoldHeader(c.events[res.SeqOf[i]:res.SeqOf[i]+1], nil)
		require.NoError(t, err)
		require.True(t, h.Equal(*f.Events[i].Header()), "request %d keeps its config and tools", i)
	}
	for _, s := range res.Prompts {
		require.Equal(t, surface.TypeSystemMessage, c.events[s].Type)
		require.Equal(t, c.events[s-1].Time, c.events[s].Time, "seq %d takes the time of the event it follows", s)
	}
	for i, s := range res.SeqOf {
		require.Equal(t, f.Events[i].Type, c.events[s].Type)
	}
	return c
}

// sameMessages compares wire messages: a system message by role, source and
// content (v2 prompts have no id); every other message in full.
func sameMessages(t *testing.T, want, got []*surface.Message) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		if want[i].Role == surface.RoleSystem {
			require.Equal(t, surface.RoleSystem, got[i].Role)
			require.Equal(t, want[i].Source.Kind, got[i].Source.Kind)
			require.Equal(t, want[i].Source.Plugin, got[i].Source.Plugin)
			require.Equal(t, want[i].Content, got[i].Content)
			require.True(t, strings.HasPrefix(got[i].ID, IDPrefix), got[i].ID)
			continue
		}
		require.Equal(t, want[i], got[i], "message %d", i)
	}
}

// dataOf decodes an event's data generically.
func dataOf(t *testing.T, e surface.Event) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(e.Data, &m))
	return m
}

func systemText(t *testing.T, l *surface.Log, seq int64) (string, int) {
	m, ok := l.Message(seq)
	require.True(t, ok)
	return surface.TextOf(m.Content), len(m.Content)
}

func TestNoPrompt(t *testing.T) {
	b := newLog("s-none")
	b.turnStart()
	b.stepStart()
	b.user("u1", "hi")
	b.header(nil, "initial", "chat", "")
	b.assistant("a1", "hello")
	b.stepEnd()
	b.turnEnd()
	c := convertChecked(t, b.bytes())

	require.Equal(t, []int64{2}, c.res.Prompts, "node 0 lands right after step/start")
	sys := c.events[2]
	require.Equal(t, surface.Append, sys.Op)
	require.Nil(t, sys.Sources)
	require.Equal(t, `{"turn":1,"step":1,"message":{"id":"v2-sys-s-none-2","role":"system","source":{"kind":"plugin","plugin":"system-prompt"},"content":[]}}`, string(sys.Data))
	require.Equal(t, []int64{2, 3, 5}, c.log.Nodes())
	require.Len(t, c.log.Messages(), 2, "an empty head projects to no wire message")
	require.Equal(t, surface.TypeUserMessage, c.events[3].Type)
	require.Equal(t, 1, c.res.Stats.Appends)
	require.Equal(t, 0, c.res.Stats.Headers, "a header without system keeps its bytes")
}

func TestEmptyPromptThenPrompt(t *testing.T) {
	b := newLog("s-empty")
	b.turnStart()
	b.stepStart()
	b.user("u1", "hi")
	b.header(ptr(""), "initial", "chat", "")
	b.assistant("a1", "hello")
	b.stepEnd()
	b.turnEnd()
	b.turnStart()
	b.stepStart() // v2 seq 8
	b.user("u2", "more")
	b.header(ptr("Be brief."), "change", "chat", "")
	b.assistant("a2", "ok")
	b.stepEnd()
	b.turnEnd()
	c := convertChecked(t, b.bytes())

	// v3: 0 turn/start, 1 step/start, 2 sys(""), ... 9 step/start, 10 sys replace.
	require.Equal(t, []int64{2, 10}, c.res.Prompts)
	require.Equal(t, surface.Replace(2, 2), c.events[10].Op)
	require.Equal(t, []int64{2}, c.events[10].Sources)
	text, _ := systemText(t, c.log, 10)
	require.Equal(t, "Be brief.", text)
	require.Equal(t, int64(10), c.log.Nodes()[0], "the later prompt replaced node 0 instead of landing behind history")
	msgs := c.log.Messages()
	require.Equal(t, surface.RoleSystem, msgs[0].Role)
	hdr := dataOf(t, c.events[c.res.SeqOf[10]])
	require.Equal(t, "series", hdr["reason"], "a header that changed only its prompt is a series start")
	require.NotContains(t, hdr, "startsSeries")
	require.Equal(t, uint64(1), c.log.ReplaceGeneration())
}

func TestOnePrompt(t *testing.T) {
	b := newLog("s-one")
	b.turnStart()
	b.stepStart()
	b.user("u1", "hi")
	b.header(ptr("You are terse."), "initial", "chat", "")
	b.assistant("a1", "hello")
	b.stepEnd()
	b.turnEnd()
	b.turnStart()
	b.stepStart()
	b.user("u2", "switch model")
	h2 := b.header(ptr("You are terse."), "change", "reasoner", "")
	b.assistant("a2", "ok")
	b.stepEnd()
	b.turnEnd()
	c := convertChecked(t, b.bytes())

	require.Equal(t, []int64{2}, c.res.Prompts, "an unchanged prompt is committed once")
	hdr := dataOf(t, c.events[c.res.SeqOf[h2]])
	require.Equal(t, "change", hdr["reason"], "a config change without a prompt change stays a plain change")
	require.NotContains(t, hdr, "startsSeries")
	require.Equal(t, `{"header":{"config":{"provider":"deepseek","model":"reasoner"}},"reason":"change"}`, string(c.events[c.res.SeqOf[h2]].Data))
	require.Equal(t, "You are terse.", surface.TextOf(c.log.Messages()[0].Content))
	require.Equal(t, 2, c.res.Stats.Headers)
}

func TestSeveralPromptChanges(t *testing.T) {
	b := newLog("s-many")
	// turn 1: P1
	b.turnStart()
	b.stepStart()
	b.user("u1", "one")
	b.header(ptr("P1"), "initial", "chat", "")
	b.assistant("a1", "r1")
	b.stepEnd()
	b.turnEnd()
	// turn 2: only the prompt changes -> series
	b.turnStart()
	b.stepStart()
	b.user("u2", "two")
	h2 := b.header(ptr("P2"), "change", "chat", "")
	b.assistant("a2", "r2")
	b.stepEnd()
	b.turnEnd()
	// turn 3: prompt and model change -> change + startsSeries
	b.turnStart()
	b.stepStart()
	b.user("u3", "three")
	h3 := b.header(ptr("P3"), "change", "reasoner", "")
	b.assistant("a3", "r3")
	b.stepEnd()
	b.turnEnd()
	// turn 4: the prompt becomes empty -> node 0 emptied
	b.turnStart()
	b.stepStart()
	b.user("u4", "four")
	h4 := b.header(ptr(""), "change", "reasoner", `,"startsSeries":true`)
	b.assistant("a4", "r4")
	b.stepEnd()
	b.turnEnd()
	// turn 5: a failed attempt, then a retry whose header carries a new prompt
	b.turnStart()
	b.stepStart()
	b.user("u5", "five")
	b.header(ptr("P5"), "change", "reasoner", "")
	att := b.attempt()
	b.raw("llm/retry", `{"turn":5,"step":1,"retry":1,"failure":{"code":"RATE_LIMIT"}}`, "")
	h5b := b.header(ptr("P5b"), "change", "reasoner", "")
	b.assistant("a5", "r5")
	b.stepEnd()
	b.turnEnd()
	// resume: end-seed, then a resume header with a new prompt
	b.raw("session/end-seed", `{}`, "")
	b.turnStart()
	b.stepStart()
	b.user("u6", "six")
	h6 := b.header(ptr("P6"), "resume", "reasoner", "")
	b.assistant("a6", "r6")
	b.stepEnd()
	b.turnEnd()
	c := convertChecked(t, b.bytes())

	require.Len(t, c.res.Prompts, 7)
	require.Equal(t, 1, c.res.Stats.Appends)
	require.Equal(t, 6, c.res.Stats.Replacements)
	// Every replacement rewrites exactly the previous head and cites it.
	for i, s := range c.res.Prompts[1:] {
		prev := c.res.Prompts[i]
		require.Equal(t, surface.Replace(prev, prev), c.events[s].Op)
		require.Equal(t, []int64{prev}, c.events[s].Sources)
	}
	reason := func(h int) map[string]any { return dataOf(t, c.events[c.res.SeqOf[h]]) }
	require.Equal(t, "series", reason(h2)["reason"])
	require.Equal(t, "change", reason(h3)["reason"])
	require.Equal(t, true, reason(h3)["startsSeries"])
	require.Equal(t, "series", reason(h4)["reason"], "config unchanged since h3, prompt changed: series")
	require.NotContains(t, reason(h4), "startsSeries", "series never carries startsSeries")
	require.Equal(t, "series", reason(h5b)["reason"])
	require.Equal(t, "resume", reason(h6)["reason"], "resume is kept whatever changed")
	require.NotContains(t, reason(h6), "startsSeries")

	// The retry's prompt lands right before its own header, after the
	// failed attempt and the retry record, inside the same step.
	retry := c.res.SeqOf[h5b] - 1
	require.Equal(t, surface.TypeSystemMessage, c.events[retry].Type)
	require.Equal(t, c.res.SeqOf[att]+2, retry)
	require.Equal(t, `{"turn":5,"step":1,"message":{"id":"v2-sys-s-many-`+itoa(retry)+`","role":"system","source":{"kind":"plugin","plugin":"system-prompt"},"content":[{"type":"text","text":"P5b"}]}}`, string(c.events[retry].Data))
	// The emptied prompt is an empty-content replacement.
	_, blocks := systemText(t, c.log, c.res.Prompts[3])
	require.Equal(t, 0, blocks)
	text, _ := systemText(t, c.log, c.log.Nodes()[0])
	require.Equal(t, "P6", text)
	require.Equal(t, uint64(6), c.log.ReplaceGeneration())
}

func TestCompactionAroundPromptChange(t *testing.T) {
	b := newLog("s-compact")
	b.turnStart()
	b.stepStart()
	u1 := b.user("u1", "one")
	b.header(ptr("P1"), "initial", "chat", "")
	a1 := b.assistant("a1", "r1")
	b.stepEnd()
	b.turnEnd()
	// turn 2: a pre-step compaction before the prompt change
	b.turnStart()
	cp1 := b.compact("c1", u1, a1, u1, a1)
	b.stepStart()
	u2 := b.user("u2", "two")
	b.header(ptr("P2"), "series", "chat", "")
	a2 := b.assistant("a2", "r2")
	b.stepEnd()
	b.turnEnd()
	// turn 3: a compaction after the prompt change, over the checkpoint and turn 2
	b.turnStart()
	cp2 := b.compact("c2", cp1, a2, cp1, u2, a2)
	b.stepStart()
	b.user("u3", "three")
	b.header(ptr("P2"), "series", "chat", "")
	b.assistant("a3", "r3")
	b.stepEnd()
	b.turnEnd()
	c := convertChecked(t, b.bytes())

	require.Len(t, c.res.Prompts, 2)
	seq := c.res.SeqOf
	// The first checkpoint's range and citations are remapped past node 0.
	ev := c.events[seq[cp1]]
	require.Equal(t, surface.Replace(seq[u1], seq[a1]), ev.Op)
	require.Equal(t, []int64{seq[cp1-2], seq[cp1-1], seq[u1], seq[a1]}, ev.Sources)
	sum := dataOf(t, c.events[seq[cp1-1]])
	require.Equal(t, map[string]any{"start": float64(seq[u1]), "end": float64(seq[a1])}, sum["shadowedRange"])
	require.Equal(t, []any{float64(seq[u1]), float64(seq[a1])}, sum["shadowedSeqs"])
	// The second one spans the checkpoint and the prompt-changed turn, but
	// never node 0, which is the replaced system head.
	ev = c.events[seq[cp2]]
	require.Equal(t, surface.Replace(seq[cp1], seq[a2]), ev.Op)
	sum = dataOf(t, c.events[seq[cp2-1]])
	require.Equal(t, []any{float64(seq[cp1]), float64(seq[u2]), float64(seq[a2])}, sum["shadowedSeqs"])
	nodes := c.log.Nodes()
	require.Equal(t, c.res.Prompts[1], nodes[0])
	require.Equal(t, seq[cp2], nodes[1])
	require.Equal(t, "P2", surface.TextOf(c.log.Messages()[0].Content))
	// Data other than the remapped seqs is kept byte for byte.
	require.Contains(t, string(c.events[seq[cp1-1]].Data), `"summary":[{"type":"text","text":"s"}]`)
}

func TestToolCalls(t *testing.T) {
	b := newLog("s-tools")
	b.turnStart()
	b.stepStart()
	b.user("u1", "read a and b")
	b.header(ptr("P"), "initial", "chat", `,"startsSeries":true`)
	b.assistant("a1", "reading", "call-1", "call-2")
	c1 := b.toolCall("call-1")
	r1 := b.toolResult("r1", "call-1", "A", `,"surfaceOp":"append","sourceEventSeqs":[`+itoa(int64(c1))+`]`)
	b.toolCall("call-2")
	r2 := b.toolResult("r2", "call-2", "B", `,"surfaceOp":"append"`)
	b.stepEnd()
	b.stepStart()
	b.header(ptr("P2"), "series", "chat", "")
	b.assistant("a2", "done")
	b.stepEnd()
	b.turnEnd()
	// turn 2: the pruner rewrites the first result's content
	b.turnStart()
	pr := b.raw("compaction/prune", `{"shadowedRange":{"start":`+itoa(int64(r1))+`,"end":`+itoa(int64(r1))+`},"shadowedTokenCount":9}`, "")
	rw := b.raw("tool/result", toolResultData(1, 1, "r1", "call-1", "[pruned]"),
		`,"surfaceOp":{"op":"replace","start":`+itoa(int64(r1))+`,"end":`+itoa(int64(r1))+`},"sourceEventSeqs":[`+itoa(int64(r1))+`]`)
	b.stepStart()
	b.user("u2", "again")
	b.header(ptr("P2"), "series", "chat", "")
	b.assistant("a3", "fine")
	b.stepEnd()
	b.turnEnd()
	c := convertChecked(t, b.bytes())

	seq := c.res.SeqOf
	require.Equal(t, []int64{seq[c1]}, c.events[seq[r1]].Sources, "tool/result citations are remapped")
	require.Nil(t, c.events[seq[r2]].Sources)
	require.Equal(t, surface.Replace(seq[r1], seq[r1]), c.events[seq[rw]].Op)
	require.Equal(t, []int64{seq[r1]}, c.events[seq[rw]].Sources)
	require.Equal(t, map[string]any{"start": float64(seq[r1]), "end": float64(seq[r1])}, dataOf(t, c.events[seq[pr]])["shadowedRange"])
	// The prompt change of step 2 sits after its step/start.
	require.Equal(t, surface.TypeStepStart, c.events[c.res.Prompts[1]-1].Type)
	require.Equal(t, `{"turn":1,"step":2,"message":{"id":"v2-sys-s-tools-`+itoa(c.res.Prompts[1])+`","role":"system","source":{"kind":"plugin","plugin":"system-prompt"},"content":[{"type":"text","text":"P2"}]}}`,
		string(c.events[c.res.Prompts[1]].Data))
	msgs := c.log.Messages()
	require.Equal(t, "[pruned]", surface.TextOf(msgs[3].Content[0].Content))
}

func TestTornTail(t *testing.T) {
	b := newLog("s-torn")
	b.turnStart()
	b.stepStart()
	b.user("u1", "hi")
	b.header(ptr("P"), "initial", "chat", "")
	tail := `{"type":"assistant/message","seq":4,"time":1040,"data":{"tu`
	c := convertChecked(t, append(b.bytes(), tail...))
	require.Equal(t, len(tail), c.res.Stats.TornBytes)
	require.Len(t, c.f.Events, 4)
	require.Len(t, c.events, 5, "four v2 events and the system head")
	require.True(t, bytes.HasSuffix(c.out, []byte("}\n")))

	// A torn tail that is a complete-looking object is still dropped: only
	// the newline commits a line.
	c = convertChecked(t, append(b.bytes(), `{"type":"step/end","seq":4,"time":1040,"data":{"turn":1,"step":1}}`...))
	require.Len(t, c.f.Events, 4)
}

func TestLenientEnvelope(t *testing.T) {
	b := newLog("s-lenient")
	b.raw("turn/start", `{"turn":1}`, `,"surfaceOp":null,"sourceEventSeqs":[]`)
	b.turn = 1
	b.stepStart()
	u1 := b.raw("user/message", userMsg("u1", "no surfaceOp"), "")
	u2 := b.raw("user/message", userMsg("u2", "empty sources"), `,"surfaceOp":"append","sourceEventSeqs":[]`)
	b.header(ptr("P"), "initial", "chat", "")
	todo := b.raw("todo/write", `{"items":[{"text":"x"}]}`, `,"ignorable":true,"surfaceOp":"append","sourceEventSeqs":[1]`)
	a1 := b.raw("assistant/message", `{"turn":1,"step":1,"message":{"id":"a1","role":"assistant","source":{"kind":"model","provider":"deepseek","model":"chat"},"content":[{"type":"text","text":"r"}]},"stream":[]}`,
		`,"surfaceOp":"append","sourceEventSeqs":[[0,2],`+itoa(int64(todo))+`]`)
	b.stepEnd()
	b.raw("turn/end", `{"turn":1,"reason":{"kind":"completed"}}`, `,"sourceEventSeqs":null`)
	c := convertChecked(t, b.bytes())

	seq := c.res.SeqOf
	require.Equal(t, surface.Append, c.events[seq[u1]].Op, "a surface event without surfaceOp is an append")
	require.Nil(t, c.events[seq[u2]].Sources, "an empty sourceEventSeqs is dropped")
	require.Nil(t, c.events[seq[a1]].Sources, "assistant messages lose their v2 sourceEventSeqs")
	require.Equal(t, surface.Op{}, c.events[0].Op)
	require.Nil(t, c.events[0].Sources)
	carried := c.events[seq[todo]]
	raw, ok := carried.Verbatim()
	require.True(t, ok, "an unknown ignorable event is carried verbatim")
	require.Equal(t, `{"type":"todo/write","seq":`+itoa(seq[todo])+`,"time":1050,"data":{"items":[{"text":"x"}]},"ignorable":true,"surfaceOp":"append","sourceEventSeqs":[1]}`, string(raw))
	require.Equal(t, Leniency{ImplicitAppends: 1, EmptyKeys: 3, AssistantSources: 1}, c.res.Stats.Leniency)
	require.Equal(t, 1, c.res.Stats.Ignorable)
}

func TestNoHeaderNoPrompt(t *testing.T) {
	// A step that never reached a request records no prompt: nothing is
	// inserted and the surface is carried as is.
	b := newLog("s-nohdr")
	b.turnStart()
	b.stepStart()
	b.user("u1", "hi")
	b.stepEnd()
	b.raw("turn/end", `{"turn":1,"reason":{"kind":"error","error":{"message":"no route","code":"UNKNOWN"}}}`, "")
	c := convertChecked(t, b.bytes())
	require.Empty(t, c.res.Prompts)
	require.Equal(t, []int64{2}, c.log.Nodes())

	// A header-only log converts to a header-only log.
	c = convertChecked(t, newLog("s-empty-log").bytes())
	require.Empty(t, c.events)
	require.Equal(t, `{"type":"session","version":3,"id":"s-empty-log","createdAt":1700000000000,"cwd":"/work/x","isSeeded":false,"migratedFrom":2}`+"\n", string(c.out))
}

func TestHeaderFieldsCarried(t *testing.T) {
	in := `{"version":2,"type":"session","id":"s-h","createdAt":"2024-01-02T03:04:05Z","parentSession":"s-p","isSeeded":true,"origin":"subagent","delegationDepth":1,"agentPreset":{"name":"x"}}` + "\n"
	res, err := Convert(strings.NewReader(in))
	require.NoError(t, err)
	require.Equal(t, 3, res.Header.Version)
	require.Equal(t, 2, res.Header.MigratedFrom)
	v, ok := res.Header.Field("agentPreset")
	require.True(t, ok)
	require.Equal(t, `{"name":"x"}`, string(v))
	var out bytes.Buffer
	require.NoError(t, Write(&out, res))
	require.Equal(t, `{"type":"session","version":3,"id":"s-h","createdAt":"2024-01-02T03:04:05Z","parentSession":"s-p","isSeeded":true,"origin":"subagent","delegationDepth":1,"agentPreset":{"name":"x"},"migratedFrom":2}`+"\n", out.String())
	loaded, err := jsonl.Read(&out)
	require.NoError(t, err, "the v3 store loads the carried header")
	require.Equal(t, "s-p", loaded.Header.ParentSession)
	require.Equal(t, int64(1), loaded.Header.DelegationDepth)
}
