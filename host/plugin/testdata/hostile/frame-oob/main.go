// Command frame-oob is a hostile test plugin written against the raw ABI (the SDK
// would not allow it): its output frame runs past the end of linear memory.
// It answers init, describe and ordinary prompt.render requests correctly
// and misbehaves when the route's model is "hostile".
package main

import (
	"unsafe"

	"github.com/weirhost/weir/sdk/abi"
)

var (
	input = make([]byte, 64<<10)
	out   []byte
)

//go:wasmexport weir_abi_version
func weirABIVersion() uint32 { return abi.Major }

//go:wasmexport weir_input
func weirInput(size uint32) uint32 {
	if int(size) > len(input) {
		input = make([]byte, size)
	}
	return uint32(uintptr(unsafe.Pointer(&input[0])))
}

//go:wasmexport weir_call
func weirCall(method, n uint32) uint64 {
	switch abi.Method(method) {
	case abi.MethodInit:
		return frame(nil)
	case abi.MethodDescribe:
		d := abi.Description{Name: "frame-oob", Kinds: []abi.Kind{abi.KindSystemPrompt}}
		return frame(d.Encode(nil))
	}
	var req abi.RenderRequest
	if err := req.Decode(input[:n]); err != nil || req.Route.Model != "hostile" {
		res := abi.RenderResult{Prompt: "ok"}
		return frame(res.Encode(nil))
	}
	// 16 bytes below the 64 MiB memory cap, 1 MiB long: past any memory the
	// guest can have, yet under the output size limit.
	return abi.PackOutput(64<<20-16, 1<<20)
}

func frame(result []byte) uint64 {
	r := abi.Response{Result: result}
	out = r.Encode(out[:0])
	return abi.PackOutput(uint32(uintptr(unsafe.Pointer(unsafe.SliceData(out)))), uint32(len(out)))
}

func main() {}
