package inspect

import (
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weirhost/weir/host/eval"
	"github.com/weirhost/weir/surface"
)

// A page shows at most ShowBytes of one block (a message, a tool result, a
// request body) and at most ShowLine bytes of any of its lines; the rest is
// a link to the raw bytes. This bounds a page's size, the memory its
// rendering takes and the browser's layout work, whatever the log holds.
const (
	ShowBytes = 64 << 10
	ShowLine  = 2 << 10
)

// Shown is a block as a page shows it.
type Shown struct {
	Text  string // what the page shows (cut lines end with "…")
	Cut   bool   // Text is not the whole block
	Chars int    // the whole block's length in characters
	Lines int    // lines cut short
}

// show bounds s for a page (see ShowBytes).
func show(s string) Shown { return clip(s, ShowBytes) }

// clip bounds s to limit bytes, and each of its lines to ShowLine.
func clip(s string, limit int) Shown {
	out := Shown{Chars: utf8.RuneCountInString(s)}
	if len(s) <= min(limit, ShowLine) && !strings.Contains(s, "\n") {
		out.Text = s
		return out
	}
	var b strings.Builder
	rest := s
	for rest != "" && b.Len() < limit {
		line, tail, nl := strings.Cut(rest, "\n")
		rest = tail
		room := min(ShowLine, limit-b.Len())
		if len(line) > room {
			out.Lines++
			b.WriteString(cutAt(line, room) + "…")
			if room < ShowLine {
				rest = "…" // the block's bound: nothing more is shown
				break
			}
		} else {
			b.WriteString(line)
		}
		if nl {
			b.WriteByte('\n')
		}
	}
	out.Text = b.String()
	out.Cut = rest != "" || out.Lines > 0
	return out
}

