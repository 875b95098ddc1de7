// Package c_test builds the C SDK's example plugins with clang and runs
// them under the real host: in the sandbox directly, and in offline
// sessions that load them through weir.yaml alone.
package c_test

import (
	"testing"

	"github.com/weirhost/weir/sdk/abi"
	"github.com/weirhost/weir/sdk/internal/guesttest"
)

func TestMain(m *testing.M) { guesttest.Main(m) }

func TestDescribe(t *testing.T) {
	guesttest.Describe(t, guesttest.BuildC(t, "examples/prompt"), "c-prompt", "weir-c/", abi.KindSystemPrompt)
	guesttest.Describe(t, guesttest.BuildC(t, "examples/compaction"), "c-compaction", "weir-c/", abi.KindCompaction)
}

func TestPrompt(t *testing.T) { guesttest.Prompt(t, guesttest.BuildC(t, "examples/prompt")) }

func TestCompaction(t *testing.T) {
	guesttest.Compaction(t, guesttest.BuildC(t, "examples/compaction"))
}

func TestSession(t *testing.T) {
	guesttest.Session(t, guesttest.Plugins{
		Prompt:     guesttest.BuildC(t, "examples/prompt"),
		Compaction: guesttest.BuildC(t, "examples/compaction"),
	})
}

func TestFailures(t *testing.T) {
	guesttest.Failures(t, guesttest.BuildC(t, "testdata/failing"), "trapping as asked")
}

// A token meter written at the wire level with the SDK's protobuf helpers.
func TestWireLevelMeter(t *testing.T) { guesttest.Meter(t, guesttest.BuildC(t, "testdata/meter")) }
