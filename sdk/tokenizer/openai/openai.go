// Package openai provides OpenAI's o200k_base and cl100k_base tokenizers as
// tokenizer.Counter values.
//
// The encoders come from github.com/pkoukk/tiktoken-go with the
// vocabularies embedded by github.com/pkoukk/tiktoken-go-loader: nothing is
// downloaded or cached on disk. The package is meant for the host: it adds
// about 7 MB of vocabulary to the binary and takes a large fraction of a
// second to load an encoding (tens of seconds under WebAssembly), so
// WebAssembly guests that only need DeepSeek V3 should import just the
// parent package.
//
// Text is encoded as ordinary text: special-token strings such as
// "<|endoftext|>" count as the characters they are made of, as in tiktoken's
// encode_ordinary. Invalid UTF-8 is first replaced by tokenizer.Sanitize,
// the same rule as the DeepSeek V3 tokenizer.
//
// Long runs: tiktoken-go's merge loop is quadratic in the length of a
// pre-token, so text is cut inside any run of more than 4,096 bytes of
// letters, of white space or of other non-digit characters (every 4,096
// bytes, moved back to a character boundary) and the parts are encoded on
// their own (see maxRun). Ordinary text has no such run and gets exactly
// tiktoken's ids.
package openai

import (
	"fmt"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/weirhost/weir/sdk/tokenizer"
)

// Encoding is one tiktoken encoding, loaded on first use. It is safe for
// concurrent use.
type Encoding struct {
	name string
	once sync.Once
	enc  *tiktoken.Tiktoken
	err  error
}

var (
	// O200kBase is the encoding of GPT-4o, GPT-4.1, o1, o3 and later models.
	O200kBase = &Encoding{name: tiktoken.MODEL_O200K_BASE}
	// Cl100kBase is the encoding of GPT-4 and GPT-3.5-turbo.
	Cl100kBase = &Encoding{name: tiktoken.MODEL_CL100K_BASE}
)

var (
	_ tokenizer.Counter = O200kBase
	_ tokenizer.Counter = Cl100kBase
)

// loaderOnce installs the offline loader before any encoding is built: the
// library's default loader would fetch the vocabulary over HTTP.
var loaderOnce sync.Once

// Name returns the encoding's name, e.g. "o200k_base".
func (e *Encoding) Name() string { return e.name }

// Load decodes the embedded vocabulary if that has not happened yet and
// reports whether it is usable. Encode and Count call it implicitly.
func (e *Encoding) Load() error {
	e.once.Do(func() {
		loaderOnce.Do(func() { tiktoken.SetBpeLoader(loader.NewOfflineLoader()) })
		e.enc, e.err = tiktoken.GetEncoding(e.name)
		if e.err != nil {
			e.err = fmt.Errorf("openai: load encoding %s: %w", e.name, e.err)
		}
	})
	return e.err
}

func (e *Encoding) mustLoad() *tiktoken.Tiktoken {
	if err := e.Load(); err != nil {
		// The vocabulary is embedded at build time and checked by the tests.
		panic(err)
	}
	return e.enc
}

// Encode returns the token ids of text.
func (e *Encoding) Encode(text string) []int {
	enc := e.mustLoad()
	text = tokenizer.Sanitize(text)
	var ids []int
	for start := 0; start < len(text); {
		end := nextCut(text, start)
		if start == 0 && end == len(text) {
			return enc.EncodeOrdinary(text)
		}
		ids = append(ids, enc.EncodeOrdinary(text[start:end])...)
		start = end
	}
	return ids
}

// maxRun is the longest run of letters, of white space, or of other
// characters that are not digits, that is encoded as one. tiktoken-go's
// merge loop takes time quadratic in the length of a pre-token (a 64 KiB
// word takes seconds), and such a run is one pre-token of both encodings,
// so text is cut inside any longer run, every maxRun bytes at a character
// boundary, and the parts are encoded on their own. Ordinary text has no
// such run and is encoded whole, exactly as tiktoken does; the ids of a
// longer run may differ from tiktoken's near the cuts.
const maxRun = 4096

// runClass is the class of r for maxRun.
func runClass(r rune) int {
	switch {
	case unicode.IsLetter(r) || unicode.IsMark(r):
		return 1
	case unicode.IsSpace(r):
		return 2
	case unicode.IsNumber(r):
		return 3 // digits form pre-tokens of at most three: never cut
	}
	return 4
}

// nextCut returns the end of the part of text that starts at start: the
// end of the text, or a cut maxRun bytes (less up to three, to end at a
// character) into a run of one class other than numbers.
func nextCut(text string, start int) int {
	runStart, class := start, 0
	for i := start; i < len(text); {
		r, w := utf8.DecodeRuneInString(text[i:])
		if c := runClass(r); c != class {
			runStart, class = i, c
		}
		if class != 3 && i+w-runStart > maxRun {
			if i == start { // a part is at least one character
				return i + w
			}
			return i
		}
		i += w
	}
	return len(text)
}

// Count returns the number of tokens of text.
func (e *Encoding) Count(text string) int {
	return len(e.Encode(text))
}

// Decode returns the bytes the ids stand for.
func (e *Encoding) Decode(ids []int) string {
	return e.mustLoad().Decode(ids)
}
