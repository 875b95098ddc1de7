package config

import (
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// path is a key path: key names, entry names, and list positions written
// "[i]". Plugins are addressed by name inside the loader.
type path []string

func (p path) with(segs ...string) path {
	out := make(path, len(p), len(p)+len(segs))
	copy(out, p)
	return append(out, segs...)
}

// String renders "a.b[2].c".
func (p path) String() string {
	var b strings.Builder
	for i, s := range p {
		if i > 0 && !strings.HasPrefix(s, "[") {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

func index(i int) string { return "[" + strconv.Itoa(i) + "]" }

// lookup returns the value at p in a tree, nil when absent. A list
// position returns the list element.
func lookup(tree map[string]any, p path) any {
	var cur any = tree
	for _, s := range p {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[s]
		case []any:
			i, err := strconv.Atoi(strings.Trim(s, "[]"))
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func reflectOf(v any) reflect.Value { return reflect.ValueOf(v) }
