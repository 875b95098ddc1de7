package plugins

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
)

// Every embedded module loads under its name and provides its kind. The
// modules are the committed ones; go run ./internal/wasmbuild -check
// proves they match their sources.
func TestFirstPartyLoad(t *testing.T) {
	kinds := map[string]abi.Kind{SystemPrompt: abi.KindSystemPrompt, CompactionBasic: abi.KindCompaction, TokenMeter: abi.KindTokenMeter}
	require.Len(t, FirstParty, len(kinds))
	for name, wasm := range FirstParty {
		require.Equal(t, []byte("\x00asm"), wasm[:4], name)
		p := plugintest.LoadBytes(t, name, wasm)
		require.Equal(t, name, p.Description().Name)
		require.Equal(t, []abi.Kind{kinds[name]}, p.Description().Kinds)
	}
	prompt := plugintest.LoadBytes(t, SystemPrompt, FirstParty[SystemPrompt])
	got, err := prompt.RenderPrompt(context.Background(), nil, &abi.RenderRequest{Sections: []abi.Section{{Key: "a", Text: " one "}, {Key: "b", Text: "two"}}})
	require.NoError(t, err)
	require.Equal(t, "one\n\ntwo", got)
}
