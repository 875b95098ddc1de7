package main

import (
	"strconv"

	"github.com/weirhost/weir/sdk"
)

// alternatePrompt panics on every second call of an instance. Since the
// host replaces an instance after a panic, calls alternate between success
// and failure.
type alternatePrompt struct{}

var calls int

func (alternatePrompt) RenderPrompt(h *sdk.Host, req *sdk.RenderRequest) (string, error) {
	calls++
	if calls%2 == 0 {
		panic("second call " + strconv.Itoa(calls))
	}
	return "call " + strconv.Itoa(calls), nil
}

func init() {
	sdk.Register(sdk.Plugin{Name: "panic-alternate", SystemPrompt: alternatePrompt{}})
}
