package guesttest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/internal/guesttest"
	"github.com/weirhost/weir/sdk/plugintest"
)

// guests builds the same prompt plugin in the three languages.
func guests(tb testing.TB) []struct {
	name string
	wasm []byte
} {
	return []struct {
		name string
		wasm []byte
	}{
		{"go", plugintest.Build(tb, "testdata/goprompt")},
		{"c", guesttest.BuildC(tb, "examples/prompt")},
		{"assemblyscript", guesttest.BuildAS(tb, "examples/prompt")},
	}
}

// The Go version of the example renders exactly what the C and
// AssemblyScript ones do.
func TestGoPromptMatches(t *testing.T) {
	guesttest.Prompt(t, plugintest.Build(t, "testdata/goprompt"))
}

// BenchmarkPromptRender measures one prompt.render round trip on a warm
// instance of each guest (encode, copy in, decode, render, frame, copy
// out, decode), for a small request and one of 64 KiB, and reports each
// module's size.
//
//	go test -run XXX -bench PromptRender -count 5 ./sdk/internal/guesttest
func BenchmarkPromptRender(b *testing.B) {
	small := &abi.RenderRequest{
		Sections: []abi.Section{{Key: "base", Text: "You are Weir, a coding agent."}, {Key: "tools", Text: "Use the tools when they help."}},
		Route:    abi.Route{Provider: "p", Model: "m"},
		HostData: []abi.KeyValue{{Key: "date", Value: "2025-05-01"}},
	}
	large := &abi.RenderRequest{
		Sections: []abi.Section{{Key: "base", Text: strings.Repeat("Keep functions short. ", 64<<10/22)}},
		HostData: small.HostData,
	}
	for _, g := range guests(b) {
		p := plugintest.LoadBytes(b, g.name, g.wasm, plugin.WithConfig([]byte(`{"footer": "Answer in plain words."}`)))
		for _, size := range []struct {
			name string
			req  *abi.RenderRequest
		}{{"small", small}, {"64KiB", large}} {
			b.Run(g.name+"/"+size.name, func(b *testing.B) {
				ctx := context.Background()
				want, err := p.RenderPrompt(ctx, nil, size.req)
				if err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for range b.N {
					got, err := p.RenderPrompt(ctx, nil, size.req)
					if err != nil || len(got) != len(want) {
						b.Fatalf("render: %v (%d bytes, want %d)", err, len(got), len(want))
					}
				}
				b.ReportMetric(float64(len(g.wasm)), "module-bytes")
			})
		}
	}
}
