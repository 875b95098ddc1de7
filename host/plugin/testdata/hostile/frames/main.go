// Command frames holds the hostile test plugins written against the raw
// ABI (the SDK would not allow them), selected by the name init gives:
//
//   - frame-oob: its output frame runs past the end of linear memory;
//   - garbage: its output frame is not a valid Response.
//
// Both answer init, describe and ordinary prompt.render requests correctly
// and misbehave when the route's model is "hostile". They share a module
// so that a test run builds and compiles one module instead of two.
package main

import (
	"unsafe"

	"github.com/weirhost/weir/sdk/abi"
)

var (
	input = make([]byte, 64<<10)
	out   []byte
	name  string // the plugin this instance serves, from init
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
		var req abi.InitRequest
		if err := req.Decode(input[:n]); err != nil {
			return fail(abi.StatusBadRequest, "decode init: "+err.Error())
		}
		if req.Plugin != "frame-oob" && req.Plugin != "garbage" {
			return fail(abi.StatusBadRequest, "no plugin "+req.Plugin+" in this module")
		}
		name = req.Plugin
		return frame(nil)
	case abi.MethodDescribe:
		d := abi.Description{Name: name, Kinds: []abi.Kind{abi.KindSystemPrompt}}
		return frame(d.Encode(nil))
	}
	var req abi.RenderRequest
	if err := req.Decode(input[:n]); err != nil || req.Route.Model != "hostile" {
		res := abi.RenderResult{Prompt: "ok"}
		return frame(res.Encode(nil))
	}
	if name == "frame-oob" {
		// 16 bytes below the 64 MiB memory cap, 1 MiB long: past any memory
		// the guest can have, yet under the output size limit.
		return abi.PackOutput(64<<20-16, 1<<20)
	}
	out = append(out[:0], 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02)
	return abi.PackOutput(uint32(uintptr(unsafe.Pointer(&out[0]))), uint32(len(out)))
}

func frame(result []byte) uint64 { return send(abi.Response{Result: result}) }

func fail(status abi.Status, msg string) uint64 {
	return send(abi.Response{Status: status, Error: msg})
}

func send(r abi.Response) uint64 {
	out = r.Encode(out[:0])
	return abi.PackOutput(uint32(uintptr(unsafe.Pointer(unsafe.SliceData(out)))), uint32(len(out)))
}

func main() {}
