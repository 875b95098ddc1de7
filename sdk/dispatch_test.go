package sdk

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/sdk/abi"
)

// fakeHost answers host queries from memory, honouring the (buf, limit)
// protocol: nothing is written when the buffer is too small.
type fakeHost struct {
	noHost
	nodes    abi.NodeList
	lastErr  string
	calls    int
	growing  bool // answer a larger size every time
	failWith int32
}

func (f *fakeHost) surfaceNodes(buf []byte) int32 {
	f.calls++
	if f.failWith != 0 {
		f.lastErr = "surface is locked"
		return f.failWith
	}
	data := f.nodes.Encode(nil)
	if f.growing {
		return int32(len(buf) + 10)
	}
	if len(data) > len(buf) {
		return int32(len(data))
	}
	return int32(copy(buf, data))
}

func (f *fakeHost) lastError(buf []byte) int32 {
	if len(f.lastErr) > len(buf) {
		return int32(len(f.lastErr))
	}
	return int32(copy(buf, f.lastErr))
}

type testPrompt struct {
	render func(h *Host, req *RenderRequest) (string, error)
}

func (p testPrompt) RenderPrompt(h *Host, req *RenderRequest) (string, error) {
	return p.render(h, req)
}

func decodeFrame(t *testing.T, frame []byte) abi.Response {
	t.Helper()
	var r abi.Response
	require.NoError(t, r.Decode(frame))
	return r
}

func initFrame(major uint32, config string) []byte {
	return (&abi.InitRequest{AbiMajor: major, Config: []byte(config)}).Encode(nil)
}

func newTestDispatcher(t *testing.T, p Plugin, raw hostABI) *dispatcher {
	t.Helper()
	d := newDispatcher(p, raw)
	require.Equal(t, abi.StatusOK, decodeFrame(t, d.call(abi.MethodInit, initFrame(abi.Major, ""))).Status)
	return d
}

func TestDescribeAndInit(t *testing.T) {
	var got []byte
	d := newDispatcher(Plugin{
		Name: "p", Version: "2.1",
		Configure:    func(c []byte) error { got = c; return nil },
		SystemPrompt: testPrompt{},
		Meter:        nil,
	}, noHost{})
	r := decodeFrame(t, d.call(abi.MethodDescribe, nil))
	require.Equal(t, abi.StatusOK, r.Status)
	var desc abi.Description
	require.NoError(t, desc.Decode(r.Result))
	require.Equal(t, abi.Description{Name: "p", Version: "2.1", Kinds: []abi.Kind{abi.KindSystemPrompt}, AbiMinor: abi.Minor, Sdk: Version}, desc)

	r = decodeFrame(t, d.call(abi.MethodPromptRender, nil))
	require.Equal(t, abi.StatusBadRequest, r.Status)
	require.Equal(t, "prompt.render called before init", r.Error)

	r = decodeFrame(t, d.call(abi.MethodInit, initFrame(abi.Major+1, "")))
	require.Equal(t, abi.StatusBadRequest, r.Status)
	require.Equal(t, "host speaks ABI major 2, plugin was built for 1", r.Error)

	in := initFrame(abi.Major, `{"a":1}`)
	r = decodeFrame(t, d.call(abi.MethodInit, in))
	require.Equal(t, abi.StatusOK, r.Status)
	require.Equal(t, `{"a":1}`, string(got))
	in[len(in)-2] = 'X' // the plugin got a copy, not the input buffer
	require.Equal(t, `{"a":1}`, string(got))
}

func TestConfigureError(t *testing.T) {
	d := newDispatcher(Plugin{Configure: func([]byte) error { return errors.New("bad key") }, SystemPrompt: testPrompt{}}, noHost{})
	r := decodeFrame(t, d.call(abi.MethodInit, initFrame(abi.Major, "{}")))
	require.Equal(t, abi.StatusPluginError, r.Status)
	require.Equal(t, "configure: bad key", r.Error)
}

func TestRenderFrames(t *testing.T) {
	for _, size := range []int{0, 1, 100, 127, 128, 5000, 20000, 1 << 20} {
		text := strings.Repeat("z", size)
		d := newTestDispatcher(t, Plugin{SystemPrompt: testPrompt{render: func(h *Host, req *RenderRequest) (string, error) {
			return req.Sections[0].Text, nil
		}}}, noHost{})
		frame := d.call(abi.MethodPromptRender, (&abi.RenderRequest{Sections: []abi.Section{{Text: text}}}).Encode(nil))
		r := decodeFrame(t, frame)
		require.Equal(t, abi.StatusOK, r.Status, "size %d", size)
		var res abi.RenderResult
		require.NoError(t, res.Decode(r.Result))
		require.Equal(t, text, res.Prompt, "size %d", size)
		if size > 0 {
			require.Same(t, &d.out[len(d.out)-1], &frame[len(frame)-1], "the frame is written in place in the output buffer")
		}
	}
}

