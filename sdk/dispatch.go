package sdk

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/weirhost/weir/sdk/abi"
	"google.golang.org/protobuf/encoding/protowire"
)

// headroom is the space kept in front of an encoded result so the frame
// header (tag of Response.result plus its length) can be written in place.
const headroom = 8

// dispatcher turns input frames into output frames for one plugin. The
// buffers and decode targets are reused from call to call.
type dispatcher struct {
	plugin Plugin
	// choices are the plugins of a module that holds several (nil with
	// one): init selects the one named in its request into plugin.
	choices []Plugin
	host    Host
	inited  bool
	out     []byte

	render  abi.RenderRequest
	compact abi.CompactionRequest
	observe abi.ObserveRequest
	measure abi.MeasureRequest
}

func newDispatcher(p Plugin, raw hostABI) *dispatcher {
	return &dispatcher{plugin: p, host: Host{raw: raw}}
}

// add makes the module hold p too (see Register).
func (d *dispatcher) add(p Plugin) {
	if d.choices == nil {
		d.choices = []Plugin{d.plugin}
	}
	for _, q := range append(d.choices, p) {
		if q.Name == "" {
			panic("sdk: Register: a module holding several plugins needs a name for each")
		}
	}
	for _, q := range d.choices {
		if q.Name == p.Name {
			panic("sdk: Register: plugin " + p.Name + " registered twice")
		}
	}
	d.choices = append(d.choices, p)
	d.plugin = Plugin{}
}

// names lists the plugins of a module that holds several, quoted.
func (d *dispatcher) names() string {
	qs := make([]string, len(d.choices))
	for i, p := range d.choices {
		qs[i] = strconv.Quote(p.Name)
	}
	return strings.Join(qs, ", ")
}

// call handles one weir_call. The returned frame aliases d.out and stays
// valid until the next call.
func (d *dispatcher) call(method abi.Method, in []byte) (frame []byte) {
	defer func() {
		if r := recover(); r != nil {
			frame = d.fail(abi.StatusPanic, panicText(r))
		}
	}()
	switch method {
	case abi.MethodInit:
		return d.init(in)
	case abi.MethodDescribe:
		if d.choices != nil && !d.inited {
			return d.fail(abi.StatusBadRequest, "describe called before init: this module holds several plugins ("+d.names()+
				") and init selects the one it serves by name")
		}
		desc := abi.Description{
			Name: d.plugin.Name, Version: d.plugin.Version, Kinds: d.plugin.kinds(),
			AbiMinor: abi.Minor, Sdk: Version, Events: d.plugin.Events,
			RenderOnChange: d.plugin.RenderOnChange, WarmState: d.plugin.WarmState,
			Methods: d.plugin.methods(),
		}
		if d.plugin.ABIMinor != nil {
			desc.AbiMinor = *d.plugin.ABIMinor
		}
		return d.ok(desc.Encode)
	}
	if !d.inited {
		return d.fail(abi.StatusBadRequest, method.String()+" called before init")
	}
	switch method {
	case abi.MethodPromptRender:
		return d.renderPrompt(in)
	case abi.MethodCompactionPreStep, abi.MethodCompactionManual, abi.MethodCompactionOverflow, abi.MethodCompactionRegion:
		return d.compaction(method, in)
	case abi.MethodMeterObserve:
		return d.meterObserve(in)
	case abi.MethodMeterMeasure:
		return d.meterMeasure(in)
	}
	return d.fail(abi.StatusUnsupported, "unknown method "+method.String())
}

func (d *dispatcher) init(in []byte) []byte {
	var req abi.InitRequest
	if err := req.Decode(in); err != nil {
		return d.fail(abi.StatusBadRequest, err.Error())
	}
	if req.AbiMajor != abi.Major {
		return d.fail(abi.StatusBadRequest, "host speaks ABI major "+strconv.FormatUint(uint64(req.AbiMajor), 10)+
			", plugin was built for "+strconv.FormatUint(uint64(abi.Major), 10))
	}
	if d.choices != nil {
		d.inited = false
		i := slices.IndexFunc(d.choices, func(p Plugin) bool { return p.Name == req.Plugin })
		if i < 0 {
			return d.fail(abi.StatusBadRequest, "this module holds the plugins "+d.names()+
				"; init names "+strconv.Quote(req.Plugin)+": load it under one of their names")
		}
		d.plugin = d.choices[i]
	}
	d.host.name = req.Plugin
	if d.plugin.Configure != nil {
		if err := d.plugin.Configure(bytes.Clone(req.Config)); err != nil {
			return d.fail(abi.StatusPluginError, "configure: "+err.Error())
		}
	}
	d.inited = true
	return d.ok(nil)
}

func (d *dispatcher) renderPrompt(in []byte) []byte {
	p := d.plugin.SystemPrompt
	if p == nil {
		return d.unsupported(abi.KindSystemPrompt)
	}
	if err := d.render.Decode(in); err != nil {
		return d.fail(abi.StatusBadRequest, err.Error())
	}
	prompt, err := p.RenderPrompt(&d.host, &d.render)
	if err != nil {
		return d.fail(abi.StatusPluginError, err.Error())
	}
	res := abi.RenderResult{Prompt: prompt}
	return d.ok(res.Encode)
}

