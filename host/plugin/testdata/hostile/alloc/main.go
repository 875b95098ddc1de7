// Command alloc is a hostile test plugin: it allocates until memory runs out.
// It behaves on ordinary requests and misbehaves when the route's model is
// "hostile", so tests can check both the failure and the recovery.
package main

import "github.com/weirhost/weir/sdk"

type prompt struct{}

func (prompt) RenderPrompt(h *sdk.Host, req *sdk.RenderRequest) (string, error) {
	if req.Route.Model == "hostile" {
		for {
			keep = append(keep, make([]byte, 1<<20))
		}
	}
	return "ok", nil
}

func init() {
	sdk.Register(sdk.Plugin{Name: "alloc", SystemPrompt: prompt{}})
}

func main() {}

var keep [][]byte
