package compact

import (
	"fmt"
	"testing"
)

// longSession builds a session of n user nodes after a system head, with a
// cached measurement (a token meter answers in O(1)).
func longSession(b *testing.B, n int) *fakeSession {
	bl := newBuilder(b).open()
	bl.header("p", "m", 0)
	bl.sys("prompt")
	for i := 0; i < n; i++ {
		bl.user("message number " + fmt.Sprint(i) + " with a few words in it")
	}
	s := bl.session()
	m, err := Estimate(s)
	if err != nil {
		b.Fatal(err)
	}
	s.measure = func(*fakeSession) (*Measurement, error) { return m, nil }
	return s
}

// BenchmarkPressureBelowThreshold is the per-step cost when nothing needs
// compacting; it must not grow with the session.
func BenchmarkPressureBelowThreshold(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprint("nodes=", n), func(b *testing.B) {
			s := longSession(b, n)
			cfg := DefaultConfig()
			req := Request{Reason: Pressure, Turn: 1, Route: Route{ContextWindow: 10_000_000}}
			st := &State{}
			b.ReportAllocs()
			for b.Loop() {
				out, err := Compact(s, cfg, req, st)
				if err != nil || len(out.Proposals) != 0 {
					b.Fatal(err, len(out.Proposals))
				}
			}
		})
	}
}

// BenchmarkSelectRange selects over a 10,000-node surface.
func BenchmarkSelectRange(b *testing.B) {
	s := longSession(b, 10000)
	nodes, _ := s.Nodes()
	m, _ := s.Measure()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := SelectRange(nodes, m, 1000); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkManualCompaction prepares a whole bracket over 10,000 nodes
// (summarizer answered in process).
func BenchmarkManualCompaction(b *testing.B) {
	s := longSession(b, 10000)
	cfg := DefaultConfig()
	b.ReportAllocs()
	for b.Loop() {
		s.calls = s.calls[:0]
		out, err := Compact(s, cfg, Request{Reason: Manual}, &State{})
		if err != nil || len(out.Proposals) != 4 {
			b.Fatal(err, len(out.Proposals))
		}
	}
}

func BenchmarkParseConfig(b *testing.B) {
	doc := []byte(`{"thresholdRatio": 0.7, "retainTokens": 1000, "maxTokens": 4096,
		"modelPolicies": [{"provider": "deepseek", "model": "deepseek-chat", "thresholdRatio": 0.6},
		{"provider": "deepseek", "model": "deepseek-reasoner", "retainRatio": 0.1}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseConfig(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStateRoundTrip(b *testing.B) {
	st := &State{Attempts: []int64{1, 2, 3}, Warned: []string{"p/m"}, OverflowTurn: 3, OverflowCount: 1, OverflowSeq: 900}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeState(st.Encode()); err != nil {
			b.Fatal(err)
		}
	}
}
