package surface_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
)

// Conformance checklist, group D: system-head protection. The checklist's
// seqs are abstract: here a turn and step open first (seqs 0 and 1), so S0
// of the checklist is the log's first system/message.

const headFragment = "surface node 0 holds the protected system prompt"

// headLog returns a log whose surface is [S, U] and the two seqs.
func headLog(t *testing.T, prompt string) (l *tlog, s, u int64) {
	l = newTLog(t)
	s = l.system(prompt)
	u = l.user("hello")
	require.Equal(t, []int64{s, u}, l.Nodes())
	return l, s, u
}

func TestD37_SystemReplacesSystemHead(t *testing.T) {
	l, s, u := headLog(t, "be brief")
	r := l.add(replacing(l.sys("be terse"), s, s, s))
	require.Equal(t, []int64{r, u}, l.Nodes())
	msgs := l.Messages()
	require.Equal(t, "be terse", surface.TextOf(msgs[0].Content))
	requireFolds(t, l.Log)
}

func TestD38_UserCannotShadowSystemHead(t *testing.T) {
	l, s, u := headLog(t, "be brief")
	err := l.reject(replacing(pUser("sum", "summary"), s, u, s, u), surface.RuleSystemHead, headFragment)
	require.Contains(t, err.Error(), "proposed user/message over nodes 0..1")
	// Nor a single-node replace of the head by a non-system event.
	l.reject(replacing(pUser("sum", "summary"), s, s, s), surface.RuleSystemHead, headFragment)
	turn, step := l.OpenTurn()
	l.reject(replacing(pAssistant(turn, step, "a", "x"), s, s), surface.RuleCoverage, "missing")
	require.Equal(t, []int64{s, u}, l.Nodes())
}

func TestD39_SystemCannotShadowHeadAndMore(t *testing.T) {
	l, s, u := headLog(t, "be brief")
	l.reject(replacing(l.sys("be terse"), s, u, s, u), surface.RuleSystemHead, headFragment)
	require.Equal(t, []int64{s, u}, l.Nodes())
}

func TestD40_LaterSystemNodeHasNoProtection(t *testing.T) {
	l, s, u := headLog(t, "be brief")
	s2 := l.system("late prompt")
	u2 := l.user("more")
	sum := l.add(replacing(pUser("sum", "summary"), u, u2, u, s2, u2))
	require.Equal(t, []int64{s, sum}, l.Nodes())
	requireFolds(t, l.Log)

	// A later system node may also be replaced by any surface event alone.
	l2, _, _ := headLog(t, "be brief")
	s3 := l2.system("late")
	l2.add(replacing(pUser("x", "x"), s3, s3, s3))
}

func TestD41_UserHeadHasNoProtection(t *testing.T) {
	l := users(t, 2)
	l.add(replacing(pUser("sum", "summary"), 0, 1, 0, 1))
	require.Equal(t, []int64{2}, l.Nodes())

	// A system node that is not at node 0 is not protected either.
	l2 := newTLog(t)
	u := l2.user("first")
	s := l2.system("late")
	sum := l2.add(replacing(pUser("sum", "summary"), u, s, u, s))
	require.Equal(t, []int64{sum}, l2.Nodes())
}

func TestD42_EmptySystemHeadProtected(t *testing.T) {
	l, s, u := headLog(t, "")
	require.Equal(t, []string{surface.RoleUser}, roles(l.Messages()))
	// A compaction checkpoint proposed over any range covering node 0.
	l.add(pLogOnly(surface.TypeCompactionStart, `{}`))
	c := l.NextSeq() - 1
	l.reject(replacing(pUser("sum", "summary"), s, u, s, u, c), surface.RuleSystemHead, headFragment)
	l.reject(replacing(pUser("sum", "summary"), s, s, s, c), surface.RuleSystemHead, headFragment)
	turn, step := l.OpenTurn()
	l.reject(replacing(surface.Proposal{Type: surface.TypeToolResult, Data: toolResult{turn: turn, step: step, id: "r", callID: "c"}.data()}, s, s, s),
		surface.RuleToolRewrite, "must target a current tool/result")
	require.Equal(t, []int64{s, u}, l.Nodes())
	// Replacing the empty head with a prompt is allowed.
	r := l.add(replacing(l.sys("now a prompt"), s, s, s))
	require.Equal(t, []int64{r, u}, l.Nodes())
}

func TestD43_HeadReplacementAdvancesGenerations(t *testing.T) {
	l, s, _ := headLog(t, "be brief")
	before := gens(l.Log)
	r := l.add(replacing(l.sys("be terse"), s, s, s))
	require.Equal(t, [2]uint64{before[0] + 1, before[1] + 1}, gens(l.Log))
	l.add(replacing(l.sys(""), r, r, r))
	require.Equal(t, [2]uint64{before[0] + 2, before[1] + 2}, gens(l.Log))
	res := requireFolds(t, l.Log)
	require.Len(t, res.Replacements, 2)
	require.Equal(t, fmt.Sprint([]int64{s}), fmt.Sprint(res.Replacements[0].Shadowed))
}
