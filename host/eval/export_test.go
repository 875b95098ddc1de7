package eval

import (
	"github.com/weirhost/weir/host/llm"
	"github.com/weirhost/weir/sdk/tokenizer"
)

// Renderer renders requests for tests as the replay does, keeping the
// tools' text between requests.
type Renderer struct{ r renderer }

// Render returns the counting text of req rendered from the request
// (system, tools, text, base) and the same read back from its encoded body.
func (r *Renderer) Render(req *llm.Request) (got, want [4]string, err error) {
	rt, err := r.r.render(req)
	if err != nil {
		return got, want, err
	}
	body, err := llm.EncodeRequest(req)
	if err != nil {
		return got, want, err
	}
	wt, err := wirePrompt(body)
	return [4]string{rt.system, rt.tools, rt.text, rt.base}, [4]string{wt.system, wt.tools, wt.text, wt.base}, err
}

// PrefixEncoder is the replay's encoder of consecutive prompts, and the
// bytes it handed the tokenizer so far.
func PrefixEncoder(t *tokenizer.Tokenizer) (encode func(string) []int, encoded func() int) {
	p := newPrefixEncoder(t)
	return p.encode, func() int { return p.encoded }
}
