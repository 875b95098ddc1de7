package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/surface"
)

// TestAuthorsDocEventExamples: the events docs/authors.md shows a plugin
// author have the shape of real ones: the same members at every level,
// the same kinds of values, and the same type, role, kind and op names
// (the doc's ids, seqs and texts are examples). The message, the
// checkpoint and the compaction bracket are those of the shipped demo
// session (examples/sessions/demo.jsonl, which a cmd/host test holds to
// what the demo writes, compaction-basic compacting it); the tool-result
// rewrite is one this plugin proposes and the log admits.
func TestAuthorsDocEventExamples(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "authors.md"))
	require.NoError(t, err)
	doc := string(raw)
	demo := demoEvents(t)
	checkpoint := demo[surface.TypeUserMessage+" checkpoint"]

	s := newSession(t, testConfig)
	s.history()
	s.add(surface.TypeTurnStart, map[string]int64{"turn": 3}, surface.Op{})
	s.total = 6000
	evs := s.preStep(3, 1)
	require.NotEmpty(t, evs)
	rewrite := evs[1]
	require.Equal(t, surface.TypeToolResult, rewrite.Type)

	cases := []struct {
		marker string
		got    []any
	}{
		{"A message is", []any{checkpoint["data"]}},
		{"A **checkpoint** replaces", []any{proposal(checkpoint)}},
		{"A **tool-result rewrite**", []any{proposal(asJSON(t, surface.AppendEvent(nil, &rewrite)))}},
		{"The **compaction bracket**", []any{
			proposal(demo[surface.TypeCompactionStart]),
			proposal(demo[surface.TypeCompactionSummary]),
			proposal(demo[surface.TypeCompactionEnd])}},
	}
	for _, c := range cases {
		want := docJSON(t, doc, c.marker)
		require.Len(t, want, len(c.got), "%s: the doc's events", c.marker)
		for i := range want {
			require.NoError(t, sameShape(want[i], c.got[i], ""), "%s: event %d of the doc is %v; a real one is %v", c.marker, i+1, want[i], c.got[i])
		}
	}
}

// demoEvents is the demo log's first checkpoint and compaction bracket,
// by type (the checkpoint as "user/message checkpoint"), decoded as JSON.
func demoEvents(t *testing.T) map[string]map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "sessions", "demo.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	out := map[string]map[string]any{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		e := asJSON(t, sc.Bytes())
		typ, _ := e["type"].(string)
		if typ == surface.TypeUserMessage {
			if _, ok := e["surfaceOp"].(map[string]any); !ok {
				continue
			}
			typ += " checkpoint"
		}
		if _, seen := out[typ]; !seen && (strings.HasPrefix(typ, "compaction/") || strings.HasSuffix(typ, " checkpoint")) {
			out[typ] = e
		}
	}
	require.NoError(t, sc.Err())
	for _, typ := range []string{surface.TypeCompactionStart, surface.TypeCompactionSummary, surface.TypeCompactionEnd, surface.TypeUserMessage + " checkpoint"} {
		require.Contains(t, out, typ, "the demo log has a %s", typ)
	}
	return out
}

func asJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), "%s", b)
	return m
}

// proposal is an event without the members the host writes (seq, time):
// what a plugin proposes.
func proposal(e map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range e {
		if k != "seq" && k != "time" {
			out[k] = v
		}
	}
	return out
}

// docJSON decodes the JSON values of the first ```json block after marker
// in doc; a line "... the checkpoint ..." stands for an event shown above.
func docJSON(t *testing.T, doc, marker string) []any {
	t.Helper()
	i := strings.Index(doc, marker)
	require.GreaterOrEqual(t, i, 0, "docs/authors.md has %q", marker)
	rest := doc[i:]
	j := strings.Index(rest, "```json\n")
	require.GreaterOrEqual(t, j, 0, "a ```json block follows %q", marker)
	rest = rest[j+len("```json\n"):]
	var lines []string
	for _, l := range strings.Split(rest[:strings.Index(rest, "```")], "\n") {
		if strings.TrimSpace(l) != "... the checkpoint ..." {
			lines = append(lines, l)
		}
	}
	dec := json.NewDecoder(strings.NewReader(strings.Join(lines, "\n")))
	var out []any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err, "%s: the doc's JSON", marker)
		out = append(out, v)
	}
}

// named are the members whose values are names, not examples: a doc shows
// them as they are.
var named = []string{"type", "role", "kind", "op"}

// sameShape reports how got differs from want in shape: objects with the
// same members, arrays whose elements each have the shape of one of the
// other's (so a doc may show one block of a kind where there are several),
// values of the same JSON kind, and equal names.
func sameShape(want, got any, at string) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: an object, not %T", at, got)
		}
		var missing, extra []string
		for k := range w {
			if _, ok := g[k]; !ok {
				missing = append(missing, k)
			}
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				extra = append(extra, k)
			}
		}
		if len(missing)+len(extra) > 0 {
			slices.Sort(missing)
			slices.Sort(extra)
			return fmt.Errorf("%s: members the real one lacks %v, members the doc lacks %v", at, missing, extra)
		}
		for k, v := range w {
			if slices.Contains(named, k) {
				if !equalJSON(v, g[k]) {
					return fmt.Errorf("%s.%s: %v, not %v", at, k, v, g[k])
				}
				continue
			}
			if err := sameShape(v, g[k], at+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Errorf("%s: an array, not %T", at, got)
		}
		if (len(w) == 0) != (len(g) == 0) {
			return fmt.Errorf("%s: %d elements, not %d", at, len(w), len(g))
		}
		for i, a := range w {
			if !slices.ContainsFunc(g, func(b any) bool { return sameShape(a, b, "") == nil }) {
				return fmt.Errorf("%s[%d]: no element like it (%v)", at, i, a)
			}
		}
		for i, b := range g {
			if !slices.ContainsFunc(w, func(a any) bool { return sameShape(a, b, "") == nil }) {
				return fmt.Errorf("%s[%d]: the doc shows no element like %v", at, i, b)
			}
		}
		return nil
	}
	if fmt.Sprintf("%T", want) != fmt.Sprintf("%T", got) {
		return fmt.Errorf("%s: %v (%T), not %v (%T)", at, want, want, got, got)
	}
	return nil
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
