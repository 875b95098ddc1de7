package main

import "github.com/weirhost/weir/sdk"

// loopPrompt loops forever without yielding.
type loopPrompt struct{}

func (loopPrompt) RenderPrompt(h *sdk.Host, req *sdk.RenderRequest) (string, error) {
	if req.Route.Model == "hostile" {
		for {
		}
	}
	return "ok", nil
}

func init() {
	sdk.Register(sdk.Plugin{Name: "loop", SystemPrompt: loopPrompt{}})
}
