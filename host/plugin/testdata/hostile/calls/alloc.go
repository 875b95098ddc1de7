package main

import "github.com/weirhost/weir/sdk"

// allocPrompt allocates until memory runs out.
type allocPrompt struct{}

var keep [][]byte

func (allocPrompt) RenderPrompt(h *sdk.Host, req *sdk.RenderRequest) (string, error) {
	if req.Route.Model == "hostile" {
		for {
			keep = append(keep, make([]byte, 1<<20))
		}
	}
	return "ok", nil
}

func init() {
	sdk.Register(sdk.Plugin{Name: "alloc", SystemPrompt: allocPrompt{}})
}
