package main

import "github.com/weirhost/weir/sdk"

// panicPrompt panics.
type panicPrompt struct{}

func (panicPrompt) RenderPrompt(h *sdk.Host, req *sdk.RenderRequest) (string, error) {
	if req.Route.Model == "hostile" {
		panic("boom: hostile input")
	}
	return "ok", nil
}

func init() {
	sdk.Register(sdk.Plugin{Name: "panic", SystemPrompt: panicPrompt{}})
}
