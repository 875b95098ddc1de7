package guesttest

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ReferenceSection returns the "## Reference" section of a README: from
// that heading to the next level-2 heading.
func ReferenceSection(t testing.TB, readme string) string {
	t.Helper()
	b, err := os.ReadFile(readme)
	require.NoError(t, err)
	s := string(b)
	i := strings.Index(s, "\n## Reference\n")
	require.GreaterOrEqual(t, i, 0, "%s has no \"## Reference\" section", readme)
	s = s[i+len("\n## Reference\n"):]
	if j := strings.Index(s, "\n## "); j >= 0 {
		s = s[:j]
	}
	return s
}

var codeSpan = regexp.MustCompile("`[^`\n]+`")

// Documented returns the names of names that appear, as a whole word,
// inside no code span (`...`) of section: the exports its reference
// misses. A name counts as documented only in code, so a mention in prose
// does not stand in for an entry.
func Documented(section string, names []string) (missing []string) {
	var code strings.Builder
	for _, span := range codeSpan.FindAllString(section, -1) {
		code.WriteString(span)
		code.WriteByte('\n')
	}
	c := code.String()
	for _, n := range names {
		if !regexp.MustCompile(`(^|[^\w])` + regexp.QuoteMeta(n) + `($|[^\w])`).MatchString(c) {
			missing = append(missing, n)
		}
	}
	return missing
}

var (
	cComment  = regexp.MustCompile(`(?s)/\*.*?\*/`)
	cDefine   = regexp.MustCompile(`(?m)^#define\s+(\w+)`)
	cEnum     = regexp.MustCompile(`(?ms)^enum\s+(\w+)\s*\{(.*?)\};`)
	cEnumItem = regexp.MustCompile(`(?m)^\s*(\w+)\s*=`)
	cTypedef  = regexp.MustCompile(`(?m)^\}\s*(\w+)\s*;`)
	cStruct   = regexp.MustCompile(`(?m)^struct\s+(\w+)\s*\{`)
	cFunc     = regexp.MustCompile(`(?m)^[A-Za-z_][\w \t\*]*?\b(\w+)\s*\(`)
	cExtern   = regexp.MustCompile(`(?m)^extern\s+[\w \t\*]*?\b(\w+)\s*;`)
)

// CDeclarations lists what a C header declares at file scope: macros
// (but the include guard), enum tags ("enum name") and enumerators,
// typedef names, struct tags ("struct name"), functions and extern
// variables, in that order, without duplicates.
func CDeclarations(header string) []string {
	src := cComment.ReplaceAllString(header, "")
	var out []string
	add := func(n string) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, m := range cDefine.FindAllStringSubmatch(src, -1) {
		if !strings.HasSuffix(m[1], "_H") {
			add(m[1])
		}
	}
	for _, m := range cEnum.FindAllStringSubmatch(src, -1) {
		add("enum " + m[1])
		for _, e := range cEnumItem.FindAllStringSubmatch(m[2], -1) {
			add(e[1])
		}
	}
	for _, m := range cTypedef.FindAllStringSubmatch(src, -1) {
		add(m[1])
	}
	for _, m := range cStruct.FindAllStringSubmatch(src, -1) {
		add("struct " + m[1])
	}
	for _, m := range cFunc.FindAllStringSubmatch(src, -1) {
		if m[1] != "defined" {
			add(m[1])
		}
	}
	for _, m := range cExtern.FindAllStringSubmatch(src, -1) {
		add(m[1])
	}
	return out
}

var tsExport = regexp.MustCompile(`(?m)^export\s+(?:abstract\s+)?(?:const|let|class|function|enum|interface|type)\s+(\w+)`)

// TSExports lists the names a TypeScript module exports by declaration
// (export const|let|class|function|enum ...), in source order.
func TSExports(src string) []string {
	var out []string
	for _, m := range tsExport.FindAllStringSubmatch(src, -1) {
		out = append(out, m[1])
	}
	return out
}
