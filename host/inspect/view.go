package inspect

import (
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
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
func show(s string) Shown {
	out := Shown{Chars: utf8.RuneCountInString(s)}
	if len(s) <= ShowLine && !strings.Contains(s, "\n") {
		out.Text = s
		return out
	}
	var b strings.Builder
	rest := s
	for rest != "" && b.Len() < ShowBytes {
		line, tail, nl := strings.Cut(rest, "\n")
		rest = tail
		room := min(ShowLine, ShowBytes-b.Len())
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
// controls, zero-width marks) with a visible <U+XXXX> so log content cannot
// disguise itself. html/template escapes everything else.
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
		r >= 0x200B && r <= 0x200D, r == 0x2060, r == 0xFEFF:
		return true
	}
	return false
}

var funcs = template.FuncMap{
	"vis":  visible,
	"show": show,
	// chars is a text's length in characters, not bytes.
	"chars": utf8.RuneCountInString,
	"pe":    url.PathEscape,
	"when": func(ms int64) string {
		if ms == 0 {
			return "—"
		}
		return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05 UTC")
	},
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

// MarkLine is a vertical rule (a compaction, a prompt change).
type MarkLine struct {
	X     int
	Kind  string
	Label string
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
	c := &Chart{W: 900, H: 320, Left: 60, Top: 30, Bottom: 290, Fit: fit}
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
	for i, p := range points {
		poly = append(poly, fmt.Sprintf("%d,%d", x(i), y(p.Tokens)))
		c.Dots = append(c.Dots, Dot{X: x(i), Y: y(p.Tokens), Index: p.Index,
			Title: fmt.Sprintf("request %d (seq %d): %d tokens (meter)", p.Index, p.Seq, p.Tokens)})
		if p.Usage != nil {
			in := p.Usage.Input + p.Usage.CacheRead + p.Usage.CacheWrite
			c.Usage = append(c.Usage, Dot{X: x(i), Y: y(in), Index: p.Index,
				Title: fmt.Sprintf("request %d: %d input tokens (provider)", p.Index, in)})
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
		c.Marks = append(c.Marks, MarkLine{X: xx, Kind: mk.Kind, Label: mk.Label})
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
