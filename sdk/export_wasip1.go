//go:build wasip1

package sdk

import (
	"runtime"
	"unsafe"

	"github.com/weirhost/weir/sdk/abi"
)

// input is the guest-owned, grow-only input buffer the host writes into.
var input []byte

//go:wasmexport weir_abi_version
func weirABIVersion() uint32 { return abi.Major }

//go:wasmexport weir_input
func weirInput(size uint32) uint32 {
	if int(size) > cap(input) || cap(input) == 0 {
		input = make([]byte, max(int(size), 2*cap(input), 4096))
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(input))))
}

//go:wasmexport weir_call
func weirCall(method, n uint32) uint64 {
	var frame []byte
	switch {
	case registered == nil:
		frame = (&dispatcher{}).fail(abi.StatusUnsupported, "no plugin registered: call sdk.Register from an init function")
	case int(n) > cap(input):
		frame = registered.fail(abi.StatusBadRequest, "input length exceeds the buffer weir_input returned")
	default:
		frame = registered.call(abi.Method(method), input[:n])
	}
	runtime.Gosched()
	if len(frame) == 0 {
		return 0
	}
	return abi.PackOutput(uint32(uintptr(unsafe.Pointer(unsafe.SliceData(frame)))), uint32(len(frame)))
}

//lint:file-ignore U1000 the exports are called by the host through go:wasmexport, which staticcheck does not see
