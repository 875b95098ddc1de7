package eval_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host/eval"
)

// series builds a result of n requests whose input grows by step, with a
// compaction after every cmpEvery-th request and a prompt change at the
// requests in prompts.
func series(name string, n int, step int64, cmpEvery int, prompts ...int) *eval.Result {
	r := &eval.Result{Set: name}
	for i := 1; i <= n; i++ {
		q := eval.RequestStat{N: i, InputTokens: int64(i) * step}
		if cmpEvery > 0 && i%cmpEvery == 0 {
			q.Compactions = 1
		}
		for _, p := range prompts {
			if p == i {
				q.PromptChange = true
			}
		}
		r.Requests = append(r.Requests, q)
		r.Totals.PeakTokens = max(r.Totals.PeakTokens, q.InputTokens)
	}
	return r
}

// svgDoc is what the tests read of a chart: every element with its
// attributes and text, the document read strictly.
type svgElem struct {
	name  string
	attrs map[string]string
	text  string
}

func parseSVG(t *testing.T, b []byte) []svgElem {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	var out []svgElem
	var open []int
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "the chart is not well-formed XML")
		switch tok := tok.(type) {
		case xml.StartElement:
			e := svgElem{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			if len(out) == 0 {
				require.Equal(t, "http://www.w3.org/2000/svg", tok.Name.Space)
			}
			out = append(out, e)
			open = append(open, len(out)-1)
		case xml.EndElement:
			open = open[:len(open)-1]
		case xml.CharData:
			if len(open) > 0 {
				out[open[len(open)-1]].text += string(tok)
			}
		}
	}
	require.NotEmpty(t, out)
	require.Equal(t, "svg", out[0].name)
	require.Equal(t, "0 0 800 450", out[0].attrs["viewBox"])
	return out
}

func count(es []svgElem, name, class string) int {
	n := 0
	for _, e := range es {
		if e.name == name && e.attrs["class"] == class {
			n++
		}
	}
	return n
}

func TestChart(t *testing.T) {
	tests := []struct {
		name    string
		results []*eval.Result
		window  bool
	}{
		{"one set", []*eval.Result{series("base", 20, 500, 5, 3)}, false},
		{"two sets, window near", []*eval.Result{
			series("base", 30, 1000, 0, 1, 10),
			series("low", 30, 700, 4),
		}, true},
		{"a name to escape", []*eval.Result{series(`<a&b> "q" 'x'`+"\x01", 3, 10, 0)}, false},
		{"empty set", []*eval.Result{{Set: "none"}}, false},
		{"long session", []*eval.Result{series("a", 20000, 3, 997, 5000), series("b", 20000, 2, 0)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.window {
				for _, r := range tt.results {
					r.Window = 40000 // the peak, 30,000, is within half of it
				}
			}
			path := filepath.Join(t.TempDir(), "chart.svg")
			require.NoError(t, eval.Chart(tt.results, path))
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			es := parseSVG(t, b)

			require.Equal(t, len(tt.results), count(es, "polyline", "set"))
			wantCmp, wantPrompt := 0, 0
			for _, r := range tt.results {
				for _, q := range r.Requests {
					wantCmp += min(q.Compactions, 1)
					if q.PromptChange {
						wantPrompt++
					}
				}
			}
			require.Equal(t, wantCmp, count(es, "polygon", "compaction"))
			require.Equal(t, wantPrompt, count(es, "path", "prompt"))
			require.Equal(t, 1, count(es, "polygon", "key"))
			require.Equal(t, 1, count(es, "path", "key"))
			if tt.window {
				require.Equal(t, 1, count(es, "line", "window"))
			} else {
				require.Zero(t, count(es, "line", "window"))
			}

			// Each set's line has one point per request; each set has a
			// legend entry with its name, as written.
			i := 0
			var names []string
			for _, e := range es {
				switch {
				case e.name == "polyline" && e.attrs["class"] == "set":
					pts := strings.Fields(e.attrs["points"])
					require.Len(t, pts, len(tt.results[i].Requests), "set %d", i)
					i++
				case e.name == "text" && e.attrs["class"] == "name":
					names = append(names, e.text)
				}
			}
			for j, r := range tt.results {
				want := strings.ToValidUTF8(r.Set, "\uFFFD")
				want = strings.ReplaceAll(want, "\x01", "\uFFFD")
				require.Equal(t, want, names[j])
			}

			// Tick labels are whole numbers, rising.
			for _, g := range []string{"xtick", "ytick"} {
				var prev int64 = -1
				for _, e := range es {
					if e.name == "text" && e.attrs["class"] == g {
						v, err := strconv.ParseInt(strings.ReplaceAll(e.text, ",", ""), 10, 64)
						require.NoError(t, err, "%s label %q", g, e.text)
						require.Greater(t, v, prev, "%s labels", g)
						prev = v
					}
				}
				require.GreaterOrEqual(t, prev, int64(1), "%s has labels", g)
			}

			// The same results give the same bytes.
			again := filepath.Join(t.TempDir(), "again.svg")
			require.NoError(t, eval.Chart(tt.results, again))
			b2, err := os.ReadFile(again)
			require.NoError(t, err)
			require.Equal(t, b, b2)
		})
	}
}

func TestChartPath(t *testing.T) {
	dir := t.TempDir()
	r := []*eval.Result{series("base", 3, 10, 0)}
	for _, name := range []string{"chart.png", "chart.gif", "chart", "chart.svg.txt"} {
		err := eval.Chart(r, filepath.Join(dir, name))
		require.ErrorContains(t, err, "must end in .svg", name)
		_, serr := os.Stat(filepath.Join(dir, name))
		require.True(t, os.IsNotExist(serr), "%s was written", name)
	}
	require.NoError(t, eval.Chart(r, filepath.Join(dir, "CHART.SVG")))
}

// BenchmarkChart draws three sets of 5,000 requests.
func BenchmarkChart(b *testing.B) {
	results := []*eval.Result{series("a", 5000, 7, 50, 100), series("b", 5000, 5, 30), series("c", 5000, 3, 0, 2500)}
	path := filepath.Join(b.TempDir(), "chart.svg")
	b.ReportAllocs()
	for b.Loop() {
		if err := eval.Chart(results, path); err != nil {
			b.Fatal(err)
		}
	}
}

func ExampleChart() {
	dir, err := os.MkdirTemp("", "chart")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	results := []*eval.Result{series("baseline", 10, 1200, 4), series("low", 10, 800, 3)}
	if err := eval.Chart(results, filepath.Join(dir, "out.svg")); err != nil {
		panic(err)
	}
	fmt.Println(eval.Chart(results, "out.png")) // refused by its name: nothing is written
	// Output:
	// eval: chart out.png: the file must end in .svg (the chart is SVG only; convert it with any SVG renderer for a bitmap)
}
