// Command standalone builds the token-meter plugin alone into a module of its
// own. Weir ships the plugin in its first-party module (plugins/firstparty);
// the tests of package tokenmeter run this one, which holds only the plugin
// under test.
package main

import (
	tokenmeter "github.com/weirhost/weir/plugins/token-meter"
	"github.com/weirhost/weir/sdk"
)

func init() { sdk.Register(tokenmeter.Plugin()) }

// main is never called: a plugin is a reactor module, set up by init.
func main() {}
