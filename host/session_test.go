package host

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/sdk/tokenizer"
)

// estimate measures valid UTF-8 in place as tokenizer.UTF16Len measures
// its string, and invalid data as UTF16Len decodes it.
func TestEstimateIsUTF16Quarter(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
	}{
		{"empty", ""},
		{"ascii", `{"text":"hello, world"}`},
		{"two and three bytes", `"é€ ünïcödé"`},
		{"above U+FFFF", `"😀 𝄞 and text"`},
		{"invalid", "\"a\xffb\xc3(\xf0\x9f\x98\""},
		{"long", strings.Repeat(`"lorem ipsum é 😀 "`, 50)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := int64((tokenizer.UTF16Len(tc.data) + 3) / 4)
			require.Equal(t, want, estimate([]byte(tc.data)))
		})
	}
}
