package host

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// TestAuthorsPageRefusalsAreReal: every example refusal of
// docs/authors.md's admission rules is what the host says today for the
// batch described next to it, proposed on admitFixture's session (nodes
// 2 system, 3 user, 4 assistant with call c1, 6 its result, 7 assistant;
// a batch starts at seq 8) by the compaction plugin "cb", which declared
// the event type "cb/note".
func TestAuthorsPageRefusalsAreReal(t *testing.T) {
	cb := Proposer{Kind: ByCompaction, ID: "cb", Events: []string{"cb/note"}}
	with := func(edit func(b *batch)) []surface.Proposal {
		b := newBatch(3, 7, 3, 4, 6, 7)
		edit(b)
		return b.proposals()
	}
	one := func(p surface.Proposal) []surface.Proposal { return []surface.Proposal{p} }
	big := strings.Repeat("a", 4000)
	cases := []struct {
		rule surface.Rule
		by   Proposer
		ps   []surface.Proposal
	}{
		{surface.RuleLossless, cb, one(surface.Proposal{Type: "cb/note", Data: []byte(`{"n":1,"n":2}`), Ignorable: true})},
		{surface.RulePayload, cb, one(surface.Proposal{Type: surface.TypeToolResult, Op: surface.Replace(6, 6), Sources: []int64{6},
			Data: []byte(`{"turn":1,"step":1,"message":{"id":"r1","role":"user","source":{"kind":"tool","callId":"c1"},"content":[]}}`)})},
		{surface.RuleEligibility, cb, one(surface.Proposal{Type: surface.TypeCompactionPrune, Op: surface.Append, Data: []byte(`{"shadowedSeqs":[6]}`)})},
		{surface.RuleSources, cb, with(func(b *batch) { b.sources = append(b.sources, 12) })},
		{surface.RuleCoverage, cb, with(func(b *batch) { b.sources = []int64{8, 9, 3, 4, 6} })},
		{surface.RuleRange, cb, with(func(b *batch) { b.from, b.to = 5, 7 })},
		{surface.RuleSystemHead, cb, with(func(b *batch) { b.from = 2; b.sources = append(b.sources, 2) })},
		{surface.RuleToolRewrite, cb, one(surface.Proposal{Type: surface.TypeToolResult, Op: surface.Replace(6, 6), Sources: []int64{6},
			Data: []byte(`{"turn":1,"step":1,"message":{"id":"r1","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","isError":true,"content":[]}]}}`)})},
		{"not permitted", cb, one(surface.Proposal{Type: surface.TypeSystemMessage, Op: surface.Replace(2, 2), Sources: []int64{2},
			Data: []byte(`{"turn":1,"step":1,"message":{"id":"s2","role":"system","source":{"kind":"plugin","plugin":"cb"},"content":[]}}`)})},
		{RuleUndeclaredEvent, cb, one(surface.Proposal{Type: "cb/other", Data: []byte(`{}`), Ignorable: true})},
		{RuleDeclaredNotIgnorable, cb, one(surface.Proposal{Type: "cb/note", Data: []byte(`{}`)})},
		{RuleDeclaredSurfaceOp, cb, one(surface.Proposal{Type: "cb/note", Data: []byte(`{}`), Ignorable: true, Sources: []int64{3}})},
		{RuleDeclaredTooLarge, cb, one(surface.Proposal{Type: "cb/note", Data: []byte(`{"x":"` + strings.Repeat("a", MaxDeclaredEventBytes) + `"}`), Ignorable: true})},
		{RuleDeclaredBudget, cb, slices.Repeat(one(surface.Proposal{Type: "cb/note", Data: []byte(`{}`), Ignorable: true}), MaxDeclaredPerCall+1)},
		{RuleProvenance, cb, with(func(b *batch) { b.cpSource = map[string]any{"kind": "user"} })},
		{RuleUniqueID, cb, with(func(b *batch) { b.id = "sys" })},
		{RuleCompactionSchema, cb, with(func(b *batch) { b.summary["shadowedSeqs"] = []int64{3, 40} })},
		{RuleCompactionBracket, cb, with(func(b *batch) { b.end["error"] = "late" })},
		{"shrink", cb, with(func(b *batch) {
			b.from, b.summary["shadowedSeqs"] = 7, []int64{7}
			delete(b.summary, "shadowedRange")
			b.sources = []int64{8, 9, 7}
			b.big = big
		})},
		{surface.RuleToolResultOrphaned, cb, newBatch(4, 4, 4).proposals()},
		{surface.RuleToolCallUnanswered, cb, newBatch(6, 6, 6).proposals()},
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "authors.md"))
	require.NoError(t, err)
	m := &Measurement{LogRevision: 9, Baseline: "estimated", BaselineTokens: 30, TotalTokens: 30, SurfaceTokens: 31,
		Nodes: []NodeTokens{{Seq: 2, Tokens: 10}, {Seq: 3, Tokens: 20}}, Breakdown: Breakdown{System: 10, User: 21}}
	merr := ValidateMeasurement(m)
	require.ErrorIs(t, merr, ErrBadMeasurement)
	if os.Getenv("WEIR_PRINT_REFUSALS") != "" {
		t.Logf("%s\n    %s", RuleMeasurement, merr)
	} else {
		require.Contains(t, string(doc), "    "+merr.Error()+"\n", "docs/authors.md shows a meter/measurement refusal as the host words it")
	}
	for _, c := range cases {
		s := admitFixture(t)
		_, err := s.Propose(c.by, c.ps...)
		require.Error(t, err, c.rule)
		msg := err.Error()
		if os.Getenv("WEIR_PRINT_REFUSALS") != "" {
			t.Logf("%s %s\n    %s", c.rule, surface.RuleOf(err), msg)
			continue
		}
		switch c.rule {
		case "not permitted":
			require.ErrorIs(t, err, ErrNotPermitted)
		case "shrink":
			require.ErrorIs(t, err, ErrNotSmaller)
		default:
			require.Equal(t, c.rule, surface.RuleOf(err), msg)
		}
		require.Contains(t, string(doc), "    "+msg+"\n", "docs/authors.md shows the refusal of rule %s as the host words it", c.rule)
	}
}
