package tokenizer

import (
	"bufio"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// oracleCase is one line of testdata/oracle/corpus.jsonl.gz.
type oracleCase struct {
	Kind  string `json:"k"`
	Text  string `json:"t"`
	Bytes string `json:"b"` // base64 raw input, possibly invalid UTF-8
	IDs   []int  `json:"ids"`
}

func loadCorpus(t testing.TB) []oracleCase {
	return loadCases(t, "testdata/oracle/corpus.jsonl.gz")
}

func loadCases(t testing.TB, path string) []oracleCase {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<24)
	var cases []oracleCase
	for sc.Scan() {
		var c oracleCase
		require.NoError(t, json.Unmarshal(sc.Bytes(), &c), "corpus line %d", len(cases)+1)
		cases = append(cases, c)
	}
	require.NoError(t, sc.Err())
	return cases
}

// input returns the Go input of a case: the raw bytes when given.
func (c oracleCase) input(t testing.TB) string {
	if c.Bytes == "" {
		return c.Text
	}
	raw, err := base64.StdEncoding.DecodeString(c.Bytes)
	require.NoError(t, err)
	return string(raw)
}

func TestOracleCorpus(t *testing.T) {
	cases := loadCorpus(t)
	require.GreaterOrEqual(t, len(cases), 2000)
	checkCases(t, cases)
}

// TestOracleExtra runs a larger, uncommitted oracle corpus when
// WEIR_TOKENIZER_EXTRA names one (see testdata/oracle/README.md).
func TestOracleExtra(t *testing.T) {
	path := os.Getenv("WEIR_TOKENIZER_EXTRA")
	if path == "" {
		t.Skip("set WEIR_TOKENIZER_EXTRA to a file written by gen.mjs --extra")
	}
	checkCases(t, loadCases(t, path))
}

func checkCases(t *testing.T, cases []oracleCase) {
	tok := DeepSeekV3()
	kinds := map[string]int{}
	for i, c := range cases {
		in := c.input(t)
		got := tok.Encode(in)
		if !slices.Equal(got, c.IDs) {
			t.Fatalf("case %d (%s) %q:\n got  %v\n want %v", i, c.Kind, trim(in), got, c.IDs)
		}
		if n := tok.Count(in); n != len(c.IDs) {
			t.Fatalf("case %d (%s) %q: Count = %d, want %d", i, c.Kind, trim(in), n, len(c.IDs))
		}
		if c.Bytes != "" {
			require.Equal(t, c.Text, Sanitize(in), "case %d: Sanitize must match TextDecoder", i)
		}
		require.Equal(t, Sanitize(in), tok.Decode(got), "case %d: Decode(Encode(s))", i)
		kinds[c.Kind]++
	}
	t.Logf("%d cases agree: %v", len(cases), kinds)
}

func trim(s string) string {
	if len(s) > 300 {
		return s[:300] + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return s
}
