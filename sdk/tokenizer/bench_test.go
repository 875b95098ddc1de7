package tokenizer

import (
	"strings"
	"testing"
)

// benchTexts builds the benchmark inputs from the oracle corpus: English
// prose, Chinese/Japanese/Korean, source code and JSON, and all of them
// mixed.
func benchTexts(b *testing.B) map[string]string {
	b.Helper()
	groups := map[string][]string{}
	for _, c := range loadCorpus(b) {
		switch c.Kind {
		case "prose":
			groups["english"] = append(groups["english"], c.Text)
		case "cjk":
			groups["cjk"] = append(groups["cjk"], c.Text)
		case "code", "json":
			groups["code"] = append(groups["code"], c.Text)
		}
	}
	out := map[string]string{}
	var mixed []string
	for name, g := range groups {
		out[name] = strings.Join(g, "\n")
		mixed = append(mixed, g...)
	}
	// Interleave deterministically so the mix is not three blocks.
	var sb strings.Builder
	for i := range mixed {
		sb.WriteString(mixed[(i*7919)%len(mixed)])
		sb.WriteByte('\n')
	}
	out["mixed"] = sb.String()
	return out
}

var benchNames = []string{"mixed", "english", "cjk", "code"}

func BenchmarkEncode(b *testing.B) {
	tok := DeepSeekV3()
	texts := benchTexts(b)
	for _, name := range benchNames {
		text := texts[name]
		b.Run(name, func(b *testing.B) {
			n := len(tok.Encode(text))
			b.SetBytes(int64(len(text)))
			dst := make([]int, 0, n)
			b.ResetTimer()
			for b.Loop() {
				dst = tok.AppendEncode(dst[:0], text)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

func BenchmarkCount(b *testing.B) {
	tok := DeepSeekV3()
	texts := benchTexts(b)
	for _, name := range benchNames {
		text := texts[name]
		b.Run(name, func(b *testing.B) {
			n := tok.Count(text)
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for b.Loop() {
				tok.Count(text)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkCountShort is the per-call cost for a short chat message.
func BenchmarkCountShort(b *testing.B) {
	tok := DeepSeekV3()
	text := "Can you summarize the last three commits and tell me which tests failed?"
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Count(text)
	}
}

// BenchmarkLoad is the first-use cost of the embedded data.
func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		if _, err := loadModel(deepseekData); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHeuristic(b *testing.B) {
	text := benchTexts(b)["mixed"]
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		HeuristicCount(text)
	}
}

// longWord is n bytes of one unbroken word of pseudo-random lowercase
// letters (fixed seed): a single pre-token.
func longWord(n int) string {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = 'a' + byte(x%26)
	}
	return string(b)
}

// BenchmarkLongWord encodes one long unbroken word at two sizes: time and
// memory per byte stay the same as the word grows (see chunkSize).
func BenchmarkLongWord(b *testing.B) {
	tok := DeepSeekV3()
	for _, size := range []struct {
		name string
		n    int
	}{{"1MiB", 1 << 20}, {"4MiB", 4 << 20}} {
		text := longWord(size.n)
		b.Run(size.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				tok.Encode(text)
			}
		})
	}
}
