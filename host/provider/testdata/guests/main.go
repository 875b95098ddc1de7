// Command guests is the module of the host/provider tests' guest plugins,
// one package each (badmeter, checkpoint, eventprobe, flaky, liar,
// summarizeloop, trap; their package docs say what each does). A module
// of several plugins serves a load only under a name it registers, so
// each guest is registered under every name a test loads it by. They share
// one module so that a test run builds and compiles one module instead of
// seven; an instance serves one plugin, so one plugin's state, globals and
// failures never reach another's.
package main

import (
	"github.com/weirhost/weir/host/provider/testdata/guests/badmeter"
	"github.com/weirhost/weir/host/provider/testdata/guests/checkpoint"
	"github.com/weirhost/weir/host/provider/testdata/guests/eventprobe"
	"github.com/weirhost/weir/host/provider/testdata/guests/flaky"
	"github.com/weirhost/weir/host/provider/testdata/guests/liar"
	"github.com/weirhost/weir/host/provider/testdata/guests/summarizeloop"
	"github.com/weirhost/weir/host/provider/testdata/guests/trap"
	"github.com/weirhost/weir/sdk"
)

func init() {
	for _, g := range []struct {
		plugin func(name string) sdk.Plugin
		names  []string
	}{
		{badmeter.Plugin, []string{"badmeter", "badmeter-honest"}},
		{checkpoint.Plugin, []string{"checkpoint", "checkpoint-small", "checkpoint-reasons", "checkpoint-raw", "checkpoint-as-meter"}},
		{eventprobe.Plugin, []string{"eventprobe"}},
		{flaky.Plugin, []string{"flaky"}},
		{liar.Plugin, []string{"liar", "liar-declared", "liar-trickle", "liar-repeat", "liar-prompt"}},
		{summarizeloop.Plugin, []string{"summarize-loop", "greedy"}},
		{trap.Plugin, []string{"trap", "trap-as-compaction"}},
	} {
		for _, name := range g.names {
			sdk.Register(g.plugin(name))
		}
	}
}

func main() {}
