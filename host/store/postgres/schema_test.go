package postgres_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
)

// TestSchemaAsDocumented: the schema docs/stores.md shows is the one a new
// store creates in PostgreSQL. The doc's statements (its PostgreSQL
// lines: the SQLite epoch table left out, BLOB written BYTEA as the doc
// says) run in an empty database, and the two databases describe the same
// columns (in order, with types, nullability and defaults), constraints,
// indexes and sequences.
func TestSchemaAsDocumented(t *testing.T) {
	srv := need(t)
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "stores.md"))
	require.NoError(t, err)
	stmts := docSchema(t, string(doc))
	require.GreaterOrEqual(t, len(stmts), 5, "the doc's schema block has its statements")

	st := open(t, newDB(t))
	defer st.Close()
	got := describe(t, st.DB())

	cfg, err := pgx.ParseConfig(newDB(t))
	require.NoError(t, err)
	cfg.Password = srv.Password()
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	for _, s := range stmts {
		_, err := db.Exec(s)
		require.NoError(t, err, "the doc's statement %q", s)
	}
	require.Equal(t, describe(t, db), got, "docs/stores.md's schema is not the one the store creates")
}

// docSchema is the SQL block under "## Schema" in docs/stores.md, split
// into statements, comments removed, lines marked "-- SQLite" left out
// and BLOB written BYTEA.
func docSchema(t *testing.T, doc string) []string {
	t.Helper()
	i := strings.Index(doc, "\n## Schema")
	require.GreaterOrEqual(t, i, 0, "docs/stores.md has a Schema section")
	rest := doc[i:]
	j := strings.Index(rest, "```sql\n")
	require.GreaterOrEqual(t, j, 0, "a ```sql block follows")
	rest = rest[j+len("```sql\n"):]
	var b strings.Builder
	for _, line := range strings.Split(rest[:strings.Index(rest, "```")], "\n") {
		code, comment, _ := strings.Cut(line, "--")
		if strings.HasPrefix(strings.TrimSpace(comment), "SQLite") {
			continue
		}
		b.WriteString(strings.ReplaceAll(code, "BLOB", "BYTEA") + "\n")
	}
	var stmts []string
	for _, s := range strings.Split(b.String(), ";") {
		if s = strings.TrimSpace(s); s != "" {
			stmts = append(stmts, s)
		}
	}
	return stmts
}

// describe lists the schema of a database's public namespace as the
// catalogs report it.
func describe(t *testing.T, db *sql.DB) []string {
	t.Helper()
	var out []string
	for _, q := range []string{
		`SELECT table_name || ' column ' || ordinal_position || ' ' || column_name || ' ' || data_type ||
			' nullable=' || is_nullable || ' default=' || COALESCE(column_default, 'none')
		FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`,
		`SELECT conrelid::regclass::text || ' constraint ' || conname || ' ' || pg_get_constraintdef(oid)
		FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY 1`,
		`SELECT tablename || ' index ' || indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1`,
		`SELECT 'sequence ' || sequence_name || ' ' || data_type || ' start ' || start_value || ' by ' || increment
		FROM information_schema.sequences WHERE sequence_schema = 'public' ORDER BY 1`,
	} {
		rows, err := db.QueryContext(context.Background(), q)
		require.NoError(t, err, q)
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			out = append(out, s)
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
	return out
}
