package surface_test

import (
	"fmt"

	"github.com/weirhost/weir/surface"
)

// A session appends its first prompt and a user message, then replaces the
// prompt at surface node 0. The model sees the new prompt in place; the
// protected head refuses a compaction that would shadow it.
func Example() {
	l := surface.New()
	add := func(p surface.Proposal) surface.Event {
		e, err := l.Append(p)
		if err != nil {
			panic(err)
		}
		return e
	}
	system := func(text string) []byte {
		return []byte(`{"turn":1,"step":1,"message":{"id":"sys-` + text + `","role":"system",` +
			`"source":{"kind":"plugin","plugin":"system-prompt"},"content":[{"type":"text","text":"` + text + `"}]}}`)
	}

	add(surface.Proposal{Type: surface.TypeTurnStart, Data: []byte(`{"turn":1}`)})
	add(surface.Proposal{Type: surface.TypeStepStart, Data: []byte(`{"turn":1,"step":1}`)})
	head := add(surface.Proposal{Type: surface.TypeSystemMessage, Data: system("brief"), Op: surface.Append})
	user := add(surface.Proposal{Type: surface.TypeUserMessage, Op: surface.Append,
		Data: []byte(`{"id":"u1","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"hello"}]}`)})
	fmt.Println("nodes:", l.Nodes())

	// Replace exactly node 0 with the new prompt, citing what it shadows.
	add(surface.Proposal{Type: surface.TypeSystemMessage, Data: system("terse"),
		Op: surface.Replace(head.Seq, head.Seq), Sources: []int64{head.Seq}})
	fmt.Println("nodes:", l.Nodes(), "replaceGeneration:", l.ReplaceGeneration())

	for _, m := range l.Messages() {
		fmt.Printf("%s: %s\n", m.Role, surface.TextOf(m.Content))
	}

	// A summary may not shadow the prompt.
	_, err := l.Append(surface.Proposal{Type: surface.TypeUserMessage,
		Data: []byte(`{"id":"sum","role":"user","source":{"kind":"user"},"content":[]}`),
		Op:   surface.Replace(4, user.Seq), Sources: []int64{4, user.Seq}})
	fmt.Println(surface.RuleOf(err))

	// Output:
	// nodes: [2 3]
	// nodes: [4 3] replaceGeneration: 1
	// system: terse
	// user: hello
	// system-head
}
