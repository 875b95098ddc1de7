package loggen_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/internal/loggen"
)

func TestGenerateIsValidAndDeterministic(t *testing.T) {
	cfg := loggen.Small(3000)
	a, err := loggen.Events(cfg)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(a), 3000)
	b, err := loggen.Events(cfg)
	require.NoError(t, err)
	require.Equal(t, a, b)

	// Valid by construction, and a complete fold sees the compactions and
	// prompt changes.
	res, err := surface.Fold(a)
	require.NoError(t, err)
	var prompts, checkpoints int
	for _, r := range res.Replacements {
		switch a[r.Seq].Type {
		case surface.TypeSystemMessage:
			prompts++
			require.Len(t, r.Shadowed, 1)
		case surface.TypeUserMessage:
			checkpoints++
			require.Equal(t, surface.TypeCompactionStart, a[a[r.Seq].Sources[0]].Type)
			require.Equal(t, surface.TypeCompactionSummary, a[a[r.Seq].Sources[1]].Type)
			require.Equal(t, r.Shadowed, a[r.Seq].Sources[2:])
		}
	}
	require.Positive(t, prompts)
	require.Positive(t, checkpoints)
	require.Equal(t, surface.TypeSystemMessage, a[res.Nodes[0]].Type)
	kinds := map[string]int{}
	for _, e := range a {
		kinds[e.Type]++
	}
	for _, typ := range []string{surface.TypeToolCall, surface.TypeToolResult, surface.TypeRequestHeader,
		surface.TypeRequestContext, surface.TypeAssistantAttempt, surface.TypeLLMRetry, surface.TypeCompactionEnd} {
		require.Positive(t, kinds[typ], typ)
	}
}
