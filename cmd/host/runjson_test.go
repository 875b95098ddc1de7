package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
)

// TestRunJSON: "run --json" prints one JSON object on standard output and
// nothing else there: the session, the turn's end, its steps, the last
// assistant text, and exactly the log lines the turn appended (the second
// turn's, not the first's, on a resumed session).
func TestRunJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	session := filepath.Join(dir, "s.jsonl")
	lines := func() []string {
		raw, err := os.ReadFile(session)
		require.NoError(t, err)
		return strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	}
	have := 1 // the header
	for turn := int64(1); turn <= 2; turn++ {
		r := runHost(t, dir, "", "run", "--route", "offline", "--json", "--session", session, "hello")
		require.Equal(t, 0, r.code, r.stderr)
		var out struct {
			Session string                    `json:"session"`
			Turn    int64                     `json:"turn"`
			End     map[string]any            `json:"end"`
			Steps   int                       `json:"steps"`
			Text    string                    `json:"text"`
			Events  []jsontext.Value          `json:"events"`
			Rest    map[string]jsontext.Value `json:",unknown"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), "standard output is one JSON object:\n%s", r.stdout)
		require.Empty(t, out.Rest)
		require.Equal(t, session, out.Session)
		require.Equal(t, turn, out.Turn)
		require.Equal(t, map[string]any{"kind": "completed"}, out.End)
		require.Equal(t, 1, out.Steps)
		require.Contains(t, out.Text, "I am the offline model")
		require.NotContains(t, r.stdout, "assistant: ", "the streamed text is not printed")
		require.Contains(t, r.stderr, "turn "+string(rune('0'+turn))+": completed")

		all := lines()
		require.GreaterOrEqual(t, len(all)-have, len(out.Events))
		for _, l := range all[have : len(all)-len(out.Events)] {
			require.Contains(t, l, `"type":"session/end-seed"`, "only the opening's own event precedes the recorded ones")
		}
		logged := all[len(all)-len(out.Events):]
		require.Contains(t, logged[0], `"type":"turn/start"`)
		for i, ev := range out.Events {
			c := ev.Clone()
			require.NoError(t, c.Compact())
			require.Equal(t, logged[i], string(c), "event %d is the log's line", i)
		}
		have = len(all)
	}
}