func TestPanicBecomesErrorFrame(t *testing.T) {
	d := newTestDispatcher(t, Plugin{SystemPrompt: testPrompt{render: func(h *Host, req *RenderRequest) (string, error) {
		var m map[string]int
		//lint:ignore SA5000 the nil-map write is the panic under test
		m["x"] = 1
		return "", nil
	}}}, noHost{})
	r := decodeFrame(t, d.call(abi.MethodPromptRender, nil))
	require.Equal(t, abi.StatusPanic, r.Status)
	require.Regexp(t, `^assignment to entry in nil map \(at github\.com/weirhost/weir/sdk\.TestPanicBecomesErrorFrame\.func1 \S+dispatch_test\.go:\d+\)$`, r.Error)

	// The dispatcher keeps working after a recovered panic.
	d.plugin.SystemPrompt = testPrompt{render: func(*Host, *RenderRequest) (string, error) { return "fine", nil }}
	require.Equal(t, abi.StatusOK, decodeFrame(t, d.call(abi.MethodPromptRender, nil)).Status)
}

func TestStatuses(t *testing.T) {
	d := newTestDispatcher(t, Plugin{SystemPrompt: testPrompt{render: func(*Host, *RenderRequest) (string, error) {
		return "", errors.New("template missing")
	}}}, noHost{})
	cases := []struct {
		method abi.Method
		in     []byte
		status abi.Status
		text   string
	}{
		{abi.MethodPromptRender, nil, abi.StatusPluginError, "template missing"},
		{abi.MethodPromptRender, []byte{0x0a, 0x09}, abi.StatusBadRequest, "decode RenderRequest field 1: unexpected end of data"},
		{abi.MethodCompactionPreStep, nil, abi.StatusUnsupported, "plugin is not a compaction provider"},
		{abi.MethodMeterMeasure, nil, abi.StatusUnsupported, "plugin is not a token-meter provider"},
		{abi.Method(99), nil, abi.StatusUnsupported, "unknown method method(99)"},
	}
	for _, tc := range cases {
		r := decodeFrame(t, d.call(tc.method, tc.in))
		require.Equal(t, tc.status, r.Status, tc.method.String())
		require.Equal(t, tc.text, r.Error)
	}
}

type testCompaction struct {
	res *CompactionResult
}

func (c testCompaction) PreStep(*Host, *CompactionRequest) (*CompactionResult, error) {
	return c.res, nil
}
func (c testCompaction) Manual(*Host, *CompactionRequest) (*CompactionResult, error) {
	return c.res, nil
}
func (c testCompaction) Overflow(*Host, *CompactionRequest) (*CompactionResult, error) {
	return c.res, nil
}

func TestCompactionResults(t *testing.T) {
	d := newTestDispatcher(t, Plugin{Compaction: testCompaction{}}, noHost{})
	r := decodeFrame(t, d.call(abi.MethodCompactionManual, nil))
	require.Equal(t, abi.Response{}, r, "nil result: empty ok frame")

	d.plugin.Compaction = testCompaction{res: &CompactionResult{Proposals: make([]Proposal, abi.MaxProposals+1)}}
	r = decodeFrame(t, d.call(abi.MethodCompactionOverflow, nil))
	require.Equal(t, abi.StatusPluginError, r.Status)
	require.Equal(t, "more than 1024 proposals", r.Error)
}

type nilMeter struct{}

func (nilMeter) Observe(*Host, *ObserveRequest) ([]byte, error)       { return nil, nil }
func (nilMeter) Measure(*Host, *MeasureRequest) (*Measurement, error) { return nil, nil }

func TestMeasureNeedsAResult(t *testing.T) {
	d := newTestDispatcher(t, Plugin{Meter: nilMeter{}}, noHost{})
	r := decodeFrame(t, d.call(abi.MethodMeterMeasure, nil))
	require.Equal(t, abi.StatusPluginError, r.Status)
	require.Equal(t, "Measure returned no measurement", r.Error)
	r = decodeFrame(t, d.call(abi.MethodMeterObserve, nil))
	require.Equal(t, abi.Response{}, r, "an empty state is an empty result")
}

