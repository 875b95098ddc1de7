package tokenizer

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// splitWords returns the pieces the third split cuts s into.
func splitWords(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		start, end := nextWord(s, i)
		if i < start {
			out = append(out, s[i:start])
		}
		if start < end {
			out = append(out, s[start:end])
		}
		i = end
	}
	return out
}

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Hello world", []string{"Hello", " world"}},
		{"  x", []string{" ", " x"}},           // \s+(?!\S) leaves the last space to the word
		{"x   ", []string{"x", "   "}},         // a run ending the text is kept whole
		{"x \ty", []string{"x", " ", "\ty"}},   // any non-newline space may prefix a word
		{"a \n b", []string{"a", " \n", " b"}}, // \s*[\r\n]+ ends at the last line break
		{"a\n\n  b", []string{"a", "\n\n", " ", " b"}},
		{"a\r\n \r\nb", []string{"a", "\r\n \r\n", "b"}},
		{"x \t\n", []string{"x", " \t\n"}},
		{"'s 'S", []string{"'s", " '", "S"}}, // [punct][A-Za-z]+ first
		{"don't", []string{"don", "'t"}},
		{"...abc", []string{"...", "abc"}},
		{"$1", []string{"$", "1"}},                     // numbers match nothing: a gap piece
		{" !!\r\n\r\nx", []string{" !!\r\n\r\n", "x"}}, // ' '?[\p{P}\p{S}]+[\r\n]*
		{"\x00\x00a", []string{"\x00", "\x00a"}},       // one prefix code point at most
		{"a\u0301b", []string{"a\u0301b"}},             // marks join letters
		{"\u0301", []string{"\u0301"}},
		{"\u3000x", []string{"\u3000x"}},       // JavaScript \s includes U+3000
		{"\u0085x", []string{"\u0085x"}},       // but not U+0085: an "other" prefix
		{"\ufeff x", []string{"\ufeff", " x"}}, // U+FEFF is \s there
		{"\r\nx", []string{"\r\n", "x"}},       // \r and \n never prefix a word
		{"é'é", []string{"é", "'", "é"}},       // [A-Za-z] is ASCII only
		{"a--b", []string{"a", "--", "b"}},
		{"a-b", []string{"a", "-b"}},
		{"😀😀 x", []string{"😀😀", " x"}}, // symbols run together
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, splitWords(tc.in), "%q", tc.in)
	}
}

func TestSectionSplits(t *testing.T) {
	tok := DeepSeekV3()
	// Digit groups of three and CJK runs are isolated before the pattern
	// runs, so the pieces on each side encode independently.
	for _, tc := range []struct{ in, sep string }{
		{"abc1234567def", "abc|123|456|7|def"},
		{"x١٢٣٤y", "x|١٢٣|٤|y"},
		{"Go语言很好", "Go|语言很好"},
		{"中文，English", "中文|，English"},
		{"カタカナ・テスト", "カタカナ・テスト"},
	} {
		var want []int
		for _, part := range strings.Split(tc.sep, "|") {
			want = append(want, tok.Encode(part)...)
		}
		require.Equal(t, want, tok.Encode(tc.in), "%q", tc.in)
	}
}
