package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/require"
)

func TestUTF16Len(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"héllo", 5},
		{"中文", 2},
		{"😀", 2},
		{"a😀b", 4},
		{"👨‍👩‍👧", 8},
		{"\x80", 1},          // lone continuation byte
		{"\xe2\x82", 1},      // truncated sequence: one U+FFFD
		{"\xf0\x9f\x98x", 2}, // truncated emoji then x
		{"\xed\xa0\x80", 3},  // encoded surrogate: three U+FFFD
		{"\xc0\x80", 2},      // overlong
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, UTF16Len(tc.in), "%q", tc.in)
		require.Equal(t, len(utf16.Encode([]rune(Sanitize(tc.in)))), UTF16Len(tc.in), "%q", tc.in)
	}
}

func TestHeuristicCount(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{"12345678", 2},
		{"😀😀", 1},  // 4 UTF-16 units
		{"😀😀a", 2}, // 5 units
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, HeuristicCount(tc.in), "%q", tc.in)
		require.Equal(t, tc.want, Heuristic.Count(tc.in), "%q", tc.in)
	}
	require.Equal(t, "heuristic", Heuristic.Name())
}

func TestUTF16LenLongASCIIRuns(t *testing.T) {
	for _, s := range []string{"", "abcdefg", "abcdefgh", "abcdefghi", strings.Repeat("x", 1000) + "é" + strings.Repeat("y", 13),
		"é" + strings.Repeat("z", 17), strings.Repeat("ab😀", 9), strings.Repeat("12345678", 3) + "\xff"} {
		require.Equal(t, len(utf16.Encode([]rune(Sanitize(s)))), UTF16Len(s), "%q", s)
	}
}
