package plugin

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/sdk/abi"
)

// hostDecoders are the result decoders the host applies to guest output,
// one per method, with the checks the typed calls add.
func hostDecoders(p *Plugin) map[abi.Method]func([]byte) (int, error) {
	state := func(n int) error {
		if n > p.cfg.stateLimit {
			return &limitError{what: "state", size: n, limit: p.cfg.stateLimit}
		}
		return nil
	}
	return map[abi.Method]func([]byte) (int, error){
		abi.MethodInit:     func(b []byte) (int, error) { var r abi.InitResult; return 0, r.Decode(b) },
		abi.MethodDescribe: func(b []byte) (int, error) { var r abi.Description; err := r.Decode(b); return len(r.Kinds), err },
		abi.MethodPromptRender: func(b []byte) (int, error) {
			var r abi.RenderResult
			err := r.Decode(b)
			return len(r.Prompt), err
		},
		abi.MethodCompactionPreStep: func(b []byte) (int, error) {
			var r abi.CompactionResult
			if err := r.Decode(b); err != nil {
				return 0, err
			}
			n := len(r.Proposals)
			for _, pr := range r.Proposals {
				n += len(pr.SourceEventSeqs)
			}
			return n, state(len(r.State))
		},
		abi.MethodMeterObserve: func(b []byte) (int, error) {
			var r abi.ObserveResult
			if err := r.Decode(b); err != nil {
				return 0, err
			}
			return 0, state(len(r.State))
		},
		abi.MethodMeterMeasure: func(b []byte) (int, error) {
			var r abi.Measurement
			err := r.Decode(b)
			return len(r.Nodes), err
		},
	}
}

func fuzzPlugin() *Plugin {
	cfg := defaultPluginConfig()
	cfg.stateLimit = 64
	return &Plugin{name: "fuzz", cfg: cfg, log: hclog.NewNullLogger()}
}

// FuzzOutput feeds arbitrary output frames to the host's decoding path: it
// must never panic, must classify every failure, and may only produce as
// many elements as the input has bytes.
func FuzzOutput(f *testing.F) {
	ok := func(result []byte) []byte { return (&abi.Response{Result: result}).Encode(nil) }
	f.Add(ok((&abi.RenderResult{Prompt: "hello"}).Encode(nil)))
	f.Add(ok((&abi.CompactionResult{Proposals: []abi.Proposal{{Type: "a/b", Intent: abi.Intent{Kind: abi.IntentReplace, StartSeq: 3, EndSeq: 4},
		HasSourceEventSeqs: true, SourceEventSeqs: []int64{1, 3, 4}}}, HasState: true, State: []byte("s")}).Encode(nil)))
	f.Add(ok((&abi.Measurement{TotalTokens: 9, Nodes: []abi.NodeTokens{{Seq: 1, Tokens: 3}}}).Encode(nil)))
	f.Add(ok((&abi.ObserveResult{State: make([]byte, 100)}).Encode(nil)))
	f.Add((&abi.Response{Status: abi.StatusPanic, Error: "boom"}).Encode(nil))
	f.Add((&abi.Response{Status: 99}).Encode(nil))
	f.Add([]byte{0xff, 0xff, 0xff})
	p := fuzzPlugin()
	decoders := hostDecoders(p)
	f.Fuzz(func(t *testing.T, out []byte) {
		for method, dec := range decoders {
			var elems int
			err, discard := p.parseOutput("call "+method.String(), out, func(b []byte) error {
				n, err := dec(b)
				elems = n
				return err
			})
			if err != nil {
				if err.Class == nil || !strings.HasPrefix(err.Error(), `plugin "fuzz": call `+method.String()+": ") {
					t.Fatalf("unclassified error: %v", err)
				}
				if err.Replaced != discard {
					t.Fatalf("error says replaced=%v but discard=%v", err.Replaced, discard)
				}
				continue
			}
			if elems > len(out) {
				t.Fatalf("%s: %d elements from %d bytes", method, elems, len(out))
			}
		}
	})
}

func TestParseOutputClasses(t *testing.T) {
	p := fuzzPlugin()
	var res abi.RenderResult
	cases := []struct {
		frame   abi.Response
		class   error
		discard bool
		text    string
	}{
		{abi.Response{Status: abi.StatusPluginError, Error: "no"}, ErrPluginFailed, false, `plugin "fuzz": call x: plugin error: no`},
		{abi.Response{Status: abi.StatusBadRequest, Error: "bad"}, ErrRejected, false, `plugin "fuzz": call x: plugin rejected the request: bad`},
		{abi.Response{Status: abi.StatusUnsupported, Error: "u"}, ErrUnsupported, false, `plugin "fuzz": call x: unsupported: u`},
		{abi.Response{Status: abi.StatusPanic, Error: "p"}, ErrPanic, true, `plugin "fuzz": call x: panic: p; instance replaced`},
		{abi.Response{Status: 42}, ErrMalformedOutput, true, `plugin "fuzz": call x: malformed output: unknown status 42; instance replaced`},
		{abi.Response{Result: []byte{0x0a, 0x05}}, ErrMalformedOutput, true, `plugin "fuzz": call x: malformed output: decode RenderResult field 1: unexpected end of data; instance replaced`},
	}
	for _, tc := range cases {
		err, discard := p.parseOutput("call x", tc.frame.Encode(nil), res.Decode)
		require.NotNil(t, err)
		require.ErrorIs(t, err, tc.class)
		require.Equal(t, tc.discard, discard)
		require.EqualError(t, err, tc.text)
	}
	err, discard := p.parseOutput("call x", (&abi.Response{Result: (&abi.RenderResult{Prompt: "fine"}).Encode(nil)}).Encode(nil), res.Decode)
	require.Nil(t, err)
	require.False(t, discard)
	require.Equal(t, "fine", res.Prompt)
}
