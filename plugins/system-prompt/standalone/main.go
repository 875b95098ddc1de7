// Command standalone builds the system-prompt plugin alone into a module of its
// own. Weir ships the plugin in its first-party module (plugins/firstparty);
// the tests of package systemprompt run this one, which holds only the plugin
// under test.
package main

import (
	systemprompt "github.com/weirhost/weir/plugins/system-prompt"
	"github.com/weirhost/weir/sdk"
)

func init() { sdk.Register(systemprompt.Plugin()) }

// main is never called: a plugin is a reactor module, set up by init.
func main() {}
