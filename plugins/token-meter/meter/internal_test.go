package meter

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/surface"
)

// builder appends loop-shaped events to a session log.
type builder struct {
	tb  testing.TB
	log *surface.Log
	ids int
}

func newBuilder(tb testing.TB) *builder {
	b := &builder{tb: tb, log: surface.New()}
	b.add(surface.TypeTurnStart, `{"turn":1}`, surface.Op{})
	b.add(surface.TypeStepStart, `{"turn":1,"step":1}`, surface.Op{})
	return b
}

func (b *builder) add(typ, data string, op surface.Op) surface.Event {
	b.tb.Helper()
	e, err := b.log.Append(surface.Proposal{Type: typ, Data: []byte(data), Op: op})
	require.NoError(b.tb, err)
	return e
}

func (b *builder) header(provider string) surface.Event {
	return b.add(surface.TypeRequestHeader, `{"header":{"config":{"provider":"`+provider+`","model":"m"}},"reason":"initial"}`, surface.Op{})
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// userData is the data of a user/message holding text.
func (b *builder) userData(text string) string {
	b.ids++
	return fmt.Sprintf(`{"id":"u%d","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":%s}]}`, b.ids, quote(text))
}

func (b *builder) user(text string) surface.Event {
	return b.add(surface.TypeUserMessage, b.userData(text), surface.Append)
}

func (b *builder) assistant(text string) surface.Event {
	b.ids++
	return b.add(surface.TypeAssistantMessage, fmt.Sprintf(`{"turn":1,"step":1,"message":{"id":"a%d","role":"assistant","source":{"kind":"model","provider":"p","model":"m"},"content":[{"type":"text","text":%s}]},"stream":{"v":1}}`, b.ids, quote(text)), surface.Append)
}

// text is a message of about 300 characters, mixed English and Chinese.
func text(i int) string {
	return fmt.Sprintf("Message %d: please read internal/session/log.go and explain how the fold handles a replace "+
		"whose range covers the system head; 请说明压缩如何保留最近的对话，并列出相关的测试。 Then run go test ./... and report "+
		"the failures with their file and line, keeping the answer under two hundred words. (%d)", i, i*7919)
}

func observeAll(tb testing.TB, m *Meter, events []surface.Event) {
	tb.Helper()
	for _, e := range events {
		require.NoError(tb, m.Observe(e))
	}
}

func TestPriceCacheHits(t *testing.T) {
	b := newBuilder(t)
	b.header("deepseek")
	for i := 0; i < 50; i++ {
		b.user(text(i))
	}
	m, err := New(Config{Counters: map[string]tokenizer.Counter{"words": wordCounter{}}})
	require.NoError(t, err)
	observeAll(t, m, b.log.Events())
	ds := m.res.pricers[DeepSeekV3]
	require.Same(t, ds, m.route)
	require.Equal(t, 50, ds.priced)
	require.Equal(t, 50, m.heur.priced)

	// One new node is the only one priced, under both tokenizers.
	require.NoError(t, m.Observe(b.user(text(50))))
	require.Equal(t, 51, ds.priced)
	require.Equal(t, 51, m.heur.priced)
	first, err := m.Measure(nil)
	require.NoError(t, err)
	require.Equal(t, 51, ds.priced, "measuring prices nothing")

	// Content seen before is not priced again, whatever its message id.
	require.NoError(t, m.Observe(b.user(text(7))))
	require.Equal(t, 51, ds.priced)
	require.Equal(t, 51, m.heur.priced)

	// Switching the route away and back reprices nothing twice.
	require.NoError(t, m.Observe(b.header("acme")))
	require.Same(t, m.heur, m.route)
	require.Equal(t, 51, m.heur.priced)
	require.NoError(t, m.Observe(b.header("deepseek")))
	require.Same(t, ds, m.route)
	require.Equal(t, 51, ds.priced)
	again, err := m.Measure(nil)
	require.NoError(t, err)
	require.Equal(t, first.Nodes, again.Nodes[:51])

	// An override on another route prices each node once.
	words := surface.Header{Config: surface.CallConfig{Provider: "acme", Model: "m"}}
	m.res.routes["acme"] = "words"
	_, err = m.Measure(&words)
	require.NoError(t, err)
	w := m.res.pricers["words"]
	require.Equal(t, 51, w.priced)
	_, err = m.Measure(&words)
	require.NoError(t, err)
	require.Equal(t, 51, w.priced)
}

func TestPriceCacheStaysBounded(t *testing.T) {
	b := newBuilder(t)
	b.header("deepseek")
	head := b.user("head")
	m, err := New(Config{})
	require.NoError(t, err)
	observeAll(t, m, b.log.Events())
	// Keep replacing the same node with new content: the surface stays at
	// one node, and so does the cache, up to its slack.
	for i := 0; i < 3000; i++ {
		e, err := b.log.Append(surface.Proposal{Type: surface.TypeUserMessage, Data: []byte(b.userData(fmt.Sprint("v", i))),
			Op: surface.Replace(head.Seq, head.Seq), Sources: []int64{head.Seq}})
		require.NoError(t, err)
		require.NoError(t, m.Observe(e))
		head = e
	}
	require.Len(t, m.nodes, 1)
	require.Equal(t, 3001, m.heur.priced)
	for _, p := range m.res.pricers {
		require.LessOrEqual(t, len(p.cache), 2*1+1024)
	}
}

type wordCounter struct{}

func (wordCounter) Name() string          { return "words" }
func (wordCounter) Count(text string) int { return len(strings.Fields(text)) }

// pop undoes the fold of the last appended node (a user message): the
// benchmark keeps the surface at its size and prices a fresh node on every
// iteration.
func (m *Meter) pop() {
	last := len(m.nodes) - 1
	n, pr := m.nodes[last], m.prices[last]
	for _, p := range m.res.pricers {
		delete(p.cache, n.key)
	}
	m.sumTok -= pr.Tokens
	m.sums[n.kind] -= pr.Tokens
	m.next, m.nodes, m.prices = m.next-1, m.nodes[:last], m.prices[:last]
}

// BenchmarkStep measures the meter's overhead per step on a 1,000-node
// surface when one node was added: Observe of that event plus Measure
// ("step"), and each half alone.
func BenchmarkStep(b *testing.B) {
	for _, provider := range []string{"acme", "deepseek"} {
		name := Heuristic
		if provider == "deepseek" {
			name = DeepSeekV3
		}
		bl := newBuilder(b)
		bl.header(provider)
		for bl.log.NodeCount() < 999 {
			if bl.log.NodeCount()%2 == 0 {
				bl.user(text(bl.ids))
			} else {
				bl.assistant(text(bl.ids))
			}
		}
		m, err := New(Config{})
		require.NoError(b, err)
		observeAll(b, m, bl.log.Events())
		next, sum := m.next, m.sumTok
		// A pool of distinct events at the next seq; pop undoes each fold.
		pool := make([]surface.Event, 256)
		for i := range pool {
			pool[i] = surface.Event{Type: surface.TypeUserMessage, Seq: next, Time: 1,
				Data: []byte(bl.userData(text(100000 + i))), Op: surface.Append}
		}
		run := func(b *testing.B, observe, measure bool) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if observe {
					if err := m.Observe(pool[i%len(pool)]); err != nil {
						b.Fatal(err)
					}
				}
				if measure {
					got, err := m.Measure(nil)
					if err != nil || len(got.Nodes) != len(m.nodes) {
						b.Fatal(err, len(got.Nodes))
					}
				}
				if observe {
					m.pop()
				}
			}
			if m.next != next || m.sumTok != sum {
				b.Fatal("the meter was not restored")
			}
		}
		b.Run(name+"/step", func(b *testing.B) { run(b, true, true) })
		b.Run(name+"/observe", func(b *testing.B) { run(b, true, false) })
		b.Run(name+"/measure", func(b *testing.B) { run(b, false, true) })
	}
}

// BenchmarkReplay measures a fresh replay of a 1,000-node log.
func BenchmarkReplay(b *testing.B) {
	for _, provider := range []string{"acme", "deepseek"} {
		b.Run(provider, func(b *testing.B) {
			bl := newBuilder(b)
			bl.header(provider)
			for bl.log.NodeCount() < 1000 {
				bl.user(text(bl.ids))
				bl.assistant(text(bl.ids))
			}
			events := bl.log.Events()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m, _ := New(Config{})
				for _, e := range events {
					if err := m.Observe(e); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := m.Measure(nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
