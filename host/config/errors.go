package config

import (
	"strconv"
	"strings"
)

// Problem is one configuration error: the key, what is wrong with it and
// what to do, and the source of the offending value.
type Problem struct {
	// Key is the key path as the source spells it: for a file the path
	// inside that file ("plugins[1].rol"), else the effective path
	// ("models.deepseek.contextWindow").
	Key string `json:"key"`
	// Reason says what is wrong and what to do.
	Reason string `json:"reason"`
	// Source is where the value came from; Kind is empty when the key is
	// not set anywhere.
	Source Source `json:"source,omitzero"`
}

func (p *Problem) Error() string {
	if p.Key == "" && p.Source.Kind == FromFile {
		return p.Source.Name + ": " + p.Reason
	}
	s := p.Key + ": " + p.Reason
	switch p.Source.Kind {
	case FromFile:
		s += " (in " + p.Source.Name + ")"
	case FromEnv:
		s += " (from $" + p.Source.Name + ")"
	case FromFlag:
		s += " (from flag --" + p.Source.Name + ")"
	case FromDefault:
		s += " (default value)"
	}
	return s
}

// Errors are all the problems Load found, in the order it found them.
type Errors []*Problem

func (e Errors) Error() string {
	lines := make([]string, len(e))
	for i, p := range e {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// suggestion returns ` (did you mean "X"?)` for the option closest to
// name, or "" when none is close.
func suggestion(name string, options []string) string {
	best, bestD := "", -1
	low := strings.ToLower(name)
	for _, o := range options {
		d := distance(low, strings.ToLower(o))
		if d < bestD || bestD < 0 {
			best, bestD = o, d
		}
	}
	limit := max(1, len([]rune(name))/3)
	if best == "" || bestD > limit {
		return ""
	}
	return " (did you mean " + strconv.Quote(best) + "?)"
}

// distance is the edit distance between a and b counting insertions,
// deletions, substitutions and swaps of adjacent letters (optimal string
// alignment).
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// oneOf renders allowed values for a message: "a", "b" or "c".
func oneOf(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = strconv.Quote(v)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
