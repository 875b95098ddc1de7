package main

import (
	"os"

	"github.com/weirhost/weir/sdk"
)

// exitPrompt exits the process from inside a call.
type exitPrompt struct{}

func (exitPrompt) RenderPrompt(h *sdk.Host, req *sdk.RenderRequest) (string, error) {
	if req.Route.Model == "hostile" {
		os.Exit(3)
	}
	return "ok", nil
}

func init() {
	sdk.Register(sdk.Plugin{Name: "exit", SystemPrompt: exitPrompt{}})
}