func TestHostQueryGrowsBuffer(t *testing.T) {
	f := &fakeHost{}
	for i := range 50 {
		f.nodes.Nodes = append(f.nodes.Nodes, abi.Node{Seq: int64(i), Type: "user/message", Role: "user", ContentHash: []byte{byte(i)}, Tokens: 3, HasTokens: true})
	}
	h := &Host{raw: f}
	nodes, err := h.SurfaceNodes()
	require.NoError(t, err)
	require.Equal(t, 2, f.calls, "one call to learn the size, one to fetch")
	require.Len(t, nodes, 50)
	require.Equal(t, f.nodes.Nodes[49], nodes[49])
	h.buf[len(h.buf)-1] ^= 0xff // results are owned, not views of the shared buffer
	require.Equal(t, []byte{49}, nodes[49].ContentHash)

	f.calls = 0
	_, err = h.SurfaceNodes()
	require.NoError(t, err)
	require.Equal(t, 1, f.calls, "the grown buffer is reused")
}

func TestHostQueryErrors(t *testing.T) {
	f := &fakeHost{failWith: abi.HostNotGranted}
	h := &Host{raw: f}
	_, err := h.SurfaceNodes()
	require.ErrorIs(t, err, ErrNotGranted)
	require.EqualError(t, err, "host surface_nodes: not granted: surface is locked")

	f.lastErr = strings.Repeat("r", 600) // longer than the first last_error buffer
	f.failWith = abi.HostFailed
	_, err = h.SurfaceNodes()
	require.ErrorIs(t, err, ErrHostFailed)
	require.Equal(t, "host surface_nodes: host failed: "+f.lastErr, err.Error())

	f.failWith, f.growing = 0, true
	_, err = h.SurfaceNodes()
	require.EqualError(t, err, "host surface_nodes: host failed: result size kept changing between attempts")

	_, err = (&Host{raw: noHost{}}).CountTokens("t", "x")
	require.ErrorIs(t, err, ErrNotGranted)
	require.EqualError(t, err, "host count_tokens: not granted")
}

func TestRegister(t *testing.T) {
	defer func() { registered = nil }()
	require.PanicsWithValue(t, "sdk: Register: plugin empty sets no provider", func() { Register(Plugin{Name: "empty"}) })
	Register(Plugin{Name: "a", SystemPrompt: testPrompt{}})
	require.Nil(t, registered.choices, "one plugin: no choice to make")
	require.PanicsWithValue(t, "sdk: Register: plugin a registered twice", func() { Register(Plugin{Name: "a", SystemPrompt: testPrompt{}}) })
	require.PanicsWithValue(t, "sdk: Register: a module holding several plugins needs a name for each",
		func() { Register(Plugin{SystemPrompt: testPrompt{}}) })
	Register(Plugin{Name: "b", Meter: keyedMeter{}})
	require.Equal(t, []string{"a", "b"}, []string{registered.choices[0].Name, registered.choices[1].Name})
}

// A module of one plugin serves under any name and describes itself
// before init, as it always did.
func TestOnePluginServesUnderAnyName(t *testing.T) {
	d := newDispatcher(Plugin{Name: "p", SystemPrompt: testPrompt{}}, noHost{})
	var desc abi.Description
	require.NoError(t, desc.Decode(decodeFrame(t, d.call(abi.MethodDescribe, nil)).Result))
	require.Equal(t, "p", desc.Name)
	in := (&abi.InitRequest{Plugin: "other", AbiMajor: abi.Major}).Encode(nil)
	require.Equal(t, abi.StatusOK, decodeFrame(t, d.call(abi.MethodInit, in)).Status)
}

