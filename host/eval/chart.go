package eval

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Chart draws the input tokens per request of every result on one chart,
// with the requests that follow a compaction marked by a triangle and
// those whose system prompt changed by a cross (the context window as a
// dashed line when a set comes within half of it), and writes it to path
// as a standalone SVG document. The path must end in .svg: the chart is
// vector only (convert it with any SVG renderer for a bitmap).
//
// The same results give the same bytes. Every point of every set is on its
// line; a marker is drawn only where there is something to mark.
func Chart(results []*Result, path string) error {
	if err := CheckChartPath(path); err != nil {
		return err
	}
	if err := os.WriteFile(path, chartSVG(results), 0o644); err != nil {
		return fmt.Errorf("eval: chart: %w", err)
	}
	return nil
}

// CheckChartPath says whether Chart can write to path by its name: the
// file must end in .svg.
func CheckChartPath(path string) error {
	if !strings.EqualFold(filepath.Ext(path), ".svg") {
		return fmt.Errorf("eval: chart %s: the file must end in .svg (the chart is SVG only; convert it with any SVG renderer for a bitmap)", path)
	}
	return nil
}

// The chart's geometry, in SVG user units (pixels at 100 per inch: the
// chart is 8 × 4.5 inches).
const (
	chartW, chartH = 800, 450
	plotLeft       = 80
	plotRight      = chartW - 20
	plotTop        = 40
	plotBottom     = chartH - 50
	markSize       = 4.5
)

// chartPalette and chartDashes tell the sets apart, in colour and in
// black and white.
var (
	chartPalette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}
	chartDashes  = []string{"", "6 3", "2 2", "8 3 2 3"}
)

// chartSVG lays out and writes the chart.
func chartSVG(results []*Result) []byte {
	n, top := 1, int64(0)
	window, peak := int64(0), int64(0)
	for _, r := range results {
		n = max(n, len(r.Requests))
		for _, q := range r.Requests {
			top = max(top, q.InputTokens)
		}
		window, peak = max(window, r.Window), max(peak, r.Totals.PeakTokens)
	}
	// The window is drawn when a set comes near it; far above the lines it
	// would flatten them.
	drawWindow := window > 0 && peak*2 >= window
	if drawWindow {
		top = max(top, window)
	}
	xTicks := niceTicks(1, float64(max(n, 2)))
	yTicks := niceTicks(0, float64(max(top, 1)))
	xMin, xMax := 1.0, math.Max(float64(max(n, 2)), xTicks[len(xTicks)-1])
	yMax := yTicks[len(yTicks)-1]
	px := func(x float64) float64 { return plotLeft + (x-xMin)/(xMax-xMin)*(plotRight-plotLeft) }
	py := func(y float64) float64 { return plotBottom - y/yMax*(plotBottom-plotTop) }

	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", chartW, chartH)
	fmt.Fprintf(&b, `<text x="%d" y="24" text-anchor="middle" font-size="15">input tokens per request</text>`+"\n", chartW/2)

	// Grid, ticks and axis labels.
	b.WriteString(`<g class="grid" stroke="#dddddd" stroke-width="1">` + "\n")
	for _, t := range xTicks {
		if t >= xMin && t <= xMax {
			fmt.Fprintf(&b, `<line x1="%s" y1="%d" x2="%s" y2="%d"/>`+"\n", num(px(t)), plotTop, num(px(t)), plotBottom)
		}
	}
	for _, t := range yTicks {
		fmt.Fprintf(&b, `<line x1="%d" y1="%s" x2="%d" y2="%s"/>`+"\n", plotLeft, num(py(t)), plotRight, num(py(t)))
	}
	b.WriteString("</g>\n")
	fmt.Fprintf(&b, `<rect class="frame" x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#000000"/>`+"\n",
		plotLeft, plotTop, plotRight-plotLeft, plotBottom-plotTop)
	b.WriteString(`<g text-anchor="middle">` + "\n")
	for _, t := range xTicks {
		if t >= xMin && t <= xMax {
			fmt.Fprintf(&b, `<text class="xtick" x="%s" y="%d">%s</text>`+"\n", num(px(t)), plotBottom+16, group(t))
		}
	}
	b.WriteString("</g>\n")
	b.WriteString(`<g text-anchor="end">` + "\n")
	for _, t := range yTicks {
		fmt.Fprintf(&b, `<text class="ytick" x="%d" y="%s">%s</text>`+"\n", plotLeft-6, num(py(t)+4), group(t))
	}
	b.WriteString("</g>\n")
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">request</text>`+"\n", (plotLeft+plotRight)/2, chartH-14)
	fmt.Fprintf(&b, `<text x="16" y="%d" text-anchor="middle" transform="rotate(-90 16 %d)">input tokens</text>`+"\n",
		(plotTop+plotBottom)/2, (plotTop+plotBottom)/2)

	if drawWindow {
		fmt.Fprintf(&b, `<line class="window" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#808080" stroke-width="1" stroke-dasharray="4 4"/>`+"\n",
			num(px(1)), num(py(float64(window))), num(px(float64(max(n, 1)))), num(py(float64(window))))
	}

	// One line per set, then its marks above all lines.
	for i, r := range results {
		fmt.Fprintf(&b, `<polyline class="set" fill="none" stroke="%s" stroke-width="1.5"%s points="`, chartPalette[i%len(chartPalette)], dashAttr(i))
		for j, q := range r.Requests {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(num(px(float64(q.N))))
			b.WriteByte(',')
			b.WriteString(num(py(float64(q.InputTokens))))
		}
		b.WriteString(`"/>` + "\n")
	}
	for i, r := range results {
		c := chartPalette[i%len(chartPalette)]
		for _, q := range r.Requests {
			x, y := px(float64(q.N)), py(float64(q.InputTokens))
			if q.Compactions > 0 {
				triangle(&b, "compaction", x, y, c)
			}
			if q.PromptChange {
				cross(&b, "prompt", x, y, c)
			}
		}
	}

	// The legend, top left inside the plot: the sets, then what the marks
	// mean (always, so that it reads the same whatever a set did).
	entries := len(results) + 2
	if drawWindow {
		entries++
	}
	lx, ly := float64(plotLeft+10), float64(plotTop+10)
	width := 0
	for _, r := range results {
		width = max(width, utf8.RuneCountInString(r.Set))
	}
	width = max(width, len("context window"))
	fmt.Fprintf(&b, `<g class="legend"><rect x="%s" y="%s" width="%s" height="%s" fill="#ffffff" fill-opacity="0.85" stroke="#bbbbbb"/>`+"\n",
		num(lx), num(ly), num(float64(40+7*width)), num(float64(8+16*entries)))
	row := func(k int) float64 { return ly + 14 + 16*float64(k) }
	for i, r := range results {
		y := row(i)
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.5"%s/>`,
			num(lx+6), num(y-4), num(lx+28), num(y-4), chartPalette[i%len(chartPalette)], dashAttr(i))
		fmt.Fprintf(&b, `<text class="name" x="%s" y="%s">%s</text>`+"\n", num(lx+34), num(y), escapeXML(r.Set))
	}
	k := len(results)
	triangle(&b, "key", lx+17, row(k)-4, "#000000")
	fmt.Fprintf(&b, `<text x="%s" y="%s">compaction</text>`+"\n", num(lx+34), num(row(k)))
	cross(&b, "key", lx+17, row(k+1)-4, "#000000")
	fmt.Fprintf(&b, `<text x="%s" y="%s">prompt change</text>`+"\n", num(lx+34), num(row(k+1)))
	if drawWindow {
		y := row(k + 2)
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#808080" stroke-dasharray="4 4"/>`,
			num(lx+6), num(y-4), num(lx+28), num(y-4))
		fmt.Fprintf(&b, `<text x="%s" y="%s">context window</text>`+"\n", num(lx+34), num(y))
	}
	b.WriteString("</g>\n</svg>\n")
	return []byte(b.String())
}

