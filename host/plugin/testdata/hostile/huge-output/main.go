// Command huge-output is a hostile test plugin: its output frame is larger than the host accepts.
// It behaves on ordinary requests and misbehaves when the route's model is
// "hostile", so tests can check both the failure and the recovery.
package main

import (
	"strings"

	"github.com/weirhost/weir/sdk"
)

type prompt struct{}

func (prompt) RenderPrompt(h *sdk.Host, req *sdk.RenderRequest) (string, error) {
	if req.Route.Model == "hostile" {
		return strings.Repeat("x", 5<<20), nil
	}
	return "ok", nil
}

func init() {
	sdk.Register(sdk.Plugin{Name: "huge-output", SystemPrompt: prompt{}})
}

func main() {}
