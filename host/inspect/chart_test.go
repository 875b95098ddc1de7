package inspect

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

func TestChartDownsamples(t *testing.T) {
	for _, n := range []int{1, 7, ChartColumns, ChartColumns + 1, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			points := make([]Point, n)
			var top int
			for i := range points {
				// A sawtooth with one peak: downsampling must keep it.
				v := int64(1000 + (i%37)*100)
				if i == n*2/3 {
					v, top = 9000, i
				}
				points[i] = Point{Index: i + 1, Seq: int64(10 * (i + 1)), Tokens: v, Usage: &surface.Usage{Input: v / 2}}
			}
			m := &Model{Window: 10000}
			c := drawChart(m, points, []Mark{{Seq: int64(10*n + 5), Kind: "compaction", Label: "at the end"}, {Seq: 1, Kind: "prompt", Label: "at the start"}}, false)
			require.Equal(t, n > ChartColumns, c.Dense)
			require.Len(t, c.Dots, min(n, ChartColumns), "one point per column")
			require.Len(t, c.Usage, min(n, ChartColumns), "one provider mark per column")
			require.LessOrEqual(t, len(strings.Fields(c.Meter)), 2*min(n, ChartColumns), "the line: a column's minimum and maximum")
			if n <= ChartColumns {
				require.Len(t, strings.Fields(c.Meter), n, "every request when they fit")
			}
			found := false
			for _, d := range c.Dots {
				require.GreaterOrEqual(t, d.X, c.Left)
				require.LessOrEqual(t, d.X, c.W-20)
				found = found || d.Index == top+1
			}
			require.True(t, found, "the peak's request has its point")
			require.Equal(t, "end", c.Marks[0].Anchor, "a mark at the right edge keeps its label inside")
			require.Equal(t, c.Left+c.W-c.Left-20, c.Marks[0].X)
		})
	}
}

func TestTokensTableIsPaged(t *testing.T) {
	path := bigSession(t, t.TempDir(), 2000)
	s := newServer(t, Options{Files: []string{path}})
	t.Cleanup(s.Close)
	m, err := s.model("big.jsonl")
	require.NoError(t, err)
	n := len(m.Requests)
	require.Greater(t, n, TableRows)
	first := ok(t, s, "/s/big.jsonl/tokens")
	require.Equal(t, TableRows, strings.Count(first, "<tr><td><a href="))
	require.Contains(t, first, `<a href="/s/big.jsonl/tokens?page=2">next →</a>`)
	second := ok(t, s, "/s/big.jsonl/tokens?page=2&scale=data")
	require.Equal(t, n-TableRows, strings.Count(second, "<tr><td><a href="))
	require.Contains(t, second, `<a href="/s/big.jsonl/tokens?page=1&amp;scale=data">← previous</a>`)
	require.Contains(t, second, fmt.Sprintf(">%d</a>", n), "the last request")
	require.Equal(t, http.StatusNotFound, get(t, s, "GET", "/s/big.jsonl/tokens?page=3").StatusCode)
}

// BenchmarkTokensFirstChart5000 is the first tokens chart of a session of
// 5,000 requests: the token meter's one pass over the log, measuring each
// request's context as it reaches its settlement.
func BenchmarkTokensFirstChart5000(b *testing.B) {
	path := bigSession(b, b.TempDir(), 27_500)
	sess, err := Load(path)
	if err != nil {
		b.Fatal(err)
	}
	m := Build(sess)
	if len(m.Requests) < 5000 {
		b.Fatalf("%d requests", len(m.Requests))
	}
	b.ReportAllocs()
	for b.Loop() {
		m.meter = tokenTrack{} // a model whose chart was never drawn
		if points, _ := m.Chart(); len(points) != len(m.Requests) {
			b.Fatalf("%d points", len(points))
		}
	}
}

// BenchmarkTokensPage5000 serves the tokens page of a session of 5,000
// requests (the model loaded, its chart priced: s-first-chart is that
// pass of the meter over the log): the chart's layout and the page, which
// holds at most ChartColumns points and one page of the table.
func BenchmarkTokensPage5000(b *testing.B) {
	path := bigSession(b, b.TempDir(), 27_500)
	s := newServer(b, Options{Files: []string{path}})
	b.Cleanup(s.Close)
	m, err := s.model("big.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	if len(m.Requests) < 5000 {
		b.Fatalf("%d requests", len(m.Requests))
	}
	start := time.Now()
	m.Chart() // the meter's pass, once per model
	first := time.Since(start)
	size, marks := 0, 0
	for b.Loop() {
		r := httptest.NewRequest("GET", "/s/big.jsonl/tokens", nil)
		r.Host = "127.0.0.1"
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
		size = w.Body.Len()
		marks = strings.Count(w.Body.String(), "<circle") + strings.Count(w.Body.String(), "<rect")
	}
	b.ReportMetric(float64(size), "page-bytes")
	b.ReportMetric(float64(marks), "svg-marks")
	b.ReportMetric(first.Seconds(), "s-first-chart")
}
