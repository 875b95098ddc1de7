package surface_test

import (
	"fmt"
	"testing"

	"github.com/weirhost/weir/surface"
)

// userLog returns a log of n appended user messages.
func userLog(b *testing.B, n int) *surface.Log {
	b.Helper()
	l := surface.New(surface.WithClock(func() int64 { return 1 }))
	ps := make([]surface.Proposal, n)
	for i := range ps {
		ps[i] = pUser(fmt.Sprintf("u%d", i), "some user text of a typical length for a message")
	}
	if _, err := l.AppendBatch(ps); err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkAppendReplace10k measures the fold of one single-node replace
// (Append of a replace) on a surface of 10,000 nodes. Each iteration
// replaces the node at position 5,000 (the previous iteration's
// replacement), so the surface keeps 10,000 nodes.
func BenchmarkAppendReplace10k(b *testing.B) {
	const n = 10_000
	l := userLog(b, n)
	target := int64(n / 2)
	p := pUser("r", "replacement")
	b.ReportAllocs()
	for b.Loop() {
		p.Op, p.Sources = surface.Replace(target, target), []int64{target}
		e, err := l.Append(p)
		if err != nil {
			b.Fatal(err)
		}
		target = e.Seq
	}
	if l.NodeCount() != n {
		b.Fatalf("surface has %d nodes", l.NodeCount())
	}
}

// BenchmarkAppendUser measures Append of a plain user message.
func BenchmarkAppendUser(b *testing.B) {
	l := surface.New(surface.WithClock(func() int64 { return 1 }))
	p := pUser("u", "a plain user message of typical length, asking the model to do something")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Append(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMessages1k measures Messages() on a surface of 1,000 nodes.
func BenchmarkMessages1k(b *testing.B) {
	l := userLog(b, 1_000)
	b.ReportAllocs()
	for b.Loop() {
		if len(l.Messages()) != 1_000 {
			b.Fatal("wrong message count")
		}
	}
}

// BenchmarkDecodeAssistant measures DecodeEvent of a typical assistant
// message line (text, reasoning and a tool call, usage and a short stream).
func BenchmarkDecodeAssistant(b *testing.B) {
	ln := []byte(`{"type":"assistant/message","seq":1234,"time":1700000000000,"data":{"turn":12,"step":3,` +
		`"message":{"id":"msg_01J8Z3","role":"assistant","source":{"kind":"model","provider":"deepseek","model":"deepseek-chat"},` +
		`"content":[{"type":"reasoning","text":"The user wants the file contents; read it first."},` +
		`{"type":"text","text":"Let me read the configuration file to see which options are set."},` +
		`{"type":"tool-call","id":"call_7","name":"read_file","arguments":"{\"path\":\"config/app.toml\"}"}]},` +
		`"stream":[[0,"start"],[12,"text","Let me read"],[40,"text"," the configuration file"],[95,"end"]],` +
		`"usage":{"inputTokens":1843,"outputTokens":96,"cacheReadTokens":12032}},"surfaceOp":"append"}`)
	if _, err := surface.DecodeEvent(ln); err != nil {
		b.Fatal(err)
	}
	b.Run("DecodeEvent", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(ln)))
		for b.Loop() {
			if _, err := surface.DecodeEvent(ln); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Decoder", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(ln)))
		var d surface.Decoder
		for b.Loop() {
			if _, err := d.Decode(ln); err != nil {
				b.Fatal(err)
			}
		}
	})
}