// triangle draws an upward triangle centred on (x, y).
func triangle(b *strings.Builder, class string, x, y float64, colour string) {
	fmt.Fprintf(b, `<polygon class="%s" points="%s,%s %s,%s %s,%s" fill="none" stroke="%s" stroke-width="1.2"/>`+"\n", class,
		num(x), num(y-markSize), num(x-markSize), num(y+markSize*0.8), num(x+markSize), num(y+markSize*0.8), colour)
}

// cross draws an × centred on (x, y).
func cross(b *strings.Builder, class string, x, y float64, colour string) {
	fmt.Fprintf(b, `<path class="%s" d="M%s %sL%s %sM%s %sL%s %s" stroke="%s" stroke-width="1.2"/>`+"\n", class,
		num(x-markSize), num(y-markSize), num(x+markSize), num(y+markSize),
		num(x-markSize), num(y+markSize), num(x+markSize), num(y-markSize), colour)
}

// dashAttr is the dash pattern of set i, as an attribute ("" for solid).
func dashAttr(i int) string {
	if d := chartDashes[i%len(chartDashes)]; d != "" {
		return ` stroke-dasharray="` + d + `"`
	}
	return ""
}

// niceTicks returns the tick values from lo (rounded down) to at least hi
// at a step of 1, 2 or 5 times a power of ten, about six ticks in all.
func niceTicks(lo, hi float64) []float64 {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	step = math.Max(step, 1) // requests and tokens are whole numbers
	var ticks []float64
	for t := math.Floor(lo/step) * step; ; t += step {
		ticks = append(ticks, t)
		if t >= hi {
			return ticks
		}
	}
}

// num formats a coordinate with one decimal, the same on every platform.
func num(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0")
}

// group formats a whole number with thousands separators.
func group(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// escapeXML makes s safe as XML character data: the markup characters
// escaped, and what XML 1.0 cannot carry at all (control characters,
// invalid UTF-8) replaced by U+FFFD.
func escapeXML(s string) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		case r == '\'':
			b.WriteString("&#39;")
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r', r == 0xFFFE, r == 0xFFFF, r >= 0xD800 && r <= 0xDFFF:
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
