package eval

import (
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/weirhost/weir/sdk/tokenizer"
)

// prefixEncoder encodes the prompts of consecutive requests, each mostly
// the previous one plus a little, without encoding their common prefix
// again: the same ids as Tokenizer.Encode, at the cost of the new part.
//
// The tokenizer splits a text at its added tokens (the chat template's
// markers among them) before anything else, and encodes the pieces
// between them independently. So the ids of a text up to the end of an
// added token are those of any text that starts the same way far enough
// past it: far enough that the tokenizer's search for an added token at
// the marker's start reads the same bytes (maxAdded, the longest added
// token). The encoder keeps the previous prompt's ids and where each of
// its added tokens ends; a prompt that shares a prefix with it reuses the
// ids up to the last such end the shared prefix covers and encodes the
// rest. A text that is not valid UTF-8 (the tokenizer would first replace
// bytes, moving the offsets) is encoded whole.
type prefixEncoder struct {
	bpe  *tokenizer.Tokenizer
	info *vocabInfo
	text string
	ids  []int
	// spare is the ids slice of the call before last, which the next
	// call writes into: a caller may keep the ids of one call until the
	// call after the next.
	spare []int
	cuts  []cut // the ends of the added tokens of ids, in order
	// encoded counts the bytes handed to the tokenizer.
	encoded int
}

// cut is an added token of the previous prompt: its bytes text[start:end]
// and the number of ids up to it, itself included.
type cut struct{ start, end, n int }

// vocabInfo is what the encoder needs of a tokenizer's vocabulary.
type vocabInfo struct {
	length   []int32 // the bytes of each id
	added    []bool  // whether the id is an added token
	maxAdded int     // the longest added token, in bytes
}

var vocabs sync.Map // *tokenizer.Tokenizer → *vocabInfo

func vocabOf(t *tokenizer.Tokenizer) *vocabInfo {
	if v, ok := vocabs.Load(t); ok {
		return v.(*vocabInfo)
	}
	n := t.VocabSize()
	v := &vocabInfo{length: make([]int32, n), added: make([]bool, n)}
	for id := range n {
		s, ok := t.TokenBytes(id)
		if !ok {
			continue
		}
		v.length[id] = int32(len(s))
		if a, ok := t.AddedTokenID(s); ok && a == id {
			v.added[id] = true
			v.maxAdded = max(v.maxAdded, len(s))
		}
	}
	got, _ := vocabs.LoadOrStore(t, v)
	return got.(*vocabInfo)
}

func newPrefixEncoder(t *tokenizer.Tokenizer) *prefixEncoder {
	return &prefixEncoder{bpe: t, info: vocabOf(t)}
}

// encode returns the ids of text (tokenizer.Encode(text)) and keeps them
// for the next call. The slice is the caller's until the call after the
// next one, which reuses its memory.
func (p *prefixEncoder) encode(text string) []int {
	if !utf8.ValidString(text) {
		p.text, p.ids, p.cuts = "", nil, nil
		p.encoded += len(text)
		return p.bpe.Encode(text)
	}
	shared := commonStringPrefix(p.text, text)
	keep := -1 // the last reusable cut
	for i := len(p.cuts) - 1; i >= 0; i-- {
		if p.cuts[i].start+p.info.maxAdded <= shared {
			keep = i
			break
		}
	}
	ids := slices.Grow(p.spare[:0], len(text)/3+8)
	off, from := 0, 0
	if keep >= 0 {
		c := p.cuts[keep]
		ids = append(ids, p.ids[:c.n]...)
		off, from = c.end, c.n
		p.cuts = p.cuts[:keep+1]
	} else {
		p.cuts = p.cuts[:0]
	}
	ids = p.bpe.AppendEncode(ids, text[off:])
	p.encoded += len(text) - off
	for j := from; j < len(ids); j++ {
		id := ids[j]
		if id < 0 || id >= len(p.info.length) || p.info.length[id] == 0 {
			// Not a vocabulary token (Encode makes none): the offsets
			// after it are unknown, so no later cut is kept.
			break
		}
		end := off + int(p.info.length[id])
		if p.info.added[id] {
			p.cuts = append(p.cuts, cut{start: off, end: end, n: j + 1})
		}
		off = end
	}
	p.text, p.ids, p.spare = text, ids, p.ids
	return ids
}
