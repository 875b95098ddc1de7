// Command echo is a minimal plugin used to test the build pipeline.
package main

import "github.com/weirhost/weir/sdk"

type prompt struct{}

func (prompt) RenderPrompt(_ *sdk.Host, req *sdk.RenderRequest) (string, error) {
	out := ""
	for _, s := range req.Sections {
		out += s.Text
	}
	return out, nil
}

func init() { sdk.Register(sdk.Plugin{Name: "echo", Version: "0.1.0", SystemPrompt: prompt{}}) }

func main() {}
