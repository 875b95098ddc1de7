package v2

import (
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/*.v3.jsonl from the conversion")

// TestGolden pins the exact v3 bytes of a hand-written v2 session: prompt,
// tool call, prompt change, ignorable event, compaction, config change with
// a prompt change, a retry that drops the prompt, an image block, v2
// leniencies and a torn tail.
func TestGolden(t *testing.T) {
	in, err := os.ReadFile("testdata/session.v2.jsonl")
	require.NoError(t, err)
	c := convertChecked(t, in)
	if *update {
		require.NoError(t, os.WriteFile("testdata/session.v3.jsonl", c.out, 0o644))
	}
	want, err := os.ReadFile("testdata/session.v3.jsonl")
	require.NoError(t, err)
	require.Equal(t, string(want), string(c.out))
	// Node 0, the step-2 change, the change back in turn 2 (with a model
	// change: "change" + startsSeries), the retry that drops the prompt.
	require.Equal(t, []int64{2, 11, 23, 28}, c.res.Prompts)
	require.Equal(t, Stats{
		Leniency:  Leniency{ImplicitAppends: 3, EmptyKeys: 1, AssistantSources: 1},
		TornBytes: len(`{"type":"assistant/mess`),
		Appends:   1, Replacements: 3, Headers: 4, Reasons: 3, Ignorable: 1,
	}, c.res.Stats)
	require.Len(t, c.log.Messages(), 4, "checkpoint, m6, m7, m8: the emptied head projects to nothing")
}