// A module of several plugins serves the one init names: its
// configuration, its description, its provider; describe before init and
// a name it does not hold are refused with the rule.
func TestSeveralPluginsInitSelectsByName(t *testing.T) {
	var configured []string
	plugin := func(name string, p Plugin) Plugin {
		p.Name, p.Version = name, "1"
		p.Configure = func(cfg []byte) error {
			configured = append(configured, name+":"+string(cfg))
			return nil
		}
		return p
	}
	say := func(text string) testPrompt {
		return testPrompt{render: func(*Host, *RenderRequest) (string, error) { return text, nil }}
	}
	newModule := func() *dispatcher {
		d := newDispatcher(plugin("prompt", Plugin{SystemPrompt: say("from prompt"), RenderOnChange: true}), noHost{})
		d.add(plugin("meter", Plugin{Meter: keyedMeter{}, WarmState: true}))
		d.add(plugin("other-prompt", Plugin{SystemPrompt: say("from other-prompt")}))
		return d
	}
	initAs := func(d *dispatcher, name string) abi.Response {
		return decodeFrame(t, d.call(abi.MethodInit, (&abi.InitRequest{Plugin: name, AbiMajor: abi.Major, Config: []byte(name)}).Encode(nil)))
	}

	d := newModule()
	r := decodeFrame(t, d.call(abi.MethodDescribe, nil))
	require.Equal(t, abi.StatusBadRequest, r.Status)
	require.Equal(t, `describe called before init: this module holds several plugins ("prompt", "meter", "other-prompt") and init selects the one it serves by name`, r.Error)
	r = initAs(d, "nope")
	require.Equal(t, abi.StatusBadRequest, r.Status)
	require.Equal(t, `this module holds the plugins "prompt", "meter", "other-prompt"; init names "nope": load it under one of their names`, r.Error)
	require.Equal(t, abi.StatusBadRequest, decodeFrame(t, d.call(abi.MethodPromptRender, nil)).Status, "still not initialised")
	require.Empty(t, configured)

	for _, name := range []string{"other-prompt", "prompt", "meter"} {
		d := newModule()
		configured = nil
		require.Equal(t, abi.StatusOK, initAs(d, name).Status)
		require.Equal(t, []string{name + ":" + name}, configured, "only the selected plugin is configured")
		require.Equal(t, name, d.host.PluginName())
		var desc abi.Description
		require.NoError(t, desc.Decode(decodeFrame(t, d.call(abi.MethodDescribe, nil)).Result))
		require.Equal(t, name, desc.Name)
		render := decodeFrame(t, d.call(abi.MethodPromptRender, (&abi.RenderRequest{}).Encode(nil)))
		switch name {
		case "meter":
			require.Equal(t, []abi.Kind{abi.KindTokenMeter}, desc.Kinds)
			require.True(t, desc.WarmState)
			require.Equal(t, abi.StatusUnsupported, render.Status)
		default:
			require.Equal(t, []abi.Kind{abi.KindSystemPrompt}, desc.Kinds)
			require.Equal(t, name == "prompt", desc.RenderOnChange)
			var res abi.RenderResult
			require.NoError(t, res.Decode(render.Result))
			require.Equal(t, "from "+name, res.Prompt)
		}
	}
}

func TestDescribeDeclaresEventsAndInitNamesThePlugin(t *testing.T) {
	d := newDispatcher(Plugin{Name: "p", Version: "1", SystemPrompt: testPrompt{}, Events: []string{"p/note", "p/trace"}}, noHost{})
	var desc abi.Description
	require.NoError(t, desc.Decode(decodeFrame(t, d.call(abi.MethodDescribe, nil)).Result))
	require.Equal(t, []string{"p/note", "p/trace"}, desc.Events)
	require.Equal(t, "", d.host.PluginName(), "no name before init")

	in := (&abi.InitRequest{Plugin: "configured-name", AbiMajor: abi.Major}).Encode(nil)
	require.Equal(t, abi.StatusOK, decodeFrame(t, d.call(abi.MethodInit, in)).Status)
	require.Equal(t, "configured-name", d.host.PluginName())
}

// keyedMeter is a warm-state meter: it knows only key 7.
type keyedMeter struct{}

func (keyedMeter) Observe(_ *Host, req *ObserveRequest) ([]byte, error) {
	if req.StateKey != 0 && req.StateKey != 7 {
		return nil, ErrStateUnknown
	}
	if req.StateOptional {
		return nil, ErrStateKept
	}
	return []byte("blob"), nil
}

func (keyedMeter) Measure(_ *Host, req *MeasureRequest) (*Measurement, error) {
	if req.StateKey != 0 && req.StateKey != 7 {
		return nil, ErrStateUnknown
	}
	return &Measurement{TotalTokens: 3}, nil
}

