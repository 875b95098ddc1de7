package tokenizer

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

func TestEncodeKnown(t *testing.T) {
	tok := DeepSeekV3()
	tests := []struct {
		in   string
		want []int
	}{
		{"", []int{}},
		{"Hello world", []int{19923, 2058}},
		{"abc123456def", []int{32372, 6895, 18009, 3465}},
		{"  x\n\n  y ", []int{223, 1527, 271, 223, 383, 223}},
		{"<｜User｜>hi<|EOT|>x<｜begin▁of▁sentence｜>", []int{128803, 6366, 128805, 90, 0}},
		{"你好世界こんにちは", []int{30594, 3427, 4549, 7245, 2298, 12457, 2841}},
		{"ゟ・・カ゛", []int{665, 256, 35507, 15961, 665, 252}},
		{"\xed\xa0\x80x", []int{29429, 90}}, // three U+FFFD, as the oracle sees it
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, tok.Encode(tc.in), "%q", tc.in)
		require.Equal(t, len(tc.want), tok.Count(tc.in), "%q", tc.in)
	}
}

func TestAppendEncode(t *testing.T) {
	tok := DeepSeekV3()
	dst := []int{-1}
	got := tok.AppendEncode(dst, "Hello world")
	require.Equal(t, []int{-1, 19923, 2058}, got)
}

func TestAddedTokens(t *testing.T) {
	tok := DeepSeekV3()
	id, ok := tok.AddedTokenID("<｜User｜>")
	require.True(t, ok)
	require.Equal(t, 128803, id)
	require.False(t, tok.IsSpecial(id), "chat markers are not special")
	require.True(t, tok.IsSpecial(0), "BOS is special")
	_, ok = tok.AddedTokenID("<｜User")
	require.False(t, ok)
	// Added tokens are split out of text whether special or not.
	require.Equal(t, []int{0, 128803}, tok.Encode("<｜begin▁of▁sentence｜><｜User｜>"))
	require.Equal(t, 128815, tok.VocabSize())
}

func TestDecode(t *testing.T) {
	tok := DeepSeekV3()
	require.Equal(t, "Hello world", tok.Decode([]int{19923, 2058}))
	require.Equal(t, "<｜User｜>", tok.Decode([]int{128803}))
	require.Equal(t, "a\uFFFDb\uFFFD", tok.Decode([]int{67, -5, 68, 1 << 20}))
	require.Equal(t, "", tok.Decode(nil))
	b, ok := tok.TokenBytes(19923)
	require.True(t, ok)
	require.Equal(t, "Hello", b)
	_, ok = tok.TokenBytes(128900)
	require.False(t, ok)
}

func TestSanitize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"\x80", "\uFFFD"},
		{"a\xffb", "a\uFFFDb"},
		{"\xe2\x82", "\uFFFD"},     // truncated 3-byte sequence: one
		{"\xe2\x82x", "\uFFFDx"},   // same, followed by ASCII
		{"\xf0\x9f\x98", "\uFFFD"}, // truncated 4-byte sequence: one
		{"\xf0\x9f\x98\xf0\x9f\x98\x80", "\uFFFD😀"},
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"}, // surrogate: not a valid prefix
		{"\xe0\x80\x80", "\uFFFD\uFFFD\uFFFD"}, // overlong
		{"\xc0\x80", "\uFFFD\uFFFD"},
		{"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"}, // above U+10FFFF
		{"\xf5\x80", "\uFFFD\uFFFD"},
		{"\xe1\x80\xc0", "\uFFFD\uFFFD"},
		{"\uFFFD", "\uFFFD"},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, Sanitize(tc.in), "%q", tc.in)
	}
}

// jsSpace lists the code points of JavaScript's \s.
var jsSpace = []rune{'\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004,
	0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF}

// TestClassTable checks the generated table against Go's Unicode tables for
// every code point Go knows (the reference engine's Unicode is newer, so
// unassigned code points are not compared) and against JavaScript's \s.
func TestClassTable(t *testing.T) {
	goClass := func(r rune) uint8 {
		switch {
		case unicode.IsLetter(r):
			return clsLetter
		case unicode.IsMark(r):
			return clsMark
		case unicode.IsNumber(r):
			return clsNumber
		case unicode.IsPunct(r):
			return clsPunct
		case unicode.IsSymbol(r):
			return clsSymbol
		}
		return clsOther
	}
	checked := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		got := classOf(r)
		if isSpace := slices.Contains(jsSpace, r); isSpace != (got == clsSpace) {
			t.Fatalf("%U: class %d, JavaScript \\s %v", r, got, isSpace)
		}
		if got == clsSpace {
			continue
		}
		if unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.Cc, unicode.Cf, unicode.Co) {
			if want := goClass(r); got != want {
				t.Fatalf("%U: class %d, Go's unicode tables say %d", r, got, want)
			}
			checked++
		}
	}
	require.Greater(t, checked, 280000)
}

// TestBPEVariants checks that the heap-based merge loop used for long
// pieces agrees with the quadratic one.
func TestBPEVariants(t *testing.T) {
	tok := DeepSeekV3()
	rng := rand.New(rand.NewPCG(1, 2))
	alphabets := []string{"ab", "abc ", "aaaa", "the quick brown fox", "中文字", "0123456789", "\n \t"}
	for i := 0; i < 400; i++ {
		letters := []rune(alphabets[i%len(alphabets)])
		var sb strings.Builder
		n := 2 + rng.IntN(300)
		for sb.Len() < n {
			sb.WriteRune(letters[rng.IntN(len(letters))])
		}
		piece := sb.String()
		quad := &encoder{m: tok.m}
		quad.bpeQuadratic(piece)
		heap := &encoder{m: tok.m}
		heap.bpeHeap(piece)
		require.Equal(t, quad.out, heap.out, "piece %q", piece)
	}
}

func TestConcurrentUse(t *testing.T) {
	tok := DeepSeekV3()
	texts := []string{"Hello world, 12345!", "中文和English混合", strings.Repeat("long text ", 100), "<｜User｜>x"}
	want := make([][]int, len(texts))
	for i, s := range texts {
		want[i] = tok.Encode(s)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				k := (g + i) % len(texts)
				if !slices.Equal(tok.Encode(texts[k]), want[k]) || tok.Count(texts[k]) != len(want[k]) {
					errs <- texts[k]
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for s := range errs {
		t.Errorf("concurrent encode of %q differs", s)
	}
}

func TestLoadModelErrors(t *testing.T) {
	raw := gunzip(t, deepseekData)
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"not gzip", []byte("not gzip"), "tokenizer data: decompress"},
		{"bad magic", gzipBytes(t, []byte("NOTWEIR1 and more")), "bad magic"},
		{"truncated", gzipBytes(t, raw[:len(raw)/2]), "truncated"},
		{"trailing", gzipBytes(t, append(append([]byte{}, raw...), 0)), "1 trailing bytes"},
	}
	for _, tc := range tests {
		_, err := loadModel(tc.data)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
	m, err := loadModel(deepseekData)
	require.NoError(t, err)
	require.Equal(t, int32(259), m.base)
	require.Equal(t, 128815, len(m.off)-1)
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	out, err := io.ReadAll(zr)
	require.NoError(t, err)
	return out
}

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}
