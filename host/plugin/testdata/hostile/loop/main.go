// Command loop is a hostile test plugin: it loops forever without yielding.
// It behaves on ordinary requests and misbehaves when the route's model is
// "hostile", so tests can check both the failure and the recovery.
package main

import "github.com/weirhost/weir/sdk"

type prompt struct{}

func (prompt) RenderPrompt(h *sdk.Host, req *sdk.RenderRequest) (string, error) {
	if req.Route.Model == "hostile" {
		for {
		}
	}
	return "ok", nil
}

func init() {
	sdk.Register(sdk.Plugin{Name: "loop", SystemPrompt: prompt{}})
}

func main() {}
