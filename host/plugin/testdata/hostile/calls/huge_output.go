package main

import (
	"strings"

	"github.com/weirhost/weir/sdk"
)

// hugePrompt answers with an output frame larger than the host accepts.
type hugePrompt struct{}

func (hugePrompt) RenderPrompt(h *sdk.Host, req *sdk.RenderRequest) (string, error) {
	if req.Route.Model == "hostile" {
		return strings.Repeat("x", 5<<20), nil
	}
	return "ok", nil
}

func init() {
	sdk.Register(sdk.Plugin{Name: "huge-output", SystemPrompt: hugePrompt{}})
}
