package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

// benchText mixes the English, CJK, code and JSON inputs of the corpus.
func benchText(b *testing.B) string {
	var parts []string
	readGzipLines(b, "../testdata/oracle/corpus.jsonl.gz", func(line []byte) {
		var c corpusLine
		if err := json.Unmarshal(line, &c); err != nil {
			b.Fatal(err)
		}
		switch c.Kind {
		case "prose", "cjk", "code", "json":
			parts = append(parts, c.Text)
		}
	})
	return strings.Join(parts, "\n")
}

func BenchmarkCount(b *testing.B) {
	text := benchText(b)
	for _, enc := range []*Encoding{O200kBase, Cl100kBase} {
		b.Run(enc.Name(), func(b *testing.B) {
			n := enc.Count(text)
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for b.Loop() {
				enc.Count(text)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkLoad is the first-use cost of an encoding: parsing the embedded
// vocabulary plus building the encoder (the library caches the parsed
// vocabulary, so the two steps are measured separately and add up).
func BenchmarkLoad(b *testing.B) {
	if err := O200kBase.Load(); err != nil { // installs the offline loader
		b.Fatal(err)
	}
	for _, name := range []string{tiktoken.MODEL_O200K_BASE, tiktoken.MODEL_CL100K_BASE} {
		b.Run(name+"/parse", func(b *testing.B) {
			for b.Loop() {
				if _, err := loader.NewOfflineLoader().LoadTiktokenBpe(name + ".tiktoken"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/build", func(b *testing.B) {
			for b.Loop() {
				if _, err := tiktoken.GetEncoding(name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLongWord encodes one long unbroken word at two sizes: the time
// per byte stays the same as the word grows (see maxRun).
func BenchmarkLongWord(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"64KiB", 64 << 10}, {"256KiB", 256 << 10}} {
		text := strings.Repeat("ab", size.n/2)
		b.Run(size.name, func(b *testing.B) {
			O200kBase.Count(text)
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				O200kBase.Count(text)
			}
		})
	}
}
