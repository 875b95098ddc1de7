package sqlite_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSchemaAsDocumented: the schema docs/stores.md shows is the one a new
// store creates. The doc's statements (its SQLite lines: the PostgreSQL
// sequence left out) run in an empty database, and the two databases
// describe the same tables, columns (name, type, NOT NULL, default,
// primary key, in order), foreign keys and indexes.
func TestSchemaAsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "stores.md"))
	require.NoError(t, err)
	stmts := docSchema(t, string(doc))
	require.GreaterOrEqual(t, len(stmts), 5, "the doc's schema block has its statements")

	st := open(t, filepath.Join(t.TempDir(), "sessions.db"))
	defer st.Close()
	got := describe(t, st.DB())

	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "doc.db"))
	require.NoError(t, err)
	defer db.Close()
	for _, s := range stmts {
		_, err := db.Exec(s)
		require.NoError(t, err, "the doc's statement %q", s)
	}
	require.Equal(t, describe(t, db), got, "docs/stores.md's schema is not the one the store creates")
}

// docSchema is the SQL block under "## Schema" in docs/stores.md, split
// into statements, comments removed, lines marked "-- PostgreSQL" left
// out.
func docSchema(t *testing.T, doc string) []string {
	t.Helper()
	i := strings.Index(doc, "\n## Schema")
	require.GreaterOrEqual(t, i, 0, "docs/stores.md has a Schema section")
	rest := doc[i:]
	j := strings.Index(rest, "```sql\n")
	require.GreaterOrEqual(t, j, 0, "a ```sql block follows")
	rest = rest[j+len("```sql\n"):]
	block := rest[:strings.Index(rest, "```")]
	var b strings.Builder
	for _, line := range strings.Split(block, "\n") {
		code, comment, _ := strings.Cut(line, "--")
		if strings.HasPrefix(strings.TrimSpace(comment), "PostgreSQL") {
			continue
		}
		b.WriteString(code + "\n")
	}
	var stmts []string
	for _, s := range strings.Split(b.String(), ";") {
		if s = strings.TrimSpace(s); s != "" {
			stmts = append(stmts, s)
		}
	}
	return stmts
}

// describe lists a database's schema as SQLite reports it: per table its
// columns, foreign keys and indexes (those SQLite makes for a primary key
// included, by their columns).
func describe(t *testing.T, db *sql.DB) []string {
	t.Helper()
	tables := query(t, db, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	var out []string
	for _, tbl := range tables {
		for _, c := range query(t, db, `SELECT name || ' ' || type || ' notnull=' || "notnull" || ' default=' || COALESCE(dflt_value, 'none') || ' pk=' || pk FROM pragma_table_xinfo(?) ORDER BY cid`, tbl) {
			out = append(out, tbl+" column "+c)
		}
		for _, fk := range query(t, db, `SELECT "from" || ' references ' || "table" || '(' || COALESCE("to", '') || ')' FROM pragma_foreign_key_list(?) ORDER BY id, seq`, tbl) {
			out = append(out, tbl+" foreign key "+fk)
		}
		for _, ix := range query(t, db, `SELECT name || ' unique=' || "unique" || ' origin=' || origin FROM pragma_index_list(?) ORDER BY name`, tbl) {
			name, _, _ := strings.Cut(ix, " ")
			cols := query(t, db, `SELECT name FROM pragma_index_info(?) ORDER BY seqno`, name)
			if strings.HasPrefix(name, "sqlite_autoindex_") {
				name = "(primary key)" // SQLite's own name
				ix = name + ix[strings.Index(ix, " "):]
			}
			out = append(out, fmt.Sprintf("%s index %s on (%s)", tbl, ix, strings.Join(cols, ", ")))
		}
	}
	return out
}

func query(t *testing.T, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(q, args...)
	require.NoError(t, err, q)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}