// TestWarmStateStatuses: ErrStateUnknown answers STATUS_STATE_UNKNOWN,
// ErrStateKept a result with state_kept (the request allowed it); describe
// carries the minor-2 flags.
func TestWarmStateStatuses(t *testing.T) {
	d := newTestDispatcher(t, Plugin{Name: "m", Meter: keyedMeter{}, WarmState: true, RenderOnChange: true}, noHost{})
	var desc abi.Description
	require.NoError(t, desc.Decode(decodeFrame(t, d.call(abi.MethodDescribe, nil)).Result))
	require.True(t, desc.WarmState)
	require.True(t, desc.RenderOnChange)

	observe := func(req abi.ObserveRequest) abi.Response {
		return decodeFrame(t, d.call(abi.MethodMeterObserve, req.Encode(nil)))
	}
	r := observe(abi.ObserveRequest{StateKey: 8, NextStateKey: 9})
	require.Equal(t, abi.StatusStateUnknown, r.Status)
	r = observe(abi.ObserveRequest{StateKey: 7, NextStateKey: 9, StateOptional: true})
	require.Equal(t, abi.StatusOK, r.Status)
	var res abi.ObserveResult
	require.NoError(t, res.Decode(r.Result))
	require.Equal(t, abi.ObserveResult{StateKept: true}, res)
	r = observe(abi.ObserveRequest{StateKey: 7, NextStateKey: 9})
	require.Equal(t, abi.StatusOK, r.Status)
	require.NoError(t, res.Decode(r.Result))
	require.Equal(t, "blob", string(res.State))

	r = decodeFrame(t, d.call(abi.MethodMeterMeasure, (&abi.MeasureRequest{StateKey: 8, TotalsOnly: true}).Encode(nil)))
	require.Equal(t, abi.StatusStateUnknown, r.Status)
}

// regionCompaction implements compaction.region on top of testCompaction.
type regionCompaction struct {
	testCompaction
	got *CompactionRequest
}

func (c regionCompaction) Region(_ *Host, req *CompactionRequest) (*CompactionResult, error) {
	*c.got = *req
	return &CompactionResult{Proposals: []Proposal{{Type: "compaction/start"}}}, nil
}

func TestCompactionRegion(t *testing.T) {
	// A compaction provider without Region neither declares nor serves it.
	d := newTestDispatcher(t, Plugin{Compaction: testCompaction{}}, noHost{})
	var desc abi.Description
	require.NoError(t, desc.Decode(decodeFrame(t, d.call(abi.MethodDescribe, nil)).Result))
	require.Empty(t, desc.Methods)
	r := decodeFrame(t, d.call(abi.MethodCompactionRegion, nil))
	require.Equal(t, abi.StatusUnsupported, r.Status)
	require.Equal(t, "plugin does not implement compaction.region", r.Error)

	got := new(CompactionRequest)
	d = newTestDispatcher(t, Plugin{Compaction: regionCompaction{got: got}}, noHost{})
	require.NoError(t, desc.Decode(decodeFrame(t, d.call(abi.MethodDescribe, nil)).Result))
	require.Equal(t, []abi.Method{abi.MethodCompactionRegion}, desc.Methods)
	r = decodeFrame(t, d.call(abi.MethodCompactionRegion, (&abi.CompactionRequest{RegionStartSeq: 3, RegionEndSeq: 9}).Encode(nil)))
	require.Equal(t, abi.StatusOK, r.Status, r.Error)
	require.Equal(t, int64(3), got.RegionStartSeq)
	require.Equal(t, int64(9), got.RegionEndSeq)
	var res abi.CompactionResult
	require.NoError(t, res.Decode(r.Result))
	require.Equal(t, "compaction/start", res.Proposals[0].Type)
}

// eventHost answers the event import for seq 4 only.
type eventHost struct {
	fakeHost
	asked []int
}

func (f *eventHost) event(seq int64, buf []byte) int32 {
	f.asked = append(f.asked, len(buf))
	if seq != 4 {
		f.lastErr = "event: no event at seq " + strconv.FormatInt(seq, 10)
		return abi.HostNotFound
	}
	data := (&abi.EventData{Seq: 4, Type: "tool/result", Data: []byte(`{"turn":2,"step":1}`)}).Encode(nil)
	if len(data) > len(buf) {
		return int32(len(data))
	}
	return int32(copy(buf, data))
}

func TestHostEvent(t *testing.T) {
	f := &eventHost{}
	h := &Host{raw: f}
	e, err := h.Event(4)
	require.NoError(t, err)
	require.Equal(t, &EventData{Seq: 4, Type: "tool/result", Data: []byte(`{"turn":2,"step":1}`)}, e)
	require.Len(t, f.asked, 2, "the first call asks the size, the second fetches")
	_, err = h.Event(5)
	var he *HostError
	require.ErrorAs(t, err, &he)
	require.Equal(t, abi.HostNotFound, he.Code)
	require.ErrorIs(t, err, ErrNotFound)
	require.Contains(t, err.Error(), "no event at seq 5")
}
