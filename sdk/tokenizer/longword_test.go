package tokenizer

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// allocated returns the bytes allocated while f runs.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestLongPreTokenIsLinear: one unbroken pre-token of a megabyte is encoded
// in chunks (chunkSize), so the memory it takes is linear in its length:
// nothing for counting beyond a fixed scratch, and for encoding little more
// than the id slice. Before chunking, the BPE scratch alone grew by about
// 40 bytes per input byte. A fresh tokenizer is used so that the scratch is
// allocated, and counted, in the measured call.
func TestLongPreTokenIsLinear(t *testing.T) {
	const size = 1 << 20
	cases := []struct {
		name   string
		text   string
		tokens int // expected count, when known exactly
	}{
		{"random letters", longWord(size), 0},
		{"one letter", strings.Repeat("a", size), 0},
		{"spaces", strings.Repeat(" ", size), 0},
		// Three- and four-byte characters: chunks are cut at character
		// boundaries, so each character stays the token(s) it is alone.
		{"cjk", strings.Repeat("中", size/3), size / 3},
		{"emoji", strings.Repeat("😀", size/4), 2 * (size / 4)},
	}
	m := DeepSeekV3().m
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := float64(len(tc.text))
			var count int
			countAlloc := allocated(func() { count = newTokenizer("t", m).Count(tc.text) })
			var ids []int
			encodeAlloc := allocated(func() { ids = newTokenizer("t", m).Encode(tc.text) })
			t.Logf("%d bytes, %d tokens: count %.2f, encode %.2f bytes allocated per input byte",
				len(tc.text), count, float64(countAlloc)/n, float64(encodeAlloc)/n)
			require.Less(t, float64(countAlloc)/n, 1.0, "Count allocates less than one byte per input byte")
			require.Less(t, float64(encodeAlloc)/n, 20.0, "Encode allocates less than 20 bytes per input byte")
			require.Len(t, ids, count)
			if tc.tokens > 0 {
				require.Equal(t, tc.tokens, count)
			}
			require.Equal(t, tc.text, newTokenizer("t", m).Decode(ids))
		})
	}
}

// TestChunkCuts: a pre-token longer than chunkSize encodes as its chunks
// do, each cut at the last character boundary at or before chunkSize bytes.
func TestChunkCuts(t *testing.T) {
	tok := DeepSeekV3()
	cases := []struct {
		name  string
		piece string
		cuts  []int // chunk lengths
	}{
		{"ascii", longWord(2*chunkSize + 100), []int{chunkSize, chunkSize, 100}},
		{"exactly one chunk", longWord(chunkSize), []int{chunkSize}},
		// "é中" is 5 bytes and 4096 = 5*819 + 1: byte 4096 continues an
		// "é", so the cut backs off to where it starts.
		{"two- and three-byte characters", strings.Repeat("é中", 2000), []int{4095, 4095, 1810}},
		{"four-byte characters", strings.Repeat("😀", 1500), []int{4096, 1904}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			whole := &encoder{m: tok.m}
			whole.bpe(tc.piece)
			var want []int
			rest := tc.piece
			for _, n := range tc.cuts {
				one := &encoder{m: tok.m}
				one.bpePiece(rest[:n])
				want = append(want, one.out...)
				rest = rest[n:]
			}
			require.Empty(t, rest, "the cuts cover the piece")
			require.Equal(t, want, whole.out)
		})
	}
}
