package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// encoder runs one encoding: added-token split, the three pre-tokenizer
// splits, then BPE on every pre-token. Output goes to out, or only into
// count when counting.
type encoder struct {
	m         *model
	out       []int
	count     int
	countOnly bool
	st        scratch
}

func (e *encoder) emit(id int32) {
	if e.countOnly {
		e.count++
		return
	}
	e.out = append(e.out, int(id))
}

// run encodes s, which must be valid UTF-8.
func (e *encoder) run(s string) {
	m := e.m
	start := 0
	for i := 0; i < len(s); {
		// Find the next position that may start an added token.
		if m.addedOnly != 0 {
			j := strings.IndexByte(s[i:], m.addedOnly)
			if j < 0 {
				break
			}
			i += j
		} else if !m.addedFirst[s[i]] {
			i++
			continue
		}
		if end, id := m.matchAdded(s, i); end > 0 {
			e.section(s[start:i])
			e.emit(id)
			start, i = end, end
			continue
		}
		i++
	}
	e.section(s[start:])
}

// matchAdded returns the end and id of the longest added token starting at
// s[i], or end 0.
func (m *model) matchAdded(s string, i int) (int, int32) {
	if i+1 < len(s) {
		p := int(s[i])<<8 | int(s[i+1])
		if m.addedPair[p/64]&(1<<(p%64)) == 0 && !m.addedShort {
			return 0, 0
		}
	} else if !m.addedShort {
		return 0, 0
	}
	for _, n := range m.addedLens {
		if i+n > len(s) {
			continue
		}
		if id, ok := m.added[s[i:i+n]]; ok {
			return i + n, id
		}
	}
	return 0, 0
}

// section applies the first two splits in one pass: runs of \p{N} are
// isolated in groups of up to three code points, then runs of
// [\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff] are isolated. The two sets are
// disjoint, so one scan finds the same boundaries as the two splits in turn.
func (e *encoder) section(s string) {
	gap := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c-'0' > 9 { // the only ASCII numbers are the digits
				i++
				continue
			}
		}
		r, w := decodeAt(s, i)
		switch {
		case isCJK(r):
			if gap < i {
				e.words(s[gap:i])
			}
			j := i + w
			for j < len(s) {
				r, w := decodeAt(s, j)
				if !isCJK(r) {
					break
				}
				j += w
			}
			e.words(s[i:j])
			i, gap = j, j
		case classOf(r) == clsNumber:
			if gap < i {
				e.words(s[gap:i])
			}
			j := i + w
			for n := 1; n < 3 && j < len(s); n++ {
				r, w := decodeAt(s, j)
				if classOf(r) != clsNumber {
					break
				}
				j += w
			}
			// A piece of numbers matches nothing in the last split.
			e.bpe(s[i:j])
			i, gap = j, j
		default:
			i += w
		}
	}
	if gap < len(s) {
		e.words(s[gap:])
	}
}

func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FA5) || (r >= 0x3040 && r <= 0x30FF)
}

// words applies the third split, the GPT-style pattern
//
//	[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
//	|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
//	| ?[\p{P}\p{S}]+[\r\n]*
//	|\s*[\r\n]+
//	|\s+(?!\S)
//	|\s+
//
// with the reference engine's leftmost-first alternation and backtracking.
// Text that no alternative matches (numbers, controls, format and
// unassigned code points) is kept as pieces between the matches.
func (e *encoder) words(s string) {
	for i := 0; i < len(s); {
		start, end := nextWord(s, i)
		if i < start {
			e.bpe(s[i:start])
		}
		if start < end {
			e.bpe(s[start:end])
		}
		i = end
	}
}

// nextWord returns the span of the pattern's first match at or after s[i],
// or an empty span at len(s) when there is none.
func nextWord(s string, i int) (int, int) {
	for i < len(s) {
		if end := matchWord(s, i); end > i {
			return i, end
		}
		_, w := decodeAt(s, i)
		i += w
	}
	return len(s), len(s)
}

func isASCIIPunct(c byte) bool {
	return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~')
}

func isASCIILetter(c byte) bool {
	return (c|0x20) >= 'a' && (c|0x20) <= 'z'
}

// matchWord returns the end of the pattern's match at s[i], or i when no
// alternative matches there.
func matchWord(s string, i int) int {
	c, w := decodeAt(s, i)
	cls := classOf(c)
	j := i + w // just after c
	if cls == clsLetter {
		// Only the second alternative can match at a letter.
		return scanClass2(s, j, clsLetter, clsMark)
	}
	var nc rune
	ncls := uint8(clsOther)
	if j < len(s) {
		nc, _ = decodeAt(s, j)
		ncls = classOf(nc)
	}
	// [punct][A-Za-z]+
	if c < 0x80 && isASCIIPunct(byte(c)) && j < len(s) && isASCIILetter(s[j]) {
		k := j + 1
		for k < len(s) && isASCIILetter(s[k]) {
			k++
		}
		return k
	}
	// [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
	if cls != clsPunct && cls != clsSymbol && c != '\r' && c != '\n' {
		if ncls == clsLetter || ncls == clsMark {
			return scanClass2(s, j, clsLetter, clsMark)
		}
		if cls == clsMark {
			return j
		}
	}
	// ' '?[\p{P}\p{S}]+[\r\n]*
	if cls == clsPunct || cls == clsSymbol || (c == ' ' && (ncls == clsPunct || ncls == clsSymbol)) {
		if c == ' ' {
			i = j
		}
		k := scanClass2(s, i, clsPunct, clsSymbol)
		for k < len(s) && (s[k] == '\r' || s[k] == '\n') {
			k++
		}
		return k
	}
	if cls != clsSpace {
		return i
	}
	// Whitespace run [i, q); lastStart is where its last code point begins.
	q, lastStart, lastNL := j, i, -1
	if c == '\r' || c == '\n' {
		lastNL = i
	}
	for q < len(s) {
		r, w := decodeAt(s, q)
		if classOf(r) != clsSpace {
			break
		}
		if r == '\r' || r == '\n' {
			lastNL = q
		}
		lastStart = q
		q += w
	}
	// \s*[\r\n]+ : up to and including the last line break of the run.
	if lastNL >= 0 {
		return lastNL + 1
	}
	// \s+(?!\S) : all of a run ending the text, else all but its last code point.
	if q == len(s) || lastStart > i {
		if q == len(s) {
			return q
		}
		return lastStart
	}
	// \s+
	return q
}

// scanClass2 returns the end of the run of code points of class a or b
// starting at s[i].
func scanClass2(s string, i int, a, b uint8) int {
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if cl := asciiClass[c]; cl != a && cl != b {
				break
			}
			i++
			continue
		}
		r, w := decodeAt(s, i)
		if cl := classOf(r); cl != a && cl != b {
			break
		}
		i += w
	}
	return i
}
