// Command import-unknown is a hostile test plugin: it imports a host function the host does not provide, which the host refuses at load.
// It behaves on ordinary requests and misbehaves when the route's model is
// "hostile", so tests can check both the failure and the recovery.
package main

import "github.com/weirhost/weir/sdk"

type prompt struct{}

func (prompt) RenderPrompt(h *sdk.Host, req *sdk.RenderRequest) (string, error) {
	if req.Route.Model == "hostile" {
		launchMissiles()
	}
	return "ok", nil
}

func init() {
	sdk.Register(sdk.Plugin{Name: "import-unknown", SystemPrompt: prompt{}})
}

func main() {}

//go:wasmimport weir launch_missiles
func launchMissiles()
