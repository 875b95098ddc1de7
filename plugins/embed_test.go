package plugins

import (
	"context"
	"crypto/sha256"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/plugintest"
)

// The embedded module holds the three plugins: it loads under each name
// and provides that plugin's kind, and under any other name it refuses to
// load, naming the plugins it holds. The module is the committed one;
// go run ./internal/wasmbuild -check proves it matches its sources.
func TestFirstPartyLoad(t *testing.T) {
	kinds := map[string]abi.Kind{SystemPrompt: abi.KindSystemPrompt, CompactionBasic: abi.KindCompaction, TokenMeter: abi.KindTokenMeter}
	require.Len(t, FirstParty, len(kinds))
	sums := map[[32]byte]bool{}
	for name, wasm := range FirstParty {
		require.Equal(t, []byte("\x00asm"), wasm[:4], name)
		sums[sha256.Sum256(wasm)] = true
		p := plugintest.LoadBytes(t, name, wasm)
		require.Equal(t, name, p.Description().Name)
		require.Equal(t, []abi.Kind{kinds[name]}, p.Description().Kinds)
	}
	require.Len(t, sums, 1, "one module for the three plugins")
	prompt := plugintest.LoadBytes(t, SystemPrompt, FirstParty[SystemPrompt])
	got, err := prompt.RenderPrompt(context.Background(), nil, &abi.RenderRequest{Sections: []abi.Section{{Key: "a", Text: " one "}, {Key: "b", Text: "two"}}})
	require.NoError(t, err)
	require.Equal(t, "one\n\ntwo", got)

	_, err = plugintest.Runtime(t).Load(context.Background(), "my-meter", FirstParty[TokenMeter])
	require.ErrorContains(t, err, `this module holds the plugins "system-prompt", "compaction-basic", "token-meter"; init names "my-meter": load it under one of their names`)
}
