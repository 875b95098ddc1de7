package c_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/sdk/internal/guesttest"
)

// TestReference fails naming every function, type and constant weir.h
// declares that the README's reference section does not list.
func TestReference(t *testing.T) {
	h, err := os.ReadFile("weir/weir.h")
	require.NoError(t, err)
	decls := guesttest.CDeclarations(string(h))
	// The parser must see the header's parts, or the check is empty.
	for _, want := range []string{"WEIR_ABI_MINOR", "enum weir_status", "WEIR_STATUS_OK", "weir_buf",
		"struct weir_plugin", "weir_buf_reserve", "weir_host_code_name", "weir_json_int", "weir_oom", "weir_plugin"} {
		require.Contains(t, decls, want)
	}
	missing := guesttest.Documented(guesttest.ReferenceSection(t, "README.md"), decls)
	require.Empty(t, missing, "weir.h declares these, README.md's reference does not list them")
}
