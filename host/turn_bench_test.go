package host

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/surface"
)

// BenchmarkTurnLongSession runs turns on a session whose surface already
// holds 300 turns (about 600 KiB of text): each op is one turn of two
// steps, a tool call and its result, then a reply, so two requests built
// from the whole log, checked unchanged after the model call and settled.
// The model is in-process and answers at once: what is measured is the
// loop's own work per turn. Each op adds a turn, so compare runs with the
// same -benchtime Nx. Besides the wall time it reports the process's CPU
// time per op (cpu-ns/op), steadier on a shared machine.
//
//	go test ./host -run '^$' -bench TurnLongSession -benchtime 200x
func BenchmarkTurnLongSession(b *testing.B) {
	l := surface.New(surface.WithClock(func() int64 { return 1000 }))
	s := NewSession("bench", l, nil, WithIDs(CounterIDs("m")))
	tool, err := NewTool("lookup", "looks a word up", func(_ context.Context, in struct {
		Word string `json:"word"`
	}) (string, error) {
		return "the meaning of " + in.Word, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	m := &benchModel{answer: strings.Repeat("an answer of some length. ", 40)}
	a, err := NewAgent(s, Config{Route: Route{Provider: "test", Model: "m1", ContextWindow: 1 << 30},
		Model: m, Prompt: &textPrompt{text: "You are a helpful assistant."}, Tools: []Tool{tool}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	question := strings.Repeat("a question with some words in it. ", 30)
	turn := func(i int) {
		res, err := a.Run(ctx, a.UserMessage(fmt.Sprintf("%d: %s", i, question)))
		if err != nil || res.Reason.Kind != surface.EndCompleted {
			b.Fatalf("turn %d: %v %+v", i, err, res)
		}
	}
	for i := range 300 {
		turn(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	for i := range b.N {
		turn(300 + i)
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// benchModel calls the lookup tool, then answers.
type benchModel struct {
	answer string
	n      int
}

func (m *benchModel) Stream(_ context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Result, error) {
	m.n++
	if last := req.Messages[len(req.Messages)-1]; last.Role == surface.RoleUser && last.Content[0].Type == surface.BlockText {
		id := fmt.Sprintf("call-%d", m.n)
		return &llm.Result{Content: []surface.Block{surface.ToolCall(id, "lookup", `{"word":"weir"}`)},
			FinishReason: llm.FinishToolCalls, Usage: &surface.Usage{Input: 100, Output: 5}}, nil
	}
	return &llm.Result{Content: []surface.Block{surface.Text(m.answer)}, FinishReason: llm.FinishStop,
		Usage: &surface.Usage{Input: 100, Output: 50}}, nil
}
