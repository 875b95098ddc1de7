package host

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// randomSession is a session of closed turns written by the loop: each turn
// a user message, an assistant message with 0-3 tool calls and their
// results (step 1), then an answer (step 2).
func randomSession(t testing.TB, r *rand.Rand, turns int) *Session {
	s := NewSession("s", surface.New(surface.WithClock(func() int64 { return 1 })), nil)
	long := strings.Repeat("lorem ipsum ", 30)
	loop := func(typ, data string, op surface.Op) {
		_, err := s.Propose(Proposer{Kind: ByLoop}, surface.Proposal{Type: typ, Data: []byte(data), Op: op})
		require.NoError(t, err)
	}
	call := 0
	for turn := 1; turn <= turns; turn++ {
		loop(surface.TypeTurnStart, fmt.Sprintf(`{"turn":%d}`, turn), surface.Op{})
		loop(surface.TypeStepStart, fmt.Sprintf(`{"turn":%d,"step":1}`, turn), surface.Op{})
		if turn == 1 {
			loop(surface.TypeSystemMessage, `{"turn":1,"step":1,"message":{"id":"sys","role":"system","source":{"kind":"plugin","plugin":"system-prompt"},"content":[{"type":"text","text":"be brief"}]}}`, surface.Append)
		}
		loop(surface.TypeUserMessage, fmt.Sprintf(`{"id":"u%d","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"%s"}]}`, turn, long), surface.Append)
		n := r.IntN(4)
		var blocks, ids []string
		blocks = append(blocks, `{"type":"text","text":"`+long+`"}`)
		for range n {
			call++
			id := fmt.Sprintf("c%d", call)
			ids = append(ids, id)
			blocks = append(blocks, `{"type":"tool-call","id":"`+id+`","name":"read","arguments":"{}"}`)
		}
		loop(surface.TypeAssistantMessage, fmt.Sprintf(`{"turn":%d,"step":1,"message":{"id":"a%d","role":"assistant","source":{"kind":"model","provider":"p","model":"m"},"content":[%s]},"stream":[]}`,
			turn, turn, strings.Join(blocks, ",")), surface.Append)
		for _, id := range ids {
			loop(surface.TypeToolCall, fmt.Sprintf(`{"turn":%d,"step":1,"callId":"%s","name":"read","arguments":"{}"}`, turn, id), surface.Op{})
		}
		for _, id := range ids {
			loop(surface.TypeToolResult, fmt.Sprintf(`{"turn":%d,"step":1,"message":{"id":"r-%s","role":"user","source":{"kind":"tool","callId":"%s"},"content":[{"type":"tool-result","toolCallId":"%s","isError":false,"content":[{"type":"text","text":"%s"}]}]}}`,
				turn, id, id, id, long), surface.Append)
		}
		loop(surface.TypeStepEnd, fmt.Sprintf(`{"turn":%d,"step":1}`, turn), surface.Op{})
		loop(surface.TypeStepStart, fmt.Sprintf(`{"turn":%d,"step":2}`, turn), surface.Op{})
		loop(surface.TypeAssistantMessage, fmt.Sprintf(`{"turn":%d,"step":2,"message":{"id":"b%d","role":"assistant","source":{"kind":"model","provider":"p","model":"m"},"content":[{"type":"text","text":"%s"}]},"stream":[]}`,
			turn, turn, long), surface.Append)
		loop(surface.TypeStepEnd, fmt.Sprintf(`{"turn":%d,"step":2}`, turn), surface.Op{})
		loop(surface.TypeTurnEnd, fmt.Sprintf(`{"turn":%d,"reason":{"kind":"completed"}}`, turn), surface.Op{})
	}
	require.Nil(t, s.Log().CheckWire())
	return s
}

// FuzzSessionProposals sends random compaction batches (one or two
// brackets, each a checkpoint over a random range) through Session.Propose
// against a random valid session between turns. Whatever is admitted
// leaves derived messages that keep the pairing rule; whatever is refused
// leaves the log unchanged.
func FuzzSessionProposals(f *testing.F) {
	f.Add(uint64(1), []byte{1, 3, 0})
	f.Add(uint64(2), []byte{2, 2, 1, 5, 1, 0})
	f.Add(uint64(3), []byte{1, 0, 1, 4, 2, 1, 7, 0, 0})
	f.Add(uint64(4), []byte{3, 5, 1, 1, 1, 0, 9, 9, 1})
	f.Fuzz(func(t *testing.T, seed uint64, ops []byte) {
		s := randomSession(t, rand.New(rand.NewPCG(seed, seed^0x5eed)), 3+int(seed%4))
		cb := Proposer{Kind: ByCompaction, ID: "cb"}
		for round := 0; len(ops) >= 3 && round < 12; round++ {
			x, y, two := int(ops[0]), int(ops[1]), ops[2]%2 == 1
			ops = ops[3:]
			nodes := s.Log().Nodes()
			if len(nodes) < 3 {
				return
			}
			next := s.Log().NextSeq()
			var ps []surface.Proposal
			bracket := func(a, b int) {
				at := next + int64(len(ps))
				id := fmt.Sprintf("c-%d", at)
				shadowed := nodes[a : b+1]
				ps = append(ps,
					surface.Proposal{Type: surface.TypeCompactionStart, Data: data(map[string]any{"compactionId": id, "turn": nil})},
					surface.Proposal{Type: surface.TypeCompactionSummary, Data: data(map[string]any{"compactionId": id, "summary": "s", "shadowedSeqs": shadowed})},
					surface.Proposal{Type: surface.TypeUserMessage, Op: surface.Replace(shadowed[0], shadowed[len(shadowed)-1]),
						Sources: append([]int64{at, at + 1}, shadowed...),
						Data: data(map[string]any{"id": "cp-" + id, "role": "user", "source": map[string]any{"kind": "plugin", "plugin": "cb", "compactionId": id},
							"content": []any{map[string]any{"type": "text", "text": "s"}}})},
					surface.Proposal{Type: surface.TypeCompactionEnd, Data: data(map[string]any{"compactionId": id, "turn": nil})})
			}
			a := 1 + x%(len(nodes)-1)
			b := a + y%(len(nodes)-a)
			if two && b > a {
				mid := a + (b-a)/2
				bracket(a, mid)
				bracket(mid+1, b)
			} else {
				bracket(a, b)
			}
			before := s.Log().Events()
			_, err := s.Propose(cb, ps...)
			if err != nil {
				require.Equal(t, before, s.Log().Events(), "a refused batch leaves the log unchanged: %v", err)
				continue
			}
			if werr := s.Log().CheckWire(); werr != nil {
				t.Fatalf("an admitted batch at seq %d breaks the pairing rule: %v", next, werr)
			}
		}
	})
}
