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
package openai

import (
	"fmt"
	"sync"

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
	return e.mustLoad().EncodeOrdinary(tokenizer.Sanitize(text))
}

// Count returns the number of tokens of text.
func (e *Encoding) Count(text string) int {
	return len(e.Encode(text))
}

// Decode returns the bytes the ids stand for.
func (e *Encoding) Decode(ids []int) string {
	return e.mustLoad().Decode(ids)
}
