package inspect

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// copies writes n copies of the file at src into dir as s-NNNN.jsonl.
func copies(tb testing.TB, src, dir string, n int) {
	tb.Helper()
	b, err := os.ReadFile(src)
	require.NoError(tb, err)
	for i := range n {
		require.NoError(tb, os.WriteFile(filepath.Join(dir, fmt.Sprintf("s-%04d.jsonl", i)), b, 0o600))
	}
}

// waitIndexed polls the sessions API until no session is pending.
func waitIndexed(t *testing.T, s *Server) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var out struct {
			Pending int `json:"pending"`
		}
		decode(t, ok(t, s, "/api/sessions"), &out)
		if out.Pending == 0 {
			return
		}
	}
	t.Fatal("the index was not built in 60s")
}

func TestFolderIndexAndModelLRU(t *testing.T) {
	big := bigSession(t, t.TempDir(), 2500) // ~0.55 MB
	st, err := os.Stat(big)
	require.NoError(t, err)
	dir := t.TempDir()
	n := int(2*inlineBudget/st.Size()) + 6
	copies(t, big, dir, n)
	s := newServer(t, Options{Dir: dir, Models: 2})
	t.Cleanup(s.Close)

	var out struct {
		Sessions []Summary `json:"sessions"`
		Total    int       `json:"total"`
		Pending  int       `json:"pending"`
	}
	decode(t, ok(t, s, "/api/sessions"), &out)
	require.Equal(t, n, out.Total)
	require.Len(t, out.Sessions, n)
	inline := int(inlineBudget / st.Size())
	require.Greater(t, out.Pending, 0, "the first page does not read every log")
	for i, sum := range out.Sessions {
		require.Equal(t, "big", sum.ID, "every row has its header's id")
		if i < inline {
			require.False(t, sum.Pending, "within the inline budget")
			require.Positive(t, sum.Turns)
		}
	}
	page := ok(t, s, "/")
	require.Contains(t, page, "not indexed yet")
	require.Contains(t, page, "indexing…")

	waitIndexed(t, s)
	decode(t, ok(t, s, "/api/sessions"), &out)
	for _, sum := range out.Sessions {
		require.False(t, sum.Pending)
		require.Equal(t, out.Sessions[0].Turns, sum.Turns)
		require.Equal(t, out.Sessions[0].Tokens, sum.Tokens)
	}
	s.mu.Lock()
	require.Empty(t, s.cache, "indexing keeps no model")
	s.mu.Unlock()

	// Whole models: at most Models of them, the least recently used go.
	for _, name := range []string{"s-0000.jsonl", "s-0001.jsonl", "s-0002.jsonl", "s-0001.jsonl", "s-0003.jsonl"} {
		ok(t, s, "/s/"+name+"/requests?n=1")
	}
	s.mu.Lock()
	var kept []string
	for name := range s.cache {
		kept = append(kept, name)
	}
	s.mu.Unlock()
	require.ElementsMatch(t, []string{"s-0001.jsonl", "s-0003.jsonl"}, kept)

	// A file that changes is indexed again.
	appendTurn(t, filepath.Join(dir, "s-0005.jsonl"), "one more", "answer")
	waitIndexed(t, s)
	decode(t, ok(t, s, "/api/sessions"), &out)
	require.Equal(t, out.Sessions[0].Turns+1, out.Sessions[5].Turns)
}

func TestSessionsArePaged(t *testing.T) {
	dir := t.TempDir()
	copies(t, demoPath(t), dir, SessionsPage+3)
	s := newServer(t, Options{Dir: dir})
	t.Cleanup(s.Close)
	first := ok(t, s, "/")
	require.Equal(t, SessionsPage, strings.Count(first, `<td class="name"><a href=`))
	require.Contains(t, first, `<a href="/?page=2">next →</a>`)
	second := ok(t, s, "/?page=2")
	require.Equal(t, 3, strings.Count(second, `<td class="name"><a href=`))
	require.Contains(t, second, `<a href="/?page=1">← previous</a>`)
	require.Contains(t, second, "s-0102.jsonl")
	require.Equal(t, http.StatusBadRequest, get(t, s, "GET", "/?page=0").StatusCode)
}

func TestSymlinksInTheFolder(t *testing.T) {
	dir := t.TempDir()
	outside := copyDemo(t, t.TempDir(), "outside.jsonl")
	inside := copyDemo(t, dir, "inside.jsonl")
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "out.jsonl")))
	require.NoError(t, os.Symlink(inside, filepath.Join(dir, "in.jsonl")))
	require.NoError(t, os.Symlink("../"+filepath.Base(filepath.Dir(outside))+"/outside.jsonl", filepath.Join(dir, "rel.jsonl")))
	s := newServer(t, Options{Dir: dir})
	t.Cleanup(s.Close)
	page := ok(t, s, "/")
	require.Contains(t, page, `<a href="/s/in.jsonl/">in.jsonl</a>`, "a link inside the folder is served")
	require.NotContains(t, page, `href="/s/out.jsonl/"`)
	require.Contains(t, page, "a symbolic link that does not lead to a file inside the folder: not followed")
	ok(t, s, "/s/in.jsonl/")
	for _, name := range []string{"out.jsonl", "rel.jsonl"} {
		for _, target := range []string{"/s/" + name + "/", "/api/s/" + name + "/summary", "/s/" + name + "/requests?n=1", "/s/" + name + "/live"} {
			res := get(t, s, "GET", target)
			require.Equal(t, http.StatusNotFound, res.StatusCode, target)
			require.Contains(t, body(t, res), "not followed", target)
		}
	}
}

// BenchmarkFolderFirstPage serves the sessions page of a cold server over
// a folder of sessions of about 1 MB each (300, or 1,000 with
// WEIR_LONG=1), and reports the heap once the whole folder is indexed.
func BenchmarkFolderFirstPage(b *testing.B) {
	n := 300
	if os.Getenv("WEIR_LONG") == "1" {
		n = 1000
	}
	dir := b.TempDir()
	copies(b, bigSession(b, b.TempDir(), 4600), dir, n) // 1.0 MB each
	serve := func(s *Server) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = "127.0.0.1"
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
	for b.Loop() {
		b.StopTimer()
		s, err := New(Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		serve(s)
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
	b.StopTimer()
	s, err := New(Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	for {
		_, _, pending := s.summaries(0)
		if pending == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.ReportMetric(time.Since(start).Seconds(), "s-to-index-page-1")
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "MiB-heap-indexed")
	// The process's resident set (Linux), the benchmark's own included.
	if st, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(st), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
				kb, _ := strconv.Atoi(f[1])
				b.ReportMetric(float64(kb)/1024, "MiB-rss-indexed")
			}
		}
	}
}
