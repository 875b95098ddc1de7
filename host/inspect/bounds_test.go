package inspect

import (
	"net/http"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestShow(t *testing.T) {
	long := strings.Repeat("é", ShowLine) // 2 bytes each
	many := strings.Repeat(strings.Repeat("y", 99)+"\n", ShowBytes/50)
	for _, tc := range []struct {
		name  string
		in    string
		text  string
		cut   bool
		lines int
	}{
		{"short", "a\nb", "a\nb", false, 0},
		{"a long line is cut on a character", long, strings.Repeat("é", ShowLine/2) + "…", true, 1},
		{"many lines stop at the bound", many, many[:ShowBytes] + "…", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := show(tc.in)
			require.Equal(t, tc.text, s.Text)
			require.Equal(t, tc.cut, s.Cut)
			require.Equal(t, tc.lines, s.Lines)
			require.Equal(t, utf8.RuneCountInString(tc.in), s.Chars)
			require.True(t, utf8.ValidString(s.Text))
			require.LessOrEqual(t, len(s.Text), ShowBytes+len("…"))
		})
	}
}

// TestBigBlocksAreBounded serves a session whose tool result is 5 MB on one
// line: the pages stay small and link to the exact bytes.
func TestBigBlocksAreBounded(t *testing.T) {
	dir := t.TempDir()
	path := copyDemo(t, dir, "big.jsonl")
	result := bigResult(5 << 20)
	seq := appendToolTurn(t, path, result)
	s := newServer(t, Options{Files: []string{path}})

	traj := ok(t, s, "/s/big.jsonl/")
	require.Less(t, len(traj), 200<<10, "the trajectory page")
	require.Contains(t, traj, "(5242879 chars)", "characters, not bytes")
	href := "/api/s/big.jsonl/events/" + itoa(seq) + "/text"
	require.Contains(t, traj, `<a href="`+href+`" download>`)
	res := get(t, s, "GET", href)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/plain; charset=utf-8", res.Header.Get("Content-Type"))
	require.Equal(t, `attachment; filename=big-seq-`+itoa(seq)+`.txt`, res.Header.Get("Content-Disposition"))
	require.Equal(t, result, body(t, res), "the whole text")
	ev := ok(t, s, "/api/s/big.jsonl/events/"+itoa(seq))
	require.Contains(t, ev, result)
	require.Equal(t, http.StatusNotFound, get(t, s, "GET", "/api/s/big.jsonl/events/999999").StatusCode)
	require.Equal(t, http.StatusBadRequest, get(t, s, "GET", "/api/s/big.jsonl/events/-1").StatusCode)

	var n int
	for i := range 20 {
		if strings.Contains(ok(t, s, "/api/s/big.jsonl/requests/"+itoa(int64(i+1))+"/body"), "xxxxxxxx") {
			n = i + 1
			break
		}
	}
	require.NotZero(t, n, "a request carries the result")
	page := ok(t, s, "/s/big.jsonl/requests?n="+itoa(int64(n)))
	require.Less(t, len(page), 4*ShowBytes+64<<10, "the request page (pretty, raw and diff, each bounded)")
	require.Contains(t, page, `id="body-cut"`)
	res = get(t, s, "GET", "/api/s/big.jsonl/requests/"+itoa(int64(n))+"/body?download=1")
	require.Equal(t, `attachment; filename=big-request-`+itoa(int64(n))+`.json`, res.Header.Get("Content-Disposition"))
	require.Contains(t, body(t, res), result, "the exact body")

	// A view of a built request costs its bounded page, not the block:
	// measured as bytes allocated per view.
	const views = 10
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range views {
		ok(t, s, "/s/big.jsonl/requests?n="+itoa(int64(n)))
	}
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / views
	t.Logf("a view of a request carrying a 5 MB result allocates %d KiB (page %d KiB)", per>>10, len(page)>>10)
	require.Less(t, per, uint64(4<<20), "bytes allocated per view")
}

func TestVisible(t *testing.T) {
	for _, tc := range []struct{ in, out string }{
		{"plain", "plain"},
		{"invoice\u202Efdp.exe", "invoice<U+202E>fdp.exe"},
		{"a\u200Bb\uFEFF", "a<U+200B>b<U+FEFF>"},
		// Tag characters spell "hi" invisibly after the text.
		{"ok\U000E0068\U000E0069\U000E007F", "ok<U+E0068><U+E0069><U+E007F>"},
		{"\U000E0001lang", "<U+E0001>lang"},
		{"\U000E0080", "\U000E0080"}, // past the tag block: a variation selector, left alone
	} {
		require.Equal(t, tc.out, visible(tc.in), "%q", tc.in)
	}
}

func TestRequestAtNegativeIsBadRequest(t *testing.T) {
	s := newServer(t, Options{Files: []string{demoPath(t)}})
	t.Cleanup(s.Close)
	for _, at := range []string{"-1", "x"} {
		res := get(t, s, "GET", "/s/demo.jsonl/requests?at="+at)
		require.Equal(t, http.StatusBadRequest, res.StatusCode, at)
		require.Contains(t, body(t, res), "is not a seq")
	}
}