func (d *dispatcher) compaction(method abi.Method, in []byte) []byte {
	p := d.plugin.Compaction
	if p == nil {
		return d.unsupported(abi.KindCompaction)
	}
	rc, region := p.(RegionCompactor)
	if method == abi.MethodCompactionRegion && !region {
		return d.fail(abi.StatusUnsupported, "plugin does not implement compaction.region")
	}
	if err := d.compact.Decode(in); err != nil {
		return d.fail(abi.StatusBadRequest, err.Error())
	}
	var res *abi.CompactionResult
	var err error
	switch method {
	case abi.MethodCompactionPreStep:
		res, err = p.PreStep(&d.host, &d.compact)
	case abi.MethodCompactionManual:
		res, err = p.Manual(&d.host, &d.compact)
	case abi.MethodCompactionRegion:
		res, err = rc.Region(&d.host, &d.compact)
	default:
		res, err = p.Overflow(&d.host, &d.compact)
	}
	if err != nil {
		return d.fail(abi.StatusPluginError, err.Error())
	}
	if res == nil {
		return d.ok(nil)
	}
	if len(res.Proposals) > abi.MaxProposals {
		return d.fail(abi.StatusPluginError, "more than "+strconv.Itoa(abi.MaxProposals)+" proposals")
	}
	return d.ok(res.Encode)
}

func (d *dispatcher) meterObserve(in []byte) []byte {
	m := d.plugin.Meter
	if m == nil {
		return d.unsupported(abi.KindTokenMeter)
	}
	if err := d.observe.Decode(in); err != nil {
		return d.fail(abi.StatusBadRequest, err.Error())
	}
	state, err := m.Observe(&d.host, &d.observe)
	var res abi.ObserveResult
	switch {
	case errors.Is(err, ErrStateKept) && d.observe.StateOptional:
		res.StateKept = true
	case errors.Is(err, ErrStateUnknown):
		return d.fail(abi.StatusStateUnknown, err.Error())
	case err != nil:
		return d.fail(abi.StatusPluginError, err.Error())
	default:
		res.State = state
	}
	if d.observe.MeasureTotals {
		d.totals(m, &res)
	}
	return d.ok(res.Encode)
}

// totals answers ObserveRequest.MeasureTotals (minor 2): the totals-only
// measurement of the state the observe call made, from the state it kept
// under NextStateKey, else from the blob it returned. A measurement that
// fails is left out: the host then asks meter.measure, which reports the
// failure.
func (d *dispatcher) totals(m TokenMeter, res *abi.ObserveResult) {
	req := &d.measure
	*req = abi.MeasureRequest{TotalsOnly: true}
	var (
		got *Measurement
		err error
	)
	if key := d.observe.NextStateKey; key != 0 {
		req.StateKey = key
		got, err = m.Measure(&d.host, req)
	}
	if (req.StateKey == 0 || errors.Is(err, ErrStateUnknown)) && !res.StateKept {
		*req = abi.MeasureRequest{TotalsOnly: true, State: res.State}
		got, err = m.Measure(&d.host, req)
	}
	if err == nil && got != nil {
		res.Totals, res.HasTotals = *got, true
	}
}

func (d *dispatcher) meterMeasure(in []byte) []byte {
	m := d.plugin.Meter
	if m == nil {
		return d.unsupported(abi.KindTokenMeter)
	}
	if err := d.measure.Decode(in); err != nil {
		return d.fail(abi.StatusBadRequest, err.Error())
	}
	res, err := m.Measure(&d.host, &d.measure)
	if errors.Is(err, ErrStateUnknown) {
		return d.fail(abi.StatusStateUnknown, err.Error())
	}
	if err != nil {
		return d.fail(abi.StatusPluginError, err.Error())
	}
	if res == nil {
		return d.fail(abi.StatusPluginError, "Measure returned no measurement")
	}
	return d.ok(res.Encode)
}

func (d *dispatcher) unsupported(k abi.Kind) []byte {
	return d.fail(abi.StatusUnsupported, "plugin is not a "+k.String()+" provider")
}

// ok encodes a result with enc (nil: empty result) and frames it as a
// Response with status ok, writing the frame header into the headroom in
// front of the result so the result is never copied.
func (d *dispatcher) ok(enc func([]byte) []byte) []byte {
	d.out = append(d.out[:0], make([]byte, headroom)...)
	if enc != nil {
		d.out = enc(d.out)
	}
	n := len(d.out) - headroom
	if n == 0 {
		return d.out[headroom:] // an empty Response: status ok, empty result
	}
	var hdr [headroom]byte
	h := protowire.AppendTag(hdr[:0], 3, protowire.BytesType)
	h = protowire.AppendVarint(h, uint64(n))
	start := headroom - len(h)
	copy(d.out[start:], h)
	return d.out[start:]
}

// fail frames an error status.
func (d *dispatcher) fail(status abi.Status, msg string) []byte {
	r := abi.Response{Status: status, Error: msg}
	d.out = r.Encode(d.out[:0])
	return d.out
}

// panicText describes a recovered panic and where it happened.
func panicText(r any) string {
	msg := fmt.Sprint(r)
	var pcs [32]uintptr
	n := runtime.Callers(3, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	afterPanic := false
	for {
		f, more := frames.Next()
		if f.Function == "runtime.gopanic" {
			afterPanic = true
		} else if afterPanic && !strings.HasPrefix(f.Function, "runtime.") {
			return msg + " (at " + f.Function + " " + f.File + ":" + strconv.Itoa(f.Line) + ")"
		}
		if !more {
			return msg
		}
	}
}
