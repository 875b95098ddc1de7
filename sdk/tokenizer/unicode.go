package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// Character classes used by the pre-tokenizer. They are the classes the
// reference regex engine (JavaScript, Unicode 17.0) assigns: \p{L}, \p{M},
// \p{N}, \p{P}, \p{S} and \s, which are pairwise disjoint, plus "other".
// Keep in sync with internal/gen.
const (
	clsOther = iota
	clsLetter
	clsMark
	clsNumber
	clsPunct
	clsSymbol
	clsSpace
)

const classBlockBits = 7

// classOf returns the pre-tokenizer class of r (a valid, non-surrogate code
// point).
func classOf(r rune) uint8 {
	if r < utf8.RuneSelf {
		return asciiClass[r]
	}
	return classStage2[int(classStage1[r>>classBlockBits])<<classBlockBits|int(r&(1<<classBlockBits-1))]
}

// asciiClass is the class of each ASCII byte, for the hot loops.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for c := range t {
		t[c] = classStage2[int(classStage1[0])<<classBlockBits|c]
	}
	return t
}()

// decodeAt returns the code point at s[i] and its width. s must be valid
// UTF-8 (the encoder only sees Sanitize output) and i < len(s), so no
// validation is repeated here.
func decodeAt(s string, i int) (rune, int) {
	c := s[i]
	switch {
	case c < 0x80:
		return rune(c), 1
	case c < 0xE0:
		return rune(c&0x1F)<<6 | rune(s[i+1]&0x3F), 2
	case c < 0xF0:
		return rune(c&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F), 3
	}
	return rune(c&0x07)<<18 | rune(s[i+1]&0x3F)<<12 | rune(s[i+2]&0x3F)<<6 | rune(s[i+3]&0x3F), 4
}

// Sanitize returns s with every maximal invalid UTF-8 subsequence replaced
// by U+FFFD, exactly as the WHATWG TextDecoder (and so the reference
// encoder's input) decodes bytes: a truncated but otherwise well-formed
// prefix of a multi-byte sequence becomes one U+FFFD, any other invalid byte
// becomes one U+FFFD each. Valid input is returned unchanged without
// copying.
func Sanitize(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		j := i
		for j < len(s) {
			if s[j] < utf8.RuneSelf {
				j++
				continue
			}
			r, w := utf8.DecodeRuneInString(s[j:])
			if r == utf8.RuneError && w == 1 {
				break
			}
			j += w
		}
		b.WriteString(s[i:j])
		if j == len(s) {
			break
		}
		b.WriteString("\uFFFD")
		i = j + invalidLen(s[j:])
	}
	return b.String()
}

// invalidLen returns how many bytes at the start of s (which does not start
// with a valid UTF-8 sequence) one U+FFFD replaces: the lead byte plus the
// continuation bytes that still form a valid prefix (WHATWG "maximal
// subpart").
func invalidLen(s string) int {
	c := s[0]
	need := 0
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(s); n++ {
		if b := s[n]; b < lo || b > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return n
}
