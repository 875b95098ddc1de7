package tokenizer

import (
	"strings"
	"sync"
)

// Tokenizer is a byte-level BPE tokenizer. It is safe for concurrent use.
type Tokenizer struct {
	name string
	m    *model
	pool sync.Pool // *encoder
}

var (
	deepseekOnce sync.Once
	deepseek     *Tokenizer
)

// DeepSeekV3 returns the DeepSeek V3 tokenizer. The embedded data is
// decoded on the first call (a few milliseconds); later calls return the
// same value.
func DeepSeekV3() *Tokenizer {
	deepseekOnce.Do(func() {
		m, err := loadModel(deepseekData)
		if err != nil {
			// The data is embedded at build time and checked by the tests.
			panic("tokenizer: embedded DeepSeek V3 data is unusable: " + err.Error())
		}
		deepseek = newTokenizer("deepseek-v3", m)
	})
	return deepseek
}

func newTokenizer(name string, m *model) *Tokenizer {
	t := &Tokenizer{name: name, m: m}
	t.pool.New = func() any { return &encoder{m: m} }
	return t
}

// Name returns the tokenizer's name, "deepseek-v3".
func (t *Tokenizer) Name() string { return t.name }

// Encode returns the token ids of text, added tokens in the text included
// (no BOS or other framing is added). Invalid UTF-8 is first replaced as
// Sanitize describes.
func (t *Tokenizer) Encode(text string) []int {
	return t.AppendEncode(make([]int, 0, len(text)/4+8), text)
}

// AppendEncode appends the token ids of text to dst and returns the
// extended slice.
func (t *Tokenizer) AppendEncode(dst []int, text string) []int {
	e := t.pool.Get().(*encoder)
	e.out, e.countOnly = dst, false
	e.run(Sanitize(text))
	dst = e.out
	e.out = nil
	t.pool.Put(e)
	return dst
}

// Count returns len(Encode(text)) without building the id list.
func (t *Tokenizer) Count(text string) int {
	e := t.pool.Get().(*encoder)
	e.count, e.countOnly = 0, true
	e.run(Sanitize(text))
	n := e.count
	t.pool.Put(e)
	return n
}

// Decode returns the bytes the ids stand for, concatenated: vocabulary
// tokens yield their raw bytes (so a multi-byte character split across ids
// decodes correctly only when all its ids are present), added tokens their
// text. An id outside the vocabulary yields U+FFFD. No clean-up of spaces is
// applied, so Decode(Encode(s)) == Sanitize(s).
func (t *Tokenizer) Decode(ids []int) string {
	var b strings.Builder
	n := 0
	for _, id := range ids {
		n += len(t.m.token(id))
	}
	b.Grow(n)
	for _, id := range ids {
		if tok := t.m.token(id); len(tok) > 0 {
			b.Write(tok)
		} else {
			b.WriteString("\uFFFD")
		}
	}
	return b.String()
}

// TokenBytes returns the bytes of one id and whether the id exists.
func (t *Tokenizer) TokenBytes(id int) (string, bool) {
	tok := t.m.token(id)
	return string(tok), len(tok) > 0
}

// AddedTokenID returns the id of an added token (such as "<｜User｜>") and
// whether content is one.
func (t *Tokenizer) AddedTokenID(content string) (int, bool) {
	id, ok := t.m.added[content]
	return int(id), ok
}

// IsSpecial reports whether id is an added token marked special in the
// tokenizer data (for DeepSeek V3: BOS, EOS, padding, <|EOT|> and the
// place-holder tokens; the chat and tool markers are not special).
func (t *Tokenizer) IsSpecial(id int) bool {
	return t.m.special[int32(id)]
}

// VocabSize returns one more than the largest valid id.
func (t *Tokenizer) VocabSize() int { return len(t.m.off) - 1 }
