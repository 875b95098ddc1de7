package openai

import (
	"bufio"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"os"
	"slices"
	"sync"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/sdk/tokenizer"
)

type corpusLine struct {
	Kind  string `json:"k"`
	Text  string `json:"t"`
	Bytes string `json:"b"`
}

func readGzipLines(t testing.TB, path string, each func(line []byte)) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		each(sc.Bytes())
	}
	require.NoError(t, sc.Err())
}

// TestOracle compares both encodings with the official tiktoken (npm
// tiktoken 1.0.22) on the DeepSeek oracle corpus inputs.
func TestOracle(t *testing.T) {
	var inputs []string
	readGzipLines(t, "../testdata/oracle/corpus.jsonl.gz", func(line []byte) {
		var c corpusLine
		require.NoError(t, json.Unmarshal(line, &c))
		in := c.Text
		if c.Bytes != "" {
			raw, err := base64.StdEncoding.DecodeString(c.Bytes)
			require.NoError(t, err)
			in = string(raw)
		}
		inputs = append(inputs, in)
	})
	var want []map[string][]int
	readGzipLines(t, "testdata/expected.jsonl.gz", func(line []byte) {
		var row map[string][]int
		require.NoError(t, json.Unmarshal(line, &row))
		want = append(want, row)
	})
	require.Len(t, want, len(inputs))
	require.GreaterOrEqual(t, len(inputs), 2000)
	for _, enc := range []*Encoding{O200kBase, Cl100kBase} {
		t.Run(enc.Name(), func(t *testing.T) {
			require.NoError(t, enc.Load())
			exact, newer, differ := 0, 0, 0
			for i, in := range inputs {
				got := enc.Encode(in)
				exp := want[i][enc.Name()]
				same := slices.Equal(got, exp) || (len(got) == 0 && len(exp) == 0)
				if knownToGo(in) {
					if !same {
						t.Fatalf("case %d %q:\n got  %v\n want %v", i, in, got, exp)
					}
					require.Equal(t, len(exp), enc.Count(in))
					exact++
					continue
				}
				// Text with code points newer than Go's Unicode tables may be
				// split differently; the count must stay close.
				newer++
				if !same {
					differ++
				}
				require.InDelta(t, len(exp), len(got), 1+0.05*float64(len(exp)), "case %d %q", i, in)
			}
			require.Greater(t, exact, 3000)
			t.Logf("%d cases exact; %d hold code points newer than Unicode %s, %d of them differ", exact, newer, unicode.Version, differ)
		})
	}
}

// knownToGo reports whether every code point of s is assigned in Go's
// Unicode tables, which the library's regexp engine uses.
func knownToGo(s string) bool {
	for _, r := range tokenizer.Sanitize(s) {
		if !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.C) || unicode.Is(unicode.Cn, r) {
			return false
		}
	}
	return true
}

func TestKnown(t *testing.T) {
	text := "Hello world, 你好！ <|endoftext|>"
	require.Equal(t, []int{13225, 2375, 11, 220, 177519, 3393, 464, 91, 419, 1440, 919, 91, 29}, O200kBase.Encode(text))
	require.Equal(t, []int{9906, 1917, 11, 220, 57668, 53901, 6447, 83739, 8862, 728, 428, 91, 29}, Cl100kBase.Encode(text))
	require.Equal(t, text, O200kBase.Decode(O200kBase.Encode(text)))
	require.Equal(t, "o200k_base", O200kBase.Name())
	require.Equal(t, "cl100k_base", Cl100kBase.Name())
	// Invalid UTF-8 follows tokenizer.Sanitize.
	require.Equal(t, O200kBase.Encode(tokenizer.Sanitize("a\xe2\x82b")), O200kBase.Encode("a\xe2\x82b"))
}

func TestConcurrent(t *testing.T) {
	texts := []string{"The quick brown fox.", "中文测试", "func main() {}\n"}
	want := make([]int, len(texts))
	for i, s := range texts {
		want[i] = O200kBase.Count(s)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				k := (g + i) % len(texts)
				if n := O200kBase.Count(texts[k]); n != want[k] {
					t.Errorf("concurrent Count(%q) = %d, want %d", texts[k], n, want[k])
					return
				}
			}
		}()
	}
	wg.Wait()
}
