package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/config"
)

// TestLimitsDocMatchesCode: docs/authors.md's limits table is the one the
// code derives from the default configuration, and docs/config.md gives
// every configurable limit the same default.
func TestLimitsDocMatchesCode(t *testing.T) {
	t.Parallel()
	rows := pluginLimits(config.Default())
	want := limitsTable(rows)
	if os.Getenv("WEIR_PRINT_LIMITS") != "" {
		t.Logf("\n%s", want)
	}
	doc := readFile(t, filepath.Join(repoRoot(t), "docs", "authors.md"))
	const begin, end = "<!-- limits:begin (generated from cmd/host/limits.go; TestLimitsDocMatchesCode) -->\n", "<!-- limits:end -->"
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	require.True(t, i >= 0 && j > i, "docs/authors.md marks its limits table with %q and %q", begin, end)
	require.Equal(t, want, doc[i+len(begin):j], "docs/authors.md's limits table differs from the code: paste the table TestLimitsDocMatchesCode logs with WEIR_PRINT_LIMITS=1")

	conf := readFile(t, filepath.Join(repoRoot(t), "docs", "config.md"))
	seen := map[string]bool{}
	for _, r := range rows {
		if r.Key == "" || seen[r.Key] {
			continue
		}
		seen[r.Key] = true
		prefix := "| `" + r.Key + "` | "
		k := strings.Index(conf, prefix)
		require.GreaterOrEqual(t, k, 0, "docs/config.md has a row for %s", r.Key)
		cells := strings.Split(conf[k:k+strings.Index(conf[k:], "\n")], "|")
		got := strings.Trim(strings.TrimSpace(cells[3]), "`")
		value, _, _ := strings.Cut(r.Value, " ") // "64 MiB" is 64 in a MiB key
		require.Equal(t, value, got, "docs/config.md's default of %s", r.Key)
	}
}