// cutAt returns s's first n bytes or fewer, ending on a character boundary.
func cutAt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// visible replaces the characters that reorder or hide text (bidi
// controls, zero-width marks, the Unicode tag characters U+E0000–U+E007F
// that carry invisible ASCII) with a visible <U+XXXX> so log content
// cannot disguise itself. html/template escapes everything else.
func visible(s string) string {
	if !strings.ContainsFunc(s, hidden) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if hidden(r) {
			fmt.Fprintf(&b, "<U+%04X>", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func hidden(r rune) bool {
	switch {
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C,
		r >= 0x200B && r <= 0x200D, r == 0x2060, r == 0xFEFF, r >= 0xE0000 && r <= 0xE007F:
		return true
	}
	return false
}

var funcs = template.FuncMap{
	"vis":  visible,
	"show": show,
	"clip": clip,
	// chars is a text's length in characters, not bytes.
	"chars": utf8.RuneCountInString,
	"pe":    url.PathEscape,
	"when": func(ms int64) string {
		if ms == 0 {
			return "—"
		}
		return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05 UTC")
	},
	// ms is a duration in milliseconds, readable.
	"ms": func(ms int64) string {
		if ms < 1000 {
			return fmt.Sprintf("%d ms", ms)
		}
		return fmt.Sprintf("%.1f s", float64(ms)/1000)
	},
	"list":   func(s ...string) []string { return s },
	"add":    func(a, b int) int { return a + b },
	"sub":    func(a, b int) int { return a - b },
	"lines":  func(s string) []string { return strings.Split(s, "\n") },
	"prefix": func(s, p string) bool { return strings.HasPrefix(s, p) },
	"short": func(s string, n int) string {
		s = strings.Join(strings.Fields(cutAt(s, 8*n)), " ")
		if r := []rune(s); len(r) > n {
			return string(r[:n-1]) + "…"
		}
		return s
	},
	"showBytes": func() int { return ShowBytes },
	"showLine":  func() int { return ShowLine },
	// cut is the "cut" template's argument: a link to the whole text of
	// the event at seq (what "text") or to the event itself ("event").
	"cut": func(s Shown, name string, seq int64, what string) map[string]any {
		href := "/api/s/" + url.PathEscape(name) + "/events/" + fmt.Sprint(seq)
		if what == "text" {
			href += "/text"
		}
		return map[string]any{"Shown": s, "Href": href, "What": what}
	},
	"total": func(u interface{ Total() int64 }) int64 { return u.Total() },
	// cost prices a usage (see Options.Prices); the server replaces it.
	"cost":    func(*surface.Usage) *eval.Cost { return nil },
	"dollars": dollars,
	// input is a usage's whole input: uncached, cache read and written.
	"input": func(u *surface.Usage) int64 { return u.Input + u.CacheRead + u.CacheWrite },
}

// Chart is the geometry of the tokens-over-time chart, drawn as inline SVG
// by the template (no script draws it).
type Chart struct {
	W, H              int
	Left, Top, Bottom int
	Max               int64
	Meter             string // polyline points
	Dots              []Dot
	Usage             []Dot
	Window, Threshold *Line
	Marks             []MarkLine
	Ticks             []Tick
	Fit               bool
	Dense             bool // more requests than ChartColumns: columns are drawn
}

// Dot is one clickable point.
type Dot struct {
	X, Y  int
	Index int
	Title string
}

// Line is a horizontal rule (the window, the threshold).
type Line struct {
	Y     int
	Label string
}

// MarkLine is a vertical rule (a compaction, a prompt change); Anchor
// keeps its label inside the chart at either edge.
type MarkLine struct {
	X      int
	Kind   string
	Label  string
	Anchor string
}

// ChartColumns is the most columns a chart draws: above it, consecutive
// requests share a column, drawn as the line through their minimum and
// maximum and one point (the maximum) that opens the column's largest
// request, so the chart's size does not grow with the session's.
const ChartColumns = 400

// column is one drawn column: the points from lo to hi (indexes).
type column struct{ lo, hi int }

func columns(n int) []column {
	k := min(n, ChartColumns)
	out := make([]column, 0, k)
	for c := range k {
		out = append(out, column{lo: c * n / k, hi: (c+1)*n/k - 1})
	}
	return out
}

// Tick is a y-axis label.
type Tick struct {
	Y     int
	Label string
}

// drawChart lays the chart out; fit scales the y axis to the data instead
// of the window (the window and threshold rules are then drawn only when
// they fall inside).
func drawChart(m *Model, points []Point, marks []Mark, fit bool) *Chart {
	c := &Chart{W: 900, H: 320, Left: 60, Top: 30, Bottom: 290, Fit: fit, Dense: len(points) > ChartColumns}
	var max int64
	if !fit {
		max = maxInt(m.Window, m.Threshold)
	}
	for _, p := range points {
		max = maxInt(max, p.Tokens)
		if p.Usage != nil {
			max = maxInt(max, p.Usage.Input+p.Usage.CacheRead+p.Usage.CacheWrite)
		}
	}
	if max == 0 {
		max = 1
	}
	max += max / 20
	c.Max = max
	plotW := c.W - c.Left - 20
	x := func(i int) int {
		if len(points) <= 1 {
			return c.Left + plotW/2
		}
		return c.Left + i*plotW/(len(points)-1)
	}
	y := func(v int64) int { return c.Bottom - int(float64(v)/float64(max)*float64(c.Bottom-c.Top)) }
	var poly []string
	input := func(p Point) int64 { return p.Usage.Input + p.Usage.CacheRead + p.Usage.CacheWrite }
	for _, col := range columns(len(points)) {
		lo, hi, in := col.lo, col.lo, -1
		for i := col.lo; i <= col.hi; i++ {
			if points[i].Tokens < points[lo].Tokens {
				lo = i
			}
			if points[i].Tokens > points[hi].Tokens {
				hi = i
			}
			if points[i].Usage != nil && (in < 0 || input(points[i]) > input(points[in])) {
				in = i
			}
		}
		top := hi
		// The line passes through the column's minimum and maximum in
		// their order.
		first, second := lo, hi
		if hi < lo {
			first, second = hi, lo
		}
		poly = append(poly, fmt.Sprintf("%d,%d", x(first), y(points[first].Tokens)))
		if second != first {
			poly = append(poly, fmt.Sprintf("%d,%d", x(second), y(points[second].Tokens)))
		}
		p := points[top]
		title := fmt.Sprintf("request %d (seq %d): %d tokens (meter)", p.Index, p.Seq, p.Tokens)
		if col.hi > col.lo {
			title = fmt.Sprintf("requests %d to %d: %d to %d tokens (meter); the point opens request %d, the largest",
				points[col.lo].Index, points[col.hi].Index, points[lo].Tokens, p.Tokens, p.Index)
		}
		c.Dots = append(c.Dots, Dot{X: x(top), Y: y(p.Tokens), Index: p.Index, Title: title})
		if in >= 0 {
			q := points[in]
			title := fmt.Sprintf("request %d: %d input tokens (provider)", q.Index, input(q))
			if col.hi > col.lo {
				title = fmt.Sprintf("requests %d to %d: at most %d input tokens (provider), at request %d", points[col.lo].Index, points[col.hi].Index, input(q), q.Index)
			}
			c.Usage = append(c.Usage, Dot{X: x(in), Y: y(input(q)), Index: q.Index, Title: title})
		}
	}
	c.Meter = strings.Join(poly, " ")
	if m.Window > 0 && m.Window <= max {
		c.Window = &Line{Y: y(m.Window), Label: fmt.Sprintf("context window %d", m.Window)}
	}
	if m.Threshold > 0 && m.Threshold <= max {
		c.Threshold = &Line{Y: y(m.Threshold), Label: fmt.Sprintf("compaction threshold %d (%s)", m.Threshold, m.ThresholdNote)}
	}
	for _, mk := range marks {
		// The mark stands before the first request settled after it.
		i := len(points)
		for k, p := range points {
			if p.Seq > mk.Seq {
				i = k
				break
			}
		}
		xx := c.Left + plotW
		if i < len(points) {
			xx = x(i)
			if i > 0 {
				xx = (x(i-1) + x(i)) / 2
			}
		}
		anchor := "middle"
		switch {
		case xx > c.W-60:
			anchor = "end"
		case xx < c.Left+40:
			anchor = "start"
		}
		c.Marks = append(c.Marks, MarkLine{X: xx, Kind: mk.Kind, Label: mk.Label, Anchor: anchor})
	}
	for k := 0; k <= 4; k++ {
		v := max * int64(k) / 4
		c.Ticks = append(c.Ticks, Tick{Y: y(v), Label: fmt.Sprint(v)})
	}
	return c
}

func maxInt(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
