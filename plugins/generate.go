// Package plugins holds Weir's first-party plugins, one Go main package per
// directory (system-prompt, compaction-basic, token-meter), each built into
// a committed <name>/<name>.wasm that the host embeds.
//
// Rebuild the modules after changing a plugin or the SDK with
//
//	go generate ./plugins
//
// and check in CI that the committed modules match their sources with
//
//	go run ./plugins/internal/wasmbuild -check
package plugins

//go:generate go run ./internal/wasmbuild
