package sdk

import (
	"bytes"
	"errors"
	"slices"

	"github.com/weirhost/weir/sdk/abi"
)

// hostABI is the raw host import surface; one implementation calls the
// WebAssembly imports, tests substitute a fake.
type hostABI interface {
	surfaceNodes(buf []byte) int32
	message(seq int64, buf []byte) int32
	event(seq int64, buf []byte) int32
	generations(buf []byte) int32
	header(buf []byte) int32
	measure(buf []byte) int32
	summarize(req, buf []byte) int32
	countTokens(tokenizer, text string) int64
	lastError(buf []byte) int32
}

// Host gives a provider method typed access to the host queries. It is valid
// during the call it was passed to.
type Host struct {
	raw  hostABI
	buf  []byte // grow-only result buffer shared by all queries
	req  []byte // encoded summarize requests
	name string // the configured name, from init
}

// PluginName is the name the host configured the plugin under (sent at
// init; it may differ from Plugin.Name). The messages a plugin proposes
// must carry the source {"kind": "plugin", "plugin": PluginName()}: the
// host refuses any other.
func (h *Host) PluginName() string { return h.name }

// errResultGrowing reports a host whose answer kept outgrowing the buffer.
var errResultGrowing = errors.New("result size kept changing between attempts")

// query runs a (buf, limit) import until its result fits, growing the shared
// buffer as the host asks. The result aliases h.buf.
func (h *Host) query(imp string, call func(buf []byte) int32) ([]byte, error) {
	for range 4 {
		n := call(h.buf[:cap(h.buf)])
		if n < 0 {
			return nil, h.fail(imp, n)
		}
		if int(n) <= cap(h.buf) {
			return h.buf[:n], nil
		}
		h.buf = make([]byte, n)
	}
	return nil, &HostError{Import: imp, Code: abi.HostFailed, Reason: errResultGrowing.Error()}
}

// fail builds the error for a negative status, asking last_error for the
// host's reason.
func (h *Host) fail(imp string, code int32) error {
	e := &HostError{Import: imp, Code: code}
	var small [256]byte
	buf := small[:]
	for range 2 {
		n := h.raw.lastError(buf)
		if n <= 0 {
			break
		}
		if int(n) <= len(buf) {
			e.Reason = string(buf[:n])
			break
		}
		buf = make([]byte, n)
	}
	return e
}

// SurfaceNodes returns the current surface, in order.
func (h *Host) SurfaceNodes() ([]Node, error) {
	b, err := h.query(abi.ImportSurfaceNodes, h.raw.surfaceNodes)
	if err != nil {
		return nil, err
	}
	var list abi.NodeList
	if err := list.Decode(b); err != nil {
		return nil, &HostError{Import: abi.ImportSurfaceNodes, Code: abi.HostFailed, Reason: err.Error()}
	}
	for i := range list.Nodes {
		list.Nodes[i].ContentHash = slices.Clone(list.Nodes[i].ContentHash)
	}
	return list.Nodes, nil
}

// Message returns the message JSON of the surface node holding seq.
func (h *Host) Message(seq int64) ([]byte, error) {
	b, err := h.query(abi.ImportMessage, func(buf []byte) int32 { return h.raw.message(seq, buf) })
	if err != nil {
		return nil, err
	}
	return bytes.Clone(b), nil
}

// Event returns the type and stored data JSON of the committed event at
// seq (any event of the log, not only surface nodes), for example a tool
// result's turn and step. It needs a host of ABI minor 2
// (InitRequest.abi_minor); ErrNotFound when the log has no such seq.
func (h *Host) Event(seq int64) (*EventData, error) {
	b, err := h.query(abi.ImportEvent, func(buf []byte) int32 { return h.raw.event(seq, buf) })
	if err != nil {
		return nil, err
	}
	e := new(EventData)
	if err := e.Decode(b); err != nil {
		return nil, &HostError{Import: abi.ImportEvent, Code: abi.HostFailed, Reason: err.Error()}
	}
	e.Data = bytes.Clone(e.Data)
	return e, nil
}

// Generations returns the surface generations and the log length.
func (h *Host) Generations() (Generations, error) {
	var g Generations
	b, err := h.query(abi.ImportGenerations, h.raw.generations)
	if err != nil {
		return g, err
	}
	if err := g.Decode(b); err != nil {
		return g, &HostError{Import: abi.ImportGenerations, Code: abi.HostFailed, Reason: err.Error()}
	}
	return g, nil
}

// Header returns the current request header JSON; ErrNotFound when the
// session has none yet.
func (h *Host) Header() ([]byte, error) {
	b, err := h.query(abi.ImportHeader, h.raw.header)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(b), nil
}

// Measure returns the token meter's current measurement.
func (h *Host) Measure() (*Measurement, error) {
	b, err := h.query(abi.ImportMeasure, h.raw.measure)
	if err != nil {
		return nil, err
	}
	m := new(Measurement)
	if err := m.Decode(b); err != nil {
		return nil, &HostError{Import: abi.ImportMeasure, Code: abi.HostFailed, Reason: err.Error()}
	}
	return m, nil
}

// Summarize asks the host to run a summarization model call.
func (h *Host) Summarize(req *SummarizeRequest) (*SummarizeResult, error) {
	h.req = req.Encode(h.req[:0])
	b, err := h.query(abi.ImportSummarize, func(buf []byte) int32 { return h.raw.summarize(h.req, buf) })
	if err != nil {
		return nil, err
	}
	r := new(SummarizeResult)
	if err := r.Decode(b); err != nil {
		return nil, &HostError{Import: abi.ImportSummarize, Code: abi.HostFailed, Reason: err.Error()}
	}
	r.RawOutput = bytes.Clone(r.RawOutput)
	r.Usage = bytes.Clone(r.Usage)
	return r, nil
}

// CountTokens counts the tokens of text with the host's native tokenizer of
// that name.
func (h *Host) CountTokens(tokenizer, text string) (int, error) {
	n := h.raw.countTokens(tokenizer, text)
	if n < 0 {
		return 0, h.fail(abi.ImportCountTokens, int32(n))
	}
	return int(n), nil
}

// noHost answers every query with "not granted"; it stands in for the host
// outside WebAssembly.
type noHost struct{}

func (noHost) surfaceNodes([]byte) int32     { return abi.HostNotGranted }
func (noHost) message(int64, []byte) int32   { return abi.HostNotGranted }
func (noHost) event(int64, []byte) int32     { return abi.HostNotGranted }
func (noHost) generations([]byte) int32      { return abi.HostNotGranted }
func (noHost) header([]byte) int32           { return abi.HostNotGranted }
func (noHost) measure([]byte) int32          { return abi.HostNotGranted }
func (noHost) summarize(_, _ []byte) int32   { return abi.HostNotGranted }
func (noHost) countTokens(_, _ string) int64 { return int64(abi.HostNotGranted) }
func (noHost) lastError([]byte) int32        { return 0 }
