// Command panic-alternate is a hostile test plugin: every second call on an
// instance panics. Since the host replaces an instance after a panic, calls
// alternate between success and failure.
package main

import (
	"strconv"

	"github.com/weirhost/weir/sdk"
)

var calls int

type prompt struct{}

func (prompt) RenderPrompt(h *sdk.Host, req *sdk.RenderRequest) (string, error) {
	calls++
	if calls%2 == 0 {
		panic("second call " + strconv.Itoa(calls))
	}
	return "call " + strconv.Itoa(calls), nil
}

func init() {
	sdk.Register(sdk.Plugin{Name: "panic-alternate", SystemPrompt: prompt{}})
}

func main() {}
