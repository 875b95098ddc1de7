package v2

import (
	"bytes"
	"io"
	"testing"
)

// bigLog builds a v2 log of n turns: each turn a user message, a header
// (the prompt changes every 50 turns), an assistant tool call, its result
// and a final answer; a compaction every 100 turns.
func bigLog(n int) []byte {
	b := newLog("bench")
	prompt := "You are a careful assistant."
	start := -1
	var shadowed []int
	for i := 0; i < n; i++ {
		b.turnStart()
		if i > 0 && i%100 == 0 {
			b.compact("c"+itoa(int64(i)), start, shadowed[len(shadowed)-1], shadowed...)
			start, shadowed = -1, nil
		}
		if i%50 == 0 {
			prompt = "You are a careful assistant. Revision " + itoa(int64(i/50)) + "."
		}
		b.stepStart()
		u := b.user("u"+itoa(int64(i)), "please read the file and tell me what it does")
		if start < 0 {
			start = u
		}
		b.header(&prompt, "change", "chat", "")
		a := b.assistant("a"+itoa(int64(i)), "reading", "call-"+itoa(int64(i)))
		b.toolCall("call-" + itoa(int64(i)))
		r := b.toolResult("r"+itoa(int64(i)), "call-"+itoa(int64(i)), "package main\n\nfunc main() {}\n", "")
		b.stepEnd()
		b.stepStart()
		b.header(&prompt, "series", "chat", "")
		f := b.assistant("f"+itoa(int64(i)), "It is an empty main package.")
		b.stepEnd()
		b.turnEnd()
		shadowed = append(shadowed, u, a, r, f)
	}
	return b.bytes()
}

func BenchmarkConvert(b *testing.B) {
	in := bigLog(1000)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		res, err := Convert(bytes.NewReader(in))
		if err != nil {
			b.Fatal(err)
		}
		if err := Write(io.Discard, res); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRead(b *testing.B) {
	in := bigLog(1000)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(bytes.NewReader(in)); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBigLogConverts(t *testing.T) {
	c := convertChecked(t, bigLog(120))
	if len(c.res.Prompts) != 3 {
		t.Fatalf("want the head and 2 changes, got %v", c.res.Prompts)
	}
}
