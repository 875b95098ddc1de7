package guesttest_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/sdk/internal/guesttest"
)

// stopper records how Missing stopped a test.
type stopper struct{ fatal, skip string }

func (*stopper) Helper()                             {}
func (s *stopper) Fatalf(format string, args ...any) { s.fatal = fmt.Sprintf(format, args...) }
func (s *stopper) Skipf(format string, args ...any)  { s.skip = fmt.Sprintf(format, args...) }

func TestMissingToolchainFailsInCIAndSkipsElsewhere(t *testing.T) {
	t.Setenv("CI", "true")
	var s stopper
	guesttest.Missing(&s, "clang", "apt-get install clang")
	require.Equal(t, "clang is missing and CI=true: apt-get install clang (.ci/run installs it)", s.fatal)
	require.Empty(t, s.skip)

	t.Setenv("CI", "")
	s = stopper{}
	guesttest.Missing(&s, "node", "install Node.js 20")
	require.Empty(t, s.fatal)
	require.Equal(t, "skipped: node is missing; install Node.js 20 to run this test", s.skip)
}
