package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
)

// TestCopyFollowsTheFileOrIDRule: export and import read SESSION as every
// command does (docs/cli.md): demo.jsonl and ./demo.jsonl are files, not
// ids of the configured store; with --from FILE the SESSION argument must
// name that session; with --from STORE it must be an id there; and a file
// store's session is copied under the id it is listed by, its file name.
func TestCopyFollowsTheFileOrIDRule(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "sessions", "demo.jsonl"))
	require.NoError(t, err)
	writeFile(t, filepath.Join(dir, "demo.jsonl"), string(raw))
	writeFile(t, filepath.Join(dir, "d", "abc.jsonl"), string(raw))
	var h struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(raw[:strings.IndexByte(string(raw), '\n')], &h))
	require.NotEqual(t, "abc", h.ID)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"export of a file name", []string{"export", "demo.jsonl", "--to", "sqlite:x.db"}, 0, "copied session " + h.ID + " (51 events) as " + h.ID},
		{"export of a relative path", []string{"export", "./demo.jsonl", "--to", "file:out"}, 0, "as " + h.ID},
		{"import of a file without --from", []string{"import", "demo.jsonl", "--to", "sqlite:y.db"}, 0, "as " + h.ID},
		{"import of the --from file itself", []string{"import", "./demo.jsonl", "--from", "demo.jsonl", "--to", "sqlite:y2.db"}, 0, "as " + h.ID},
		{"import of the --from file's id", []string{"import", h.ID, "--from", "demo.jsonl", "--to", "sqlite:z.db"}, 0, "as " + h.ID},
		{"import of another id than the --from file's", []string{"import", "whatever", "--from", "demo.jsonl", "--to", "sqlite:z2.db"}, 2,
			"--from demo.jsonl holds session " + h.ID + ", not whatever"},
		{"import of another file than --from", []string{"import", "other.jsonl", "--from", "demo.jsonl"}, 2,
			"other.jsonl is a session file and --from names another, demo.jsonl"},
		{"a file given with --from STORE", []string{"export", "demo.jsonl", "--from", "sqlite:x.db", "--to", "file:o"}, 2,
			"demo.jsonl is a session file, but --from names the store sqlite:x.db"},
		{"import of an id without --from", []string{"import", "nope"}, 2, "give the store to import from with --from STORE"},
		{"a file store's session by its file name", []string{"import", "abc", "--from", "file:d", "--to", "sqlite:w.db"}, 0,
			"copied session abc (51 events) as abc"},
		{"listed under that name", []string{"sessions", "list", "--store", "sqlite:w.db"}, 0, "abc "},
	}
	for _, c := range cases {
		r := configRun(t, dir, nil, c.args...)
		require.Equal(t, c.code, r.code, "%s: %s", c.name, r.stderr)
		if c.code == 0 {
			require.Contains(t, r.stdout, c.want, c.name)
		} else {
			require.Contains(t, r.stderr, c.want, c.name)
			require.Empty(t, r.stdout, c.name)
		}
	}
	copied, err := os.ReadFile(filepath.Join(dir, "out", h.ID+".jsonl"))
	require.NoError(t, err)
	require.Equal(t, raw, copied, "the exported file is the source, byte for byte")
	_, err = os.Stat(filepath.Join(dir, ".weir"))
	require.ErrorIs(t, err, os.ErrNotExist, "no command read or wrote the configured store")
}
