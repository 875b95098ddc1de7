// Package c_test builds the C SDK's example plugins with clang and runs
// them under the real host: in the sandbox directly, and in offline
// sessions that load them through weir.yaml alone.
package c_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/internal/guesttest"
	"github.com/weirhost/weir/sdk/plugintest"
)

func TestMain(m *testing.M) { guesttest.Main(m) }

func TestDescribe(t *testing.T) {
	guesttest.Describe(t, guesttest.BuildC(t, "examples/prompt"), "c-prompt", "weir-c/", abi.KindSystemPrompt)
	guesttest.Describe(t, guesttest.BuildC(t, "examples/compaction"), "c-compaction", "weir-c/", abi.KindCompaction)
}

func TestPrompt(t *testing.T) { guesttest.Prompt(t, guesttest.BuildC(t, "examples/prompt")) }

func TestCompaction(t *testing.T) {
	guesttest.Compaction(t, guesttest.BuildC(t, "examples/compaction"))
}

func TestSession(t *testing.T) {
	guesttest.Session(t, guesttest.Plugins{
		Prompt:     guesttest.BuildC(t, "examples/prompt"),
		Compaction: guesttest.BuildC(t, "examples/compaction"),
	})
}

func TestFailures(t *testing.T) {
	guesttest.Failures(t, guesttest.BuildC(t, "testdata/failing"), "trapping as asked")
}

// A token meter written at the wire level with the SDK's protobuf helpers.
func TestWireLevelMeter(t *testing.T) {
	ctx := context.Background()
	p := plugintest.LoadBytes(t, "meter", guesttest.BuildC(t, "testdata/meter"))
	require.Equal(t, []abi.Kind{abi.KindTokenMeter}, p.Description().Kinds)
	state, err := p.Observe(ctx, &plugintest.Session{}, &abi.ObserveRequest{State: []byte("40"),
		Events: []abi.Event{{Seq: 1, Type: "a/b", JSON: []byte(`{}`)}, {Seq: 2, Type: "a/b", JSON: []byte(`{}`)}}})
	require.NoError(t, err)
	require.Equal(t, "42", string(state))
	m, err := p.Measure(ctx, &plugintest.Session{}, &abi.MeasureRequest{State: state})
	require.NoError(t, err)
	require.Equal(t, int64(42), m.TotalTokens)
	require.Equal(t, int64(42), m.SurfaceTokens)
	require.Equal(t, "count", m.Tokenizer)
	_, err = p.RenderPrompt(ctx, nil, &abi.RenderRequest{})
	require.Error(t, err, "not a prompt provider")
}
