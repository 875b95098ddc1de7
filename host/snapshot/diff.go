package snapshot

import (
	"fmt"
	"strings"
)

// maxLCS bounds the middle part (after the common head and tail) that
// LineDiff aligns line by line; a larger middle is shown as removed then
// added.
const maxLCS = 4000

// LineDiff returns a unified-style diff of two texts: changed lines marked
// "-" (in a) and "+" (in b), with context lines around each change and
// "@@ line N @@" markers. It is "" when the texts are equal.
func LineDiff(a, b string, context int) string {
	if a == b {
		return ""
	}
	x, y := splitLines(a), splitLines(b)
	ops := align(x, y)
	var out strings.Builder
	// Print hunks: runs of changes with context lines around them.
	n := len(ops)
	show := make([]bool, n)
	for i, op := range ops {
		if op.kind != ' ' {
			for j := max(0, i-context); j <= min(n-1, i+context); j++ {
				show[j] = true
			}
		}
	}
	for i := 0; i < n; i++ {
		if !show[i] {
			continue
		}
		if i == 0 || !show[i-1] {
			fmt.Fprintf(&out, "@@ line %d @@\n", ops[i].line)
		}
		fmt.Fprintf(&out, "%c %s\n", ops[i].kind, ops[i].text)
	}
	return out.String()
}

type diffOp struct {
	kind byte // ' ', '-', '+'
	text string
	line int // 1-based line in a (for ' ' and '-') or b ('+')
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// align trims the common head and tail and aligns the rest by a longest
// common subsequence of lines.
func align(x, y []string) []diffOp {
	var ops []diffOp
	p := 0
	for p < len(x) && p < len(y) && x[p] == y[p] {
		ops = append(ops, diffOp{' ', x[p], p + 1})
		p++
	}
	s := 0
	for s < len(x)-p && s < len(y)-p && x[len(x)-1-s] == y[len(y)-1-s] {
		s++
	}
	mx, my := x[p:len(x)-s], y[p:len(y)-s]
	if len(mx)*len(my) > maxLCS*maxLCS/4 || len(mx) > maxLCS || len(my) > maxLCS {
		for i, t := range mx {
			ops = append(ops, diffOp{'-', t, p + i + 1})
		}
		for i, t := range my {
			ops = append(ops, diffOp{'+', t, p + i + 1})
		}
	} else {
		ops = append(ops, lcs(mx, my, p)...)
	}
	for i := len(x) - s; i < len(x); i++ {
		ops = append(ops, diffOp{' ', x[i], i + 1})
	}
	return ops
}

func lcs(x, y []string, off int) []diffOp {
	n, m := len(x), len(y)
	t := make([][]int32, n+1)
	for i := range t {
		t[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			ops = append(ops, diffOp{' ', x[i], off + i + 1})
			i++
			j++
		case i < n && (j == m || t[i+1][j] >= t[i][j+1]):
			ops = append(ops, diffOp{'-', x[i], off + i + 1})
			i++
		default:
			ops = append(ops, diffOp{'+', y[j], off + j + 1})
			j++
		}
	}
	return ops
}
