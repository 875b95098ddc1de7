package compact

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// sha256Sum is SHA-256: the standard library's digest of every length
// around the block and padding boundaries, and of longer inputs.
func TestSHA256MatchesTheStandardLibrary(t *testing.T) {
	for n := range 300 {
		in := []byte(strings.Repeat("weir\x00\xff", n)[:n])
		if got, want := sha256Sum(in), sha256.Sum256(in); got != want {
			t.Fatalf("length %d: got %x, want %x", n, got, want)
		}
	}
	long := []byte(strings.Repeat("a compaction id ", 1<<12))
	if got, want := sha256Sum(long), sha256.Sum256(long); got != want {
		t.Fatalf("length %d: got %x, want %x", len(long), got, want)
	}
}

func TestCompactionIDIsStable(t *testing.T) {
	// The ids of existing sessions must not change: this one is
	// "cmp-" and the first 8 bytes of SHA-256("s1\x0042") in hex.
	h := sha256.Sum256([]byte("s1\x0042"))
	want := "cmp-" + hex.EncodeToString(h[:8])
	if got := CompactionID("s1", 42); got != want {
		t.Fatalf("CompactionID = %q, want %q", got, want)
	}
}
