package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
)

// compact --range START:END compacts exactly that region with
// compaction-basic (compaction.region): one turn of the demo session, in
// the middle of the surface, is replaced by a checkpoint; node 0 and the
// nodes around the region stay.
func TestCompactRange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	orig, err := os.ReadFile(filepath.Join(repoRoot(t), "examples/sessions/demo.jsonl"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, orig, 0o644))

	var before inspectJSON
	require.NoError(t, json.Unmarshal([]byte(runHost(t, dir, "", "inspect", "--json", file).stdout), &before))
	// The region: the first whole turn after node 0 that another turn
	// follows (from a user/message up to the node before the next one).
	var users []int
	for i, n := range before.Surface {
		if i > 0 && n.Type == "user/message" {
			users = append(users, i)
		}
	}
	require.GreaterOrEqual(t, len(users), 2, "the demo has two user turns on its surface")
	from, to := users[0], users[1]-1
	start, end := before.Surface[from].Seq, before.Surface[to].Seq
	arg := strconv.FormatInt(start, 10) + ":" + strconv.FormatInt(end, 10)

	for _, bad := range [][]string{{"--range", "9:-3"}, {"--range", "x"}, {"--range", arg, "--dry-run"}} {
		r := runHost(t, dir, "", append(append([]string{"compact", "--route", "offline"}, bad...), file)...)
		require.Equal(t, 2, r.code, "%v: %s", bad, r.stderr)
	}
	reversed := runHost(t, dir, "", "compact", "--route", "offline", "--range", strconv.FormatInt(end, 10)+":"+strconv.FormatInt(start, 10), file)
	require.Equal(t, 1, reversed.code)
	require.Contains(t, reversed.stderr, "comes after its end")
	missing := runHost(t, dir, "", "compact", "--route", "offline", "--range", strconv.FormatInt(start, 10)+":999999", file)
	require.Equal(t, 1, missing.code)
	require.Contains(t, missing.stderr, "seq 999999 is not a current surface node")

	r := runHost(t, dir, "", "compact", "--route", "offline", "--range", arg, file)
	require.Equal(t, 0, r.code, r.stderr)
	var after inspectJSON
	require.NoError(t, json.Unmarshal([]byte(runHost(t, dir, "", "inspect", "--json", file).stdout), &after))
	c := after.Compactions[len(after.Compactions)-1]
	require.Empty(t, c.Error)
	require.Equal(t, "compaction-basic", c.Plugin)
	var want []int64
	for _, n := range before.Surface[from : to+1] {
		want = append(want, n.Seq)
	}
	require.Equal(t, want, c.Shadowed, "exactly the region")
	require.Len(t, after.Surface, len(before.Surface)-(to-from))
	require.Equal(t, before.Surface[:from], after.Surface[:from], "node 0 and the nodes before the region stay")
	require.Equal(t, c.Checkpoint, after.Surface[from].Seq)
	for i, n := range before.Surface[to+1:] {
		require.Equal(t, n.Seq, after.Surface[from+1+i].Seq, "the nodes after the region stay")
	}
	requireLogMatchesSchemas(t, file)
}
