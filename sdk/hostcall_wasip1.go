//go:build wasip1

package sdk

import "unsafe"

//go:wasmimport weir surface_nodes
func weirSurfaceNodes(buf unsafe.Pointer, limit uint32) int32

//go:wasmimport weir message
func weirMessage(seq int64, buf unsafe.Pointer, limit uint32) int32

//go:wasmimport weir event
func weirEvent(seq int64, buf unsafe.Pointer, limit uint32) int32

//go:wasmimport weir generations
func weirGenerations(buf unsafe.Pointer, limit uint32) int32

//go:wasmimport weir header
func weirHeader(buf unsafe.Pointer, limit uint32) int32

//go:wasmimport weir measure
func weirMeasure(buf unsafe.Pointer, limit uint32) int32

//go:wasmimport weir summarize
func weirSummarize(req unsafe.Pointer, reqLen uint32, buf unsafe.Pointer, limit uint32) int32

//go:wasmimport weir count_tokens
func weirCountTokens(name unsafe.Pointer, nameLen uint32, text unsafe.Pointer, textLen uint32) int64

//go:wasmimport weir last_error
func weirLastError(buf unsafe.Pointer, limit uint32) int32

// wasmImports calls the host imports of package abi.
type wasmImports struct{}

func wasmHost() hostABI { return wasmImports{} }

func ptr(b []byte) (unsafe.Pointer, uint32) {
	if cap(b) == 0 {
		return nil, 0
	}
	return unsafe.Pointer(unsafe.SliceData(b)), uint32(len(b))
}

func sptr(s string) (unsafe.Pointer, uint32) {
	if len(s) == 0 {
		return nil, 0
	}
	return unsafe.Pointer(unsafe.StringData(s)), uint32(len(s))
}

func (wasmImports) surfaceNodes(buf []byte) int32 {
	p, n := ptr(buf)
	return weirSurfaceNodes(p, n)
}

func (wasmImports) message(seq int64, buf []byte) int32 {
	p, n := ptr(buf)
	return weirMessage(seq, p, n)
}

func (wasmImports) event(seq int64, buf []byte) int32 {
	p, n := ptr(buf)
	return weirEvent(seq, p, n)
}

func (wasmImports) generations(buf []byte) int32 {
	p, n := ptr(buf)
	return weirGenerations(p, n)
}

func (wasmImports) header(buf []byte) int32 {
	p, n := ptr(buf)
	return weirHeader(p, n)
}

func (wasmImports) measure(buf []byte) int32 {
	p, n := ptr(buf)
	return weirMeasure(p, n)
}

func (wasmImports) summarize(req, buf []byte) int32 {
	rp, rn := ptr(req)
	p, n := ptr(buf)
	return weirSummarize(rp, rn, p, n)
}

func (wasmImports) countTokens(tokenizer, text string) int64 {
	np, nn := sptr(tokenizer)
	tp, tn := sptr(text)
	return weirCountTokens(np, nn, tp, tn)
}

func (wasmImports) lastError(buf []byte) int32 {
	p, n := ptr(buf)
	return weirLastError(p, n)
}
