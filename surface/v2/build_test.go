package v2

import (
	"fmt"
	"strconv"
	"strings"
)

// logBuilder writes hand-built v2 logs line by line. Times advance by 10 ms
// per event so that inserted events' times are checkable.
type logBuilder struct {
	lines      []string
	seq        int
	turn, step int
}

func newLog(id string) *logBuilder {
	return &logBuilder{lines: []string{
		`{"type":"session","version":2,"id":` + strconv.Quote(id) + `,"createdAt":1700000000000,"cwd":"/work/x","isSeeded":false}`,
	}}
}

func (b *logBuilder) time(seq int) int { return 1000 + 10*seq }

// raw appends an event with the given envelope tail (",surfaceOp:..." etc.)
// and returns its seq.
func (b *logBuilder) raw(typ, data, tail string) int {
	s := b.seq
	b.lines = append(b.lines, fmt.Sprintf(`{"type":%q,"seq":%d,"time":%d,"data":%s%s}`, typ, s, b.time(s), data, tail))
	b.seq++
	return s
}

// line appends a literal line (it must carry the next seq to be valid).
func (b *logBuilder) line(s string) { b.lines = append(b.lines, s); b.seq++ }

func (b *logBuilder) turnStart() int {
	b.turn++
	b.step = 0
	return b.raw("turn/start", fmt.Sprintf(`{"turn":%d}`, b.turn), "")
}

func (b *logBuilder) turnEnd() int {
	return b.raw("turn/end", fmt.Sprintf(`{"turn":%d,"reason":{"kind":"completed"}}`, b.turn), "")
}

func (b *logBuilder) stepStart() int {
	b.step++
	return b.raw("step/start", fmt.Sprintf(`{"turn":%d,"step":%d}`, b.turn, b.step), "")
}

func (b *logBuilder) stepEnd() int {
	return b.raw("step/end", fmt.Sprintf(`{"turn":%d,"step":%d}`, b.turn, b.step), "")
}

func userMsg(id, text string) string {
	return fmt.Sprintf(`{"id":%q,"role":"user","source":{"kind":"user"},"content":[{"type":"text","text":%q}]}`, id, text)
}

func (b *logBuilder) user(id, text string) int {
	return b.raw("user/message", userMsg(id, text), `,"surfaceOp":"append"`)
}

// header logs a request/header; system nil leaves header.system absent.
func (b *logBuilder) header(system *string, reason string, model string, extra string) int {
	sys := ""
	if system != nil {
		sys = `,"system":` + strconv.Quote(*system)
	}
	return b.raw("request/header", fmt.Sprintf(`{"header":{"config":{"provider":"deepseek","model":%q}%s},"reason":%q%s}`, model, sys, reason, extra), "")
}

func (b *logBuilder) assistant(id, text string, calls ...string) int {
	blocks := []string{fmt.Sprintf(`{"type":"text","text":%q}`, text)}
	for _, c := range calls {
		blocks = append(blocks, fmt.Sprintf(`{"type":"tool-call","id":%q,"name":"read","arguments":"{\"path\":\"a\"}"}`, c))
	}
	return b.raw("assistant/message", fmt.Sprintf(`{"turn":%d,"step":%d,"message":{"id":%q,"role":"assistant","source":{"kind":"model","provider":"deepseek","model":"chat"},"content":[%s]},"stream":[{"t":1,"k":"text"}],"usage":{"inputTokens":10,"outputTokens":5}}`,
		b.turn, b.step, id, strings.Join(blocks, ",")), `,"surfaceOp":"append"`)
}

func (b *logBuilder) attempt() int {
	return b.raw("assistant/attempt", fmt.Sprintf(`{"turn":%d,"step":%d,"stream":[{"t":1,"k":"error"}]}`, b.turn, b.step), "")
}

func (b *logBuilder) toolCall(callID string) int {
	return b.raw("tool/call", fmt.Sprintf(`{"turn":%d,"step":%d,"callId":%q,"name":"read","arguments":"{\"path\":\"a\"}"}`, b.turn, b.step, callID), "")
}

func toolResultData(turn, step int, id, callID, text string) string {
	return fmt.Sprintf(`{"turn":%d,"step":%d,"message":{"id":%q,"role":"user","source":{"kind":"tool","callId":%q},"content":[{"type":"tool-result","toolCallId":%q,"isError":false,"content":[{"type":"text","text":%q}]}]}}`,
		turn, step, id, callID, callID, text)
}

func (b *logBuilder) toolResult(id, callID, text, tail string) int {
	return b.raw("tool/result", toolResultData(b.turn, b.step, id, callID, text), tail)
}

// compact writes a compaction bracket replacing start..end (v2 seqs) whose
// shadowed nodes are shadowed, and returns the checkpoint's seq.
func (b *logBuilder) compact(id string, start, end int, shadowed ...int) int {
	cs := b.raw("compaction/start", fmt.Sprintf(`{"compactionId":%q,"turn":%d}`, id, b.turn), "")
	sh := joinInts(shadowed)
	sum := b.raw("compaction/summary", fmt.Sprintf(`{"compactionId":%q,"summary":[{"type":"text","text":"s"}],"shadowedRange":{"start":%d,"end":%d},"shadowedSeqs":[%s],"shadowedTokenCount":40,"provider":"deepseek","model":"chat"}`, id, start, end, sh), "")
	cp := b.raw("user/message",
		fmt.Sprintf(`{"id":"cp-%s","role":"user","source":{"kind":"plugin","plugin":"compact","compactionId":%q},"content":[{"type":"text","text":"<compacted-summary>s</compacted-summary>"}]}`, id, id),
		fmt.Sprintf(`,"surfaceOp":{"op":"replace","start":%d,"end":%d},"sourceEventSeqs":[%d,%d,%s]`, start, end, cs, sum, sh))
	b.raw("compaction/end", fmt.Sprintf(`{"compactionId":%q,"turn":%d}`, id, b.turn), "")
	return cp
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (b *logBuilder) bytes() []byte { return []byte(strings.Join(b.lines, "\n") + "\n") }

func ptr(s string) *string { return &s }
