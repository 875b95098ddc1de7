// Command import-socket is a hostile test plugin: it imports a WASI socket function, which the host refuses at load.
// It behaves on ordinary requests and misbehaves when the route's model is
// "hostile", so tests can check both the failure and the recovery.
package main

import (
	"unsafe"

	"github.com/weirhost/weir/sdk"
)

type prompt struct{}

func (prompt) RenderPrompt(h *sdk.Host, req *sdk.RenderRequest) (string, error) {
	if req.Route.Model == "hostile" {
		var fd uint32
		return "", errno(sockAccept(3, 0, unsafe.Pointer(&fd)))
	}
	return "ok", nil
}

func init() {
	sdk.Register(sdk.Plugin{Name: "import-socket", SystemPrompt: prompt{}})
}

func main() {}

//go:wasmimport wasi_snapshot_preview1 sock_accept
func sockAccept(fd int32, flags int32, result unsafe.Pointer) uint32

type errno uint32

func (e errno) Error() string { return "errno" }
