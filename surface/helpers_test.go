package surface_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
)

// This file holds the event builders of the conformance tests. Data is built
// as literal JSON so every test shows exactly what the log holds.

// jq quotes s as a JSON string.
func jq(s string) string {
	b, err := jsontext.AppendQuote(nil, s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// textContent is a content array: [] for "", else one text block.
func textContent(text string) string {
	if text == "" {
		return "[]"
	}
	return `[{"type":"text","text":` + jq(text) + `}]`
}

// userData is the data of a user/message (the message itself).
func userData(id, text string) []byte {
	return []byte(`{"id":` + jq(id) + `,"role":"user","source":{"kind":"user"},"content":` + textContent(text) + `}`)
}

// systemData is the data of a system/message; text "" is the empty prompt.
func systemData(turn, step int64, id, text string) []byte {
	return fmt.Appendf(nil, `{"turn":%d,"step":%d,"message":{"id":%s,"role":"system","source":{"kind":"plugin","plugin":"system-prompt"},"content":%s}}`,
		turn, step, jq(id), textContent(text))
}

// assistantData is the data of an assistant/message with optional tool calls.
func assistantData(turn, step int64, id, text string, calls ...string) []byte {
	blocks := []string{}
	if text != "" {
		blocks = append(blocks, `{"type":"text","text":`+jq(text)+`}`)
	}
	for _, c := range calls {
		blocks = append(blocks, `{"type":"tool-call","id":`+jq(c)+`,"name":"read","arguments":"{}"}`)
	}
	return fmt.Appendf(nil, `{"turn":%d,"step":%d,"message":{"id":%s,"role":"assistant","source":{"kind":"model","provider":"deepseek","model":"deepseek-chat"},"content":[%s]},"stream":[]}`,
		turn, step, jq(id), strings.Join(blocks, ","))
}

// toolResult describes the data of a tool/result event.
type toolResult struct {
	turn, step int64
	id         string
	callID     string // source callId
	blockID    string // toolCallId of the block; callID when ""
	text       string
	isError    bool
	errorJSON  string // the data.error member, "" for none
	metaJSON   string // the data.meta member, "" for none
}

func (r toolResult) data() []byte {
	block := r.blockID
	if block == "" {
		block = r.callID
	}
	s := fmt.Sprintf(`{"turn":%d,"step":%d,"message":{"id":%s,"role":"user","source":{"kind":"tool","callId":%s},"content":[{"type":"tool-result","toolCallId":%s,"isError":%t,"content":%s}]}`,
		r.turn, r.step, jq(r.id), jq(r.callID), jq(block), r.isError, textContent(r.text))
	if r.errorJSON != "" {
		s += `,"error":` + r.errorJSON
	}
	if r.metaJSON != "" {
		s += `,"meta":` + r.metaJSON
	}
	return []byte(s + "}")
}

// Proposal builders.

func pUser(id, text string) surface.Proposal {
	return surface.Proposal{Type: surface.TypeUserMessage, Data: userData(id, text), Op: surface.Append}
}

func pSystem(turn, step int64, id, text string) surface.Proposal {
	return surface.Proposal{Type: surface.TypeSystemMessage, Data: systemData(turn, step, id, text), Op: surface.Append}
}

func pAssistant(turn, step int64, id, text string, calls ...string) surface.Proposal {
	return surface.Proposal{Type: surface.TypeAssistantMessage, Data: assistantData(turn, step, id, text, calls...), Op: surface.Append}
}

func pLogOnly(typ, data string) surface.Proposal {
	return surface.Proposal{Type: typ, Data: []byte(data)}
}

// replacing turns p into a replace of start..end citing sources.
func replacing(p surface.Proposal, start, end int64, sources ...int64) surface.Proposal {
	p.Op = surface.Replace(start, end)
	p.Sources = sources
	return p
}

// tlog is a session log under test with helpers that fail the test on an
// unexpected result.
type tlog struct {
	t testing.TB
	*surface.Log
}

func newTLog(t testing.TB) *tlog {
	clock := int64(1_700_000_000_000)
	return &tlog{t: t, Log: surface.New(surface.WithClock(func() int64 { clock++; return clock }))}
}

// add appends p, requires success and returns the new seq.
func (l *tlog) add(p surface.Proposal) int64 {
	l.t.Helper()
	e, err := l.Append(p)
	require.NoError(l.t, err, "append %s", p.Type)
	return e.Seq
}

// step opens the next turn (when none is open) and its next step, and
// returns their numbers.
func (l *tlog) step() (turn, step int64) {
	l.t.Helper()
	turn, _ = l.OpenTurn()
	if turn == 0 {
		turn = l.LastTurn() + 1
		l.add(pLogOnly(surface.TypeTurnStart, fmt.Sprintf(`{"turn":%d}`, turn)))
	}
	step = 1
	for _, e := range l.Events() {
		if e.Type == surface.TypeStepStart && strings.Contains(string(e.Data), fmt.Sprintf(`"turn":%d,`, turn)) {
			step++
		}
	}
	l.add(pLogOnly(surface.TypeStepStart, fmt.Sprintf(`{"turn":%d,"step":%d}`, turn, step)))
	return turn, step
}

// user appends a user message and returns its seq.
func (l *tlog) user(text string) int64 {
	l.t.Helper()
	return l.add(pUser(fmt.Sprintf("u%d", l.NextSeq()), text))
}

// system appends a system message in the open step (opening one when none
// is open) and returns its seq.
func (l *tlog) system(text string) int64 {
	l.t.Helper()
	turn, step := l.OpenTurn()
	if step == 0 {
		turn, step = l.step()
	}
	return l.add(pSystem(turn, step, fmt.Sprintf("s%d", l.NextSeq()), text))
}

// sys returns a system/message proposal for the open step.
func (l *tlog) sys(text string) surface.Proposal {
	turn, step := l.OpenTurn()
	return pSystem(turn, step, fmt.Sprintf("s%d", l.NextSeq()), text)
}

// state is everything a rejected candidate must leave unchanged.
type state struct {
	len                  int
	next                 int64
	nodes                []int64
	replaceGen           uint64
	contentGen           uint64
	turn, step, lastTurn int64
	messages             int
	header               *surface.Header
	lastLine             string
}

func stateOf(l *surface.Log) state {
	s := state{len: l.Len(), next: l.NextSeq(), nodes: l.Nodes(),
		replaceGen: l.ReplaceGeneration(), contentGen: l.ContentGeneration(),
		lastTurn: l.LastTurn(), messages: len(l.Messages()), header: l.Header()}
	s.turn, s.step = l.OpenTurn()
	if evs := l.Events(); len(evs) > 0 {
		s.lastLine = string(surface.AppendEvent(nil, &evs[len(evs)-1]))
	}
	return s
}

// reject proposes p, requires a rejection with rule and a message holding
// frag, and requires that nothing changed (A12). It also requires that the
// complete fold and a restore of the log plus the candidate event fail with
// the identical error. It returns the error.
func (l *tlog) reject(p surface.Proposal, rule surface.Rule, frag string) error {
	l.t.Helper()
	before := stateOf(l.Log)
	_, err := l.Append(p)
	require.Error(l.t, err, "proposal %s was accepted", p.Type)
	require.Equal(l.t, rule, surface.RuleOf(err), "rule of %v", err)
	require.Contains(l.t, err.Error(), frag)
	require.Equal(l.t, before, stateOf(l.Log), "a rejected proposal changed the log")

	ev := surface.Event{Type: p.Type, Seq: l.NextSeq(), Time: 1, Data: p.Data, Op: p.Op, Sources: p.Sources, Ignorable: p.Ignorable}
	all := append(l.Events(), ev)
	_, ferr := surface.Fold(all)
	require.Error(l.t, ferr, "complete fold accepted the rejected candidate")
	require.Equal(l.t, err.Error(), ferr.Error(), "complete fold and append disagree")
	_, rerr := surface.Restore(all)
	require.Error(l.t, rerr)
	require.Equal(l.t, err.Error(), rerr.Error(), "restore and append disagree")
	return err
}

// line is one hand-written event line.
func line(typ string, seq int64, data string, extra string) string {
	s := fmt.Sprintf(`{"type":%s,"seq":%d,"time":1700000000000,"data":%s`, jq(typ), seq, data)
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// loadLine decodes ln and folds prefix plus the decoded event both
// completely and incrementally. Both folds must agree; the error (from the
// decoder or the folds) is returned.
func loadLine(t testing.TB, prefix []surface.Event, ln string) error {
	t.Helper()
	ev, err := surface.DecodeEvent([]byte(ln))
	if err != nil {
		return err
	}
	all := append(prefix[:len(prefix):len(prefix)], ev)
	res, ferr := surface.Fold(all)
	l, rerr := surface.Restore(all)
	if ferr != nil || rerr != nil {
		require.Error(t, ferr, "restore failed (%v) but the complete fold did not", rerr)
		require.Error(t, rerr, "complete fold failed (%v) but restore did not", ferr)
		require.Equal(t, ferr.Error(), rerr.Error())
		return ferr
	}
	require.Equal(t, res.Nodes, l.Nodes())
	require.Equal(t, res.ReplaceGeneration, l.ReplaceGeneration())
	require.Equal(t, res.ContentGeneration, l.ContentGeneration())
	return nil
}

// requireRule requires err to be an *surface.Error of rule whose message
// holds frag.
func requireRule(t testing.TB, err error, rule surface.Rule, frag string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, rule, surface.RuleOf(err), "rule of %v", err)
	require.Contains(t, err.Error(), frag)
}

// roles lists the roles of msgs.
func roles(msgs []*surface.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Role
	}
	return out
}

// ids lists the ids of msgs.
func ids(msgs []*surface.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// gens returns both generation counters.
func gens(l *surface.Log) [2]uint64 {
	return [2]uint64{l.ReplaceGeneration(), l.ContentGeneration()}
}
