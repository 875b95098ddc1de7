// Package plugins holds Weir's first-party plugins, one Go package per
// directory (system-prompt, compaction-basic, token-meter), and the
// first-party module that the host embeds: firstparty/firstparty.wasm,
// built from the main package in firstparty, which holds the three plugins
// in one module (FirstParty). Each plugin's standalone directory builds it
// alone into a module of its own, which its tests run.
//
// Rebuild the module after changing a plugin or the SDK with
//
//	go generate ./plugins
//
// and check in CI that the committed module matches its sources with
//
//	go run ./plugins/internal/wasmbuild -check
package plugins

//go:generate go run ./internal/wasmbuild
