package plugintest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
)

func TestLoadRunsUnderTheSandbox(t *testing.T) {
	p := plugintest.Load(t, "../wasmbuild/testdata/echo", plugin.WithMaxInstances(1))
	require.Equal(t, "echo", p.Name())
	require.Equal(t, "echo", p.Description().Name)
	got, err := p.RenderPrompt(context.Background(), nil, &abi.RenderRequest{
		Sections: []abi.Section{{Key: "a", Text: "hello, "}, {Key: "b", Text: "sandbox"}},
	})
	require.NoError(t, err)
	require.Equal(t, "hello, sandbox", got)
	require.Same(t, plugintest.Runtime(t), plugintest.Runtime(t), "one runtime per test binary")
}

func TestSessionRecordsCalls(t *testing.T) {
	s := &plugintest.Session{HeaderJSON: []byte(`{}`), Tokenizer: plugintest.RuneCounter}
	ctx := context.Background()
	h, err := s.Header(ctx)
	require.NoError(t, err)
	require.Equal(t, `{}`, string(h))
	_, err = s.Message(ctx, 3)
	require.ErrorIs(t, err, plugin.ErrNotFound)
	_, err = s.Summarize(ctx, &abi.SummarizeRequest{})
	require.ErrorIs(t, err, plugin.ErrNotGranted)
	n, err := s.CountTokens(ctx, "any", []byte("héllo"))
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.Equal(t, []string{"Header", "Message", "Summarize", "CountTokens"}, s.Calls())
}
