package inspect

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestRequestJSONIsBounded(t *testing.T) {
	path := copyDemo(t, t.TempDir(), "big.jsonl")
	result := bigResult(5 << 20)
	appendToolTurn(t, path, result)
	s := newServer(t, Options{Files: []string{path}})
	t.Cleanup(s.Close)
	m, err := s.model("big.jsonl")
	require.NoError(t, err)
	n := len(m.Requests) // the answer after the result: it carries it
	seq := m.Requests[n-1]
	target := "/api/s/big.jsonl/requests/" + itoa(int64(n))

	raw := ok(t, s, target)
	require.Less(t, len(raw), 512<<10, "the JSON of a request carrying 5 MB")
	var got requestJSON
	decode(t, raw, &got)
	wireBody := wire(t, path, seq)
	exact := strings.TrimSuffix(wireBody, "\n")
	require.Equal(t, n, got.Index)
	require.Equal(t, seq, got.Seq)
	require.True(t, strings.HasPrefix(exact, got.Body), "the body's first bytes")
	require.Equal(t, &Cut{Bytes: len(exact), Chars: utf8.RuneCountInString(exact), Shown: len(got.Body),
		URL: "/api/s/big.jsonl/requests/" + itoa(int64(n)) + "/body?download=1"}, got.BodyCut)
	require.LessOrEqual(t, len(got.Body), ShowBytes)
	require.Equal(t, wireBody, ok(t, s, got.BodyCut.URL), "the exact body (and the newline weir request prints)")

	// docs/cli.md quotes this marker.
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	require.NoError(t, err)
	quote := regexp.MustCompile("(?s)```json\n(\"bodyCut\": .*?)\n```").FindSubmatch(doc)
	require.NotNil(t, quote, "docs/cli.md quotes a bodyCut")
	var quoted struct {
		Cut Cut `json:"bodyCut"`
	}
	decode(t, "{"+string(quote[1])+"}", &quoted)
	require.Equal(t, *got.BodyCut, quoted.Cut, "the marker docs/cli.md quotes")

	whole := pretty([]byte(exact))
	require.NotNil(t, got.PrettyCut)
	require.Equal(t, len(whole), got.PrettyCut.Bytes)
	require.Equal(t, whole, ok(t, s, got.PrettyCut.URL))
	require.NotNil(t, got.DiffCut)
	prev := pretty([]byte(strings.TrimSuffix(wire(t, path, m.Requests[n-2]), "\n")))
	require.Equal(t, LineDiff(prev, whole), ok(t, s, got.DiffCut.URL))

	var tool *messageJSON
	for i := range got.Messages {
		if got.Messages[i].Kind == ItemTool && got.Messages[i].TextCut != nil {
			tool = &got.Messages[i]
		}
	}
	require.NotNil(t, tool, "the tool result is marked cut")
	require.Len(t, tool.Text, PartBytes)
	require.True(t, strings.HasPrefix(result, tool.Text))
	require.Equal(t, 5<<20-1, tool.TextCut.Chars, "characters, not bytes")
	require.Equal(t, 5<<20, tool.TextCut.Bytes)
	res := get(t, s, "GET", tool.TextCut.URL)
	require.Equal(t, "text/plain; charset=utf-8", res.Header.Get("Content-Type"))
	require.Equal(t, result, body(t, res), "the exact text")

	for _, bad := range []string{"messages/999/text", "messages/01/text", "messages/-1/text", "prompt/x", "nothing", "messages/0/calls/0/x"} {
		require.Equal(t, http.StatusNotFound, get(t, s, "GET", target+"/parts/"+bad).StatusCode, bad)
	}

	// A view costs its bounded JSON, not the block: the bytes allocated
	// per view of the built request (about 2 MiB, counted process-wide, so
	// other goroutines add to it) stay below one copy of the 5 MiB result.
	const views = 10
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range views {
		ok(t, s, target)
	}
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / views
	t.Logf("a JSON view of a request carrying a 5 MB result allocates %d KiB (JSON %d KiB)", per>>10, len(raw)>>10)
	require.Less(t, per, uint64(len(result)), "bytes allocated per view: less than one copy of the block")

	// Small strings are whole, without markers.
	var small requestJSON
	decode(t, ok(t, s, "/api/s/big.jsonl/requests/2"), &small)
	require.Nil(t, small.BodyCut)
	require.Nil(t, small.PrettyCut)
	require.Equal(t, strings.TrimSuffix(wire(t, path, m.Requests[1]), "\n"), small.Body)
	require.NotContains(t, ok(t, s, "/api/s/big.jsonl/requests/2"), "Cut")
}

func TestCutEndsOnACharacterBoundary(t *testing.T) {
	for _, c := range []struct {
		s, shown string
		limit    int
		cut      *Cut
	}{
		{"abc", "abc", 3, nil},
		{"abcd", "abc", 3, &Cut{Bytes: 4, Chars: 4, Shown: 3, URL: "u"}},
		{"aé", "a", 2, &Cut{Bytes: 3, Chars: 2, Shown: 1, URL: "u"}},
		{"éé", "é", 3, &Cut{Bytes: 4, Chars: 2, Shown: 2, URL: "u"}},
	} {
		shown, cut := cut(c.s, c.limit, "u")
		require.Equal(t, c.shown, shown, c.s)
		require.Equal(t, c.cut, cut, c.s)
	}
}

// BenchmarkRequestJSON5MB is a view of the JSON of a request carrying a
// 5 MB tool result, the request built (as for every view after the
// first).
func BenchmarkRequestJSON5MB(b *testing.B) {
	path := copyDemo(b, b.TempDir(), "big.jsonl")
	appendToolTurn(b, path, bigResult(5<<20))
	s := newServer(b, Options{Files: []string{path}})
	b.Cleanup(s.Close)
	m, err := s.model("big.jsonl")
	require.NoError(b, err)
	target := "/api/s/big.jsonl/requests/" + itoa(int64(len(m.Requests)))
	size := 0
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("GET", target, nil)
		r.Host = "127.0.0.1"
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
		size = w.Body.Len()
	}
	b.ReportMetric(float64(size), "json-bytes")
}
