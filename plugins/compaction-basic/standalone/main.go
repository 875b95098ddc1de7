// Command standalone builds the compaction-basic plugin alone into a module of its
// own. Weir ships the plugin in its first-party module (plugins/firstparty);
// the tests of package compactionbasic run this one, which holds only the plugin
// under test.
package main

import (
	compactionbasic "github.com/weirhost/weir/plugins/compaction-basic"
	"github.com/weirhost/weir/sdk"
)

func init() { sdk.Register(compactionbasic.Plugin()) }

// main is never called: a plugin is a reactor module, set up by init.
func main() {}
