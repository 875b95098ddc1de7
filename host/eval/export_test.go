package eval

import "github.com/weirhost/weir/host/llm"

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
