package tokenmeter

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/plugins/token-meter/meter"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
	"github.com/weirhost/weir/surface"
)

// Where to count DeepSeek V3: in the guest (its embedded tokenizer) or on
// the host (count_tokens). Each benchmark folds one new event into the
// state of a 200-node DeepSeek session, as the host does after every
// commit, or measures that session.
//
//	go test -run XXX -bench . -benchtime 200x ./plugins/token-meter

// benchSession is a DeepSeek session of 100 exchanges (200 nodes after the
// system prompt), observed into a state blob.
func benchSession(b *testing.B, p *plugin.Plugin) (*session, []byte) {
	s := newSession(b, true)
	s.turnStart()
	s.stepStart()
	s.system("You are terse.", surface.Append)
	s.header("deepseek", "deepseek-chat", tools)
	for i := range 100 {
		s.user(text(i))
		s.reply([]surface.Block{surface.Text(text(i + 1000))}, &surface.Usage{Input: int64(200 * i), Output: 80})
		s.stepEnd()
		s.stepStart()
	}
	var all []abi.Event
	for _, e := range s.log.Events() {
		all = append(all, event(b, e))
	}
	state, err := p.Observe(context.Background(), s.host, &abi.ObserveRequest{Events: all})
	require.NoError(b, err)
	return s, state
}

// newUser is the JSON of a user/message of about size bytes at seq.
func newUser(seq int64, size int) []byte {
	body := strings.ToValidUTF8(strings.Repeat(text(int(seq))+"\n", size/200+1)[:size], "")
	e := surface.Event{Type: surface.TypeUserMessage, Seq: seq, Time: 1, Op: surface.Append,
		Data: fmt.Appendf(nil, `{"id":"b%d","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":%q}]}`, seq, body)}
	return surface.AppendEvent(nil, &e)
}

var countings = []string{countOnHost, countInGuest}

func loadFor(b *testing.B, counting string, opts ...plugin.Option) *plugin.Plugin {
	cfg := fmt.Sprintf(`{"counting": %q}`, counting)
	return plugintest.LoadBytes(b, Name, plugintest.Build(b, standalone), append(opts, plugin.WithConfig([]byte(cfg)))...)
}

func BenchmarkObserve(b *testing.B) {
	for _, counting := range countings {
		p := loadFor(b, counting)
		s, state := benchSession(b, p)
		for _, size := range []int{300, 8 << 10, 64 << 10} {
			ev := abi.Event{Seq: s.log.NextSeq(), Type: surface.TypeUserMessage, JSON: newUser(s.log.NextSeq(), size)}
			b.Run(fmt.Sprintf("%s/%dB", counting, size), func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					if _, err := p.Observe(context.Background(), s.host, &abi.ObserveRequest{State: state, Events: []abi.Event{ev}}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkMeasure(b *testing.B) {
	for _, counting := range countings {
		p := loadFor(b, counting)
		s, state := benchSession(b, p)
		b.Run(counting, func(b *testing.B) {
			for b.Loop() {
				if _, err := p.Measure(context.Background(), s.host, &abi.MeasureRequest{State: state}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFreshInstance observes one 300-byte message on a new instance
// every time: instance start, and in the guest the tokenizer's load.
func BenchmarkFreshInstance(b *testing.B) {
	for _, counting := range countings {
		p := loadFor(b, counting, plugin.WithMaxCalls(1))
		s, state := benchSession(b, p)
		ev := abi.Event{Seq: s.log.NextSeq(), Type: surface.TypeUserMessage, JSON: newUser(s.log.NextSeq(), 300)}
		b.Run(counting, func(b *testing.B) {
			for b.Loop() {
				if _, err := p.Observe(context.Background(), s.host, &abi.ObserveRequest{State: state, Events: []abi.Event{ev}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNativeFold is the same fold in the host process, for scale:
// restore the blob, fold the event, write the new blob.
func BenchmarkNativeFold(b *testing.B) {
	p := loadFor(b, countInGuest)
	s, state := benchSession(b, p)
	for _, size := range []int{300, 8 << 10, 64 << 10} {
		e, err := surface.DecodeEvent(newUser(s.log.NextSeq(), size))
		require.NoError(b, err)
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				m, err := meter.Restore(meter.Config{}, state)
				if err != nil {
					b.Fatal(err)
				}
				if err := m.Observe(e); err != nil {
					b.Fatal(err)
				}
				_ = m.AppendState(nil)
			}
		})
	}
}

// BenchmarkObserveStep folds one tool-calling step (step/start, the
// assistant message with its usage, the tool result, step/end) into the
// state of a 200-node session on a route the fixed estimator prices: no
// token counting, so the fold is the events' decoding and the ABI call.
func BenchmarkObserveStep(b *testing.B) {
	p := loadFor(b, countOnHost)
	s := newSession(b, true)
	s.turnStart()
	s.stepStart()
	s.system("You are terse.", surface.Append)
	s.header("acme", "big", tools)
	for i := range 100 {
		s.user(text(i))
		s.reply([]surface.Block{surface.Text(text(i + 1000))}, &surface.Usage{Input: int64(200 * i), Output: 80})
		s.stepEnd()
		s.stepStart()
	}
	s.stepEnd()
	before := s.log.NextSeq()
	s.stepStart()
	s.reply([]surface.Block{surface.Text("Reading it first."), surface.ToolCall("c1", "read", `{"path":"host/agent.go"}`)},
		&surface.Usage{Input: 21000, Output: 40})
	s.toolResult("c1", text(7))
	s.stepEnd()
	var history, step []abi.Event
	for _, e := range s.log.Events() {
		if e.Seq < before {
			history = append(history, event(b, e))
		} else {
			step = append(step, event(b, e))
		}
	}
	state, err := p.Observe(context.Background(), s.host, &abi.ObserveRequest{Events: history})
	require.NoError(b, err)
	for b.Loop() {
		if _, err := p.Observe(context.Background(), s.host, &abi.ObserveRequest{State: state, Events: step}); err != nil {
			b.Fatal(err)
		}
	}
}
