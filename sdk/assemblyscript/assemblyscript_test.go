// Package assemblyscript_test builds the AssemblyScript SDK's example
// plugins with the pinned compiler (npm ci) and runs them under the real
// host: in the sandbox directly, and in offline sessions that load them
// through weir.yaml alone.
package assemblyscript_test

import (
	"testing"

	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/internal/guesttest"
)

func TestMain(m *testing.M) { guesttest.Main(m) }

func TestDescribe(t *testing.T) {
	guesttest.Describe(t, guesttest.BuildAS(t, "examples/prompt"), "as-prompt", "weir-assemblyscript/", abi.KindSystemPrompt)
	guesttest.Describe(t, guesttest.BuildAS(t, "examples/compaction"), "as-compaction", "weir-assemblyscript/", abi.KindCompaction)
}

func TestPrompt(t *testing.T) { guesttest.Prompt(t, guesttest.BuildAS(t, "examples/prompt")) }

func TestCompaction(t *testing.T) {
	guesttest.Compaction(t, guesttest.BuildAS(t, "examples/compaction"))
}

func TestSession(t *testing.T) {
	guesttest.Session(t, guesttest.Plugins{
		Prompt:     guesttest.BuildAS(t, "examples/prompt"),
		Compaction: guesttest.BuildAS(t, "examples/compaction"),
	})
}

func TestFailures(t *testing.T) {
	guesttest.Failures(t, guesttest.BuildAS(t, "testdata/failing"), "abort: Index out of range")
}

// A token meter written at the wire level with the SDK's protobuf helpers.
func TestWireLevelMeter(t *testing.T) { guesttest.Meter(t, guesttest.BuildAS(t, "testdata/meter")) }

// The minor-2 parts of the ABI through the SDK.
func TestMinor2(t *testing.T) { guesttest.Minor2(t, guesttest.BuildAS(t, "testdata/minor2")) }
