// Command exit is a hostile test plugin: it exits the process from inside a call.
// It behaves on ordinary requests and misbehaves when the route's model is
// "hostile", so tests can check both the failure and the recovery.
package main

import (
	"os"

	"github.com/weirhost/weir/sdk"
)

type prompt struct{}

func (prompt) RenderPrompt(h *sdk.Host, req *sdk.RenderRequest) (string, error) {
	if req.Route.Model == "hostile" {
		os.Exit(3)
	}
	return "ok", nil
}

func init() {
	sdk.Register(sdk.Plugin{Name: "exit", SystemPrompt: prompt{}})
}

func main() {}
