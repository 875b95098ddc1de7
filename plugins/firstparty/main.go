// Command firstparty builds Weir's first-party module, firstparty.wasm: the
// three first-party plugins (system-prompt, compaction-basic, token-meter)
// in one WebAssembly module, which the host embeds and loads under each of
// the three names (plugins.FirstParty). Init selects the plugin by the name
// the host loads it under (sdk.Register).
//
// One module instead of three saves two copies of the Go runtime (6.7 MB
// instead of 3.5 + 5.5 + 5.8 MB), and the host's runtime compiles, or
// reads from its compilation cache and validates, a module once however
// many names it is loaded under: see docs/architecture.md for the
// startup figures.
package main

import (
	compactionbasic "github.com/weirhost/weir/plugins/compaction-basic"
	systemprompt "github.com/weirhost/weir/plugins/system-prompt"
	tokenmeter "github.com/weirhost/weir/plugins/token-meter"
	"github.com/weirhost/weir/sdk"
)

func init() {
	sdk.Register(systemprompt.Plugin())
	sdk.Register(compactionbasic.Plugin())
	sdk.Register(tokenmeter.Plugin())
}

// main is never called: a plugin is a reactor module, set up by init.
func main() {}
