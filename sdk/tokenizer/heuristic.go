package tokenizer

import "unicode/utf8"

// Heuristic is the fixed estimator of the token meter (spec 12.1) at text
// level: ceil(UTF16Len(text)/4). The per-block and per-message constants
// (+4) are added by the callers that price blocks and messages.
var Heuristic Counter = heuristic{}

type heuristic struct{}

func (heuristic) Name() string          { return "heuristic" }
func (heuristic) Count(text string) int { return HeuristicCount(text) }

// HeuristicCount returns ceil(UTF16Len(s) / 4).
func HeuristicCount(s string) int {
	return (UTF16Len(s) + 3) / 4
}

// UTF16Len returns the length of s in UTF-16 code units, the length the
// reference (JavaScript) implementation measures: one unit per code point
// below U+10000, two above. Invalid UTF-8 is counted as Sanitize decodes
// it: one unit per U+FFFD.
func UTF16Len(s string) int {
	n := 0
	if utf8.ValidString(s) {
		i := 0
		// Eight ASCII bytes at a time are eight code units: one iteration
		// instead of eight, which matters most in a WebAssembly guest,
		// where every loop iteration pays the sandbox's termination check.
		for ; i+8 <= len(s); i += 8 {
			if loadString64(s, i)&0x8080808080808080 != 0 {
				break
			}
			n += 8
		}
		for ; i < len(s); i++ {
			c := s[i]
			// Count lead bytes; a 4-byte lead stands for a surrogate pair.
			if c < 0x80 || c >= 0xC0 {
				n++
				if c >= 0xF0 {
					n++
				}
			}
		}
		return n
	}
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			n++
			i += invalidLen(s[i:])
			continue
		case r >= 0x10000:
			n += 2
		default:
			n++
		}
		i += w
	}
	return n
}

// loadString64 reads the eight bytes of s at i, little-endian.
func loadString64(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}
