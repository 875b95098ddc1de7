// Package embed shows a Go program that embeds Weir's host as a library:
// its own Go tool, the offline model, the three default providers as
// sandboxed WebAssembly plugins loaded by host/setup from the default
// configuration, a tool interceptor (an approval gate),
// and a session kept in memory, followed by a subscriber on another
// goroutine and traced with OpenTelemetry (to the SDK's in-memory
// exporter). See example_test.go; "go test ./examples/embed" runs it.
// concurrent_test.go runs 20 sessions side by side, each with its
// subscriber, all traced and measured by one pair of OpenTelemetry
// providers (run it with -race too).
// store_test.go keeps sessions in a custom store (the host/store contract)
// and runs the store conformance suite on it.
package embed
