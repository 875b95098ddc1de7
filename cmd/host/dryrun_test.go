package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host"
)

// compact --dry-run prints the receipt and writes nothing: the session
// file keeps its bytes, and the real compaction then does what the
// receipt said.
func TestCompactDryRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	orig, err := os.ReadFile(filepath.Join(repoRoot(t), "examples/sessions/demo.jsonl"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, orig, 0o644))

	text := runHost(t, dir, "", "compact", "--dry-run", "--route", "offline", file)
	require.Equal(t, 0, text.code, text.stderr)
	require.Contains(t, text.stdout, "nothing was written")
	require.Contains(t, text.stdout, "compaction by compaction-basic")
	require.Contains(t, text.stdout, "<compacted-summary>")
	require.Regexp(t, `tokens: \d+ → \d+`, text.stdout)

	js := runHost(t, dir, "", "compact", "--dry-run", "--json", "--route", "offline", file)
	require.Equal(t, 0, js.code, js.stderr)
	var r host.CompactReceipt
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &r))
	require.True(t, r.Changed)
	require.Len(t, r.Compactions, 1)
	require.NotEmpty(t, r.Compactions[0].Shadowed)
	require.Less(t, r.Compactions[0].TokensAfter, r.Compactions[0].TokensBefore)
	require.Equal(t, 1, r.SummarizeCalls)

	after, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, string(orig), string(after), "a dry run changed the session file")

	bad := runHost(t, dir, "", "compact", "--json", "--route", "offline", file)
	require.Equal(t, 2, bad.code)
	require.Contains(t, bad.stderr, "--json needs --dry-run")

	real := runHost(t, dir, "", "compact", "--route", "offline", file)
	require.Equal(t, 0, real.code, real.stderr)
	var in inspectJSON
	out := runHost(t, dir, "", "inspect", "--json", file)
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &in))
	require.Len(t, in.Surface, r.NodesAfter)

	// On the just-compacted session the dry run says what the real
	// command then does, with its exit status.
	again := runHost(t, dir, "", "compact", "--dry-run", "--route", "offline", file)
	realAgain := runHost(t, dir, "", "compact", "--route", "offline", file)
	require.Equal(t, realAgain.code, again.code, "dry run: %s%s\nreal: %s%s", again.stdout, again.stderr, realAgain.stdout, realAgain.stderr)
	require.NotContains(t, again.stdout, "seq 0..0")
	require.Equal(t, 1, realAgain.code, "the real compaction of a just-compacted session fails: %s", realAgain.stderr)
	require.NotContains(t, again.stdout, "nothing to compact")
	require.Contains(t, again.stderr, "would fail")
}
