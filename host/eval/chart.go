package eval

import (
	"fmt"
	"image/color"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Chart draws the input tokens per request of every result on one chart,
// with the requests that follow a compaction marked by a triangle and
// those whose system prompt changed by a cross (the context window as a
// dashed line when a set comes within half of it), and writes it to path; the
// extension picks the format (.svg or .png).
func Chart(results []*Result, path string) error {
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".svg" && ext != ".png" {
		return fmt.Errorf("eval: chart %s: the file must end in .svg or .png", path)
	}
	p := plot.New()
	p.Title.Text = "input tokens per request"
	p.X.Label.Text = "request"
	p.Y.Label.Text = "input tokens"
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	window, peak := int64(0), int64(0)
	var cmpAll, promptAll []plotter.XYs
	for i, r := range results {
		pts := make(plotter.XYs, len(r.Requests))
		var cmp, prompt plotter.XYs
		for j, q := range r.Requests {
			pts[j] = plotter.XY{X: float64(q.N), Y: float64(q.InputTokens)}
			if q.Compactions > 0 {
				cmp = append(cmp, pts[j])
			}
			if q.PromptChange {
				prompt = append(prompt, pts[j])
			}
		}
		window, peak = max(window, r.Window), max(peak, r.Totals.PeakTokens)
		c := plotutil.Color(i)
		line, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("eval: chart: set %q: %w", r.Set, err)
		}
		line.Color = c
		line.Width = vg.Points(1.5)
		line.Dashes = plotutil.Dashes(i)
		p.Add(line)
		p.Legend.Add(r.Set, line)
		cmpAll, promptAll = append(cmpAll, cmp), append(promptAll, prompt)
	}
	for i := range results {
		c := plotutil.Color(i)
		if err := marks(p, cmpAll[i], c, draw.TriangleGlyph{}, "compaction", i == 0); err != nil {
			return err
		}
		if err := marks(p, promptAll[i], c, draw.CrossGlyph{}, "prompt change", i == 0); err != nil {
			return err
		}
	}
	// The window is drawn when a set comes near it; far above the lines it
	// would flatten them.
	if window > 0 && peak*2 >= window {
		n := 1
		for _, r := range results {
			n = max(n, len(r.Requests))
		}
		w, err := plotter.NewLine(plotter.XYs{{X: 1, Y: float64(window)}, {X: float64(n), Y: float64(window)}})
		if err != nil {
			return err
		}
		w.Color = color.Gray{Y: 128}
		w.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(w)
		p.Legend.Add("context window", w)
	}
	p.Y.Min = 0
	if err := p.Save(8*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("eval: chart: %w", err)
	}
	return nil
}

// marks adds glyphs at pts; legend adds an entry once.
func marks(p *plot.Plot, pts plotter.XYs, c color.Color, shape draw.GlyphDrawer, name string, legend bool) error {
	if len(pts) == 0 {
		if legend {
			// Keep the legend stable: say what the marks mean even when the
			// first set has none.
			s, err := plotter.NewScatter(plotter.XYs{})
			if err != nil {
				return err
			}
			s.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(4), Shape: shape}
			p.Legend.Add(name, s)
		}
		return nil
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return fmt.Errorf("eval: chart: %w", err)
	}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(4), Shape: shape}
	p.Add(s)
	if legend {
		key, err := plotter.NewScatter(plotter.XYs{})
		if err != nil {
			return err
		}
		key.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(4), Shape: shape}
		p.Legend.Add(name, key)
	}
	return nil
}
