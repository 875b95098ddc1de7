// Command weir is Weir's command-line interface: agent sessions (demo,
// run), inspection of session logs (replay, request, inspect, transcript),
// their upkeep (compact, migrate) and checks of plugins and tokenizers.
//
// Install it with
//
//	go install github.com/weirhost/weir/cmd/weir@latest
//
// and run "weir help" for the commands. The commands themselves live in
// package cli (cmd/host).
package main

import (
	"os"

	cli "github.com/weirhost/weir/cmd/host"
)

func main() { os.Exit(cli.Main()) }
