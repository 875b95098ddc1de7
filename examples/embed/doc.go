// Package embed shows a Go program that embeds Weir's host as a library:
// its own Go tool, the offline model, the three default providers as
// sandboxed WebAssembly plugins, and a session kept in memory. See example_test.go; "go test ./examples/embed" runs it.
// store_test.go keeps sessions in a custom store (the host/store contract)
// and runs the store conformance suite on it.
package embed
