package assemblyscript_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/sdk/internal/guesttest"
)

// TestReference fails naming every export of weir/index.ts that the
// README's reference section does not list.
func TestReference(t *testing.T) {
	src, err := os.ReadFile("weir/index.ts")
	require.NoError(t, err)
	exports := guesttest.TSExports(string(src))
	// The parser must see the module's parts, or the check is empty.
	for _, want := range []string{"ABI_MINOR", "Buf", "Plugin", "Intent", "register", "weir_call", "summarize", "jsonInt", "weirAbort"} {
		require.Contains(t, exports, want)
	}
	missing := guesttest.Documented(guesttest.ReferenceSection(t, "README.md"), exports)
	require.Empty(t, missing, "weir/index.ts exports these, README.md's reference does not list them")
}
