package eval

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/sdk/tokenizer"
)

// The driver's heuristic counts, from the previous text's length and the
// two rests, are Heuristic.Count of the text and of its shared prefix, for
// texts that share prefixes of every kind: ASCII, multi-byte and
// four-byte characters, cut anywhere, and invalid UTF-8.
func TestHeuristicCountsEqualCount(t *testing.T) {
	pieces := []string{"a", "word ", "é", "日本", "😀", "\xff", "\xe6\x97", "\n", strings.Repeat("x", 300)}
	r := rand.New(rand.NewPCG(7, 7))
	d := &driver{}
	text := ""
	for i := range 2000 {
		switch r.IntN(4) {
		case 0: // the next request cuts the text somewhere and goes on
			text = text[:r.IntN(len(text)+1)]
		case 1:
			text = ""
		}
		for n := r.IntN(6); n >= 0; n-- {
			text += pieces[r.IntN(len(pieces))]
		}
		input, cached := d.heuristic(text)
		require.Equal(t, int64(tokenizer.Heuristic.Count(text)), input, "request %d", i)
		if d.prev.ok {
			want := tokenizer.Heuristic.Count(text[:commonStringPrefix(d.prev.text, text)])
			require.Equal(t, int64(want), cached, "request %d", i)
		} else {
			require.Zero(t, cached)
		}
		d.prev = requestText{text: text, ok: r.IntN(10) > 0}
	}
}
