package openai

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNextCut(t *testing.T) {
	a := strings.Repeat("a", 5000)
	cases := []struct {
		name  string
		text  string
		start int
		want  int
	}{
		{"short text", "hello, world", 0, 12},
		{"run at the limit", strings.Repeat("a", maxRun), 0, maxRun},
		{"letter run over the limit", a, 0, maxRun},
		{"the rest of the run", a, maxRun, 5000},
		{"run after other text", "xy " + a, 0, 3 + maxRun},
		{"space run", strings.Repeat(" ", 5000) + "x", 0, maxRun},
		{"punctuation run", strings.Repeat("!", 5000), 0, maxRun},
		{"runs of different classes under the limit", strings.Repeat("a", 3000) + strings.Repeat(" ", 3000), 0, 6000},
		{"digits are never cut", strings.Repeat("7", 10000), 0, 10000},
		// 4096 = 3*1365 + 1: the cut moves back to the character start.
		{"three-byte characters", strings.Repeat("中", 2000), 0, 4095},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, nextCut(tc.text, tc.start))
		})
	}
}

// TestLongRun: a long unbroken word encodes as its parts do, and decodes
// back to itself. Before the cut, 64 KiB took seconds.
func TestLongRun(t *testing.T) {
	word := strings.Repeat("ab", 32<<10) + "cd efg"
	for _, enc := range []*Encoding{O200kBase, Cl100kBase} {
		t.Run(enc.Name(), func(t *testing.T) {
			ids := enc.Encode(word)
			var want []int
			for start := 0; start < len(word); {
				end := nextCut(word, start)
				want = append(want, enc.mustLoad().EncodeOrdinary(word[start:end])...)
				start = end
			}
			require.Equal(t, want, ids)
			require.Equal(t, word, enc.Decode(ids))
			require.Equal(t, len(ids), enc.Count(word))
		})
	}
}
