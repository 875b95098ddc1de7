// Package native is the token meter running inside the host: it implements
// host.Meter with the pure logic of package meter, for hosts that run
// without (or before) the WebAssembly token-meter plugin.
//
// The adapter adds what the guest cannot carry: stream reassembly through
// the host's LLM layer (llm.Reassemble), so assistantTokens is priced from
// the exact provider output, and OpenAI's o200k_base and cl100k_base
// tokenizers (also under the short names "o200k" and "cl100k") for routes
// configured to use them. It converts measurements to host.Measurement and
// serializes calls, since the host observes events and measures from
// different goroutines.
package native
