// Package abi is the shared definition of the Weir plugin ABI: version
// numbers, export and import names, method numbers, statuses, the Go types of
// every frame, and their protobuf wire codecs.
//
// The wire schema is weir.proto in this directory; docs/abi.md describes how
// frames travel between the host and a WebAssembly guest. The host runtime
// (host/plugin) and the Go guest SDK (sdk) both use this package, so the two
// sides cannot drift apart.
//
// The codecs are written by hand with encoding/protowire: no reflection, no
// generated code, and few allocations, which keeps Go guests small and fast.
// Every message type has
//
//	Encode(b []byte) []byte  // appends the wire form to b
//	Decode(b []byte) error   // replaces the receiver with the decoded value
//
// Decode treats its input as untrusted: it never panics, allocates at most in
// proportion to len(b), rejects invalid UTF-8 in string fields and wrong wire
// types for known fields, and skips unknown fields (forward compatibility).
// In wasip1 builds, which are guests decoding frames from their host, the
// UTF-8 check is left out: the host is trusted, and under the sandbox's
// CloseOnContextDone the check costs about 3 ns per byte.
// Byte-slice fields of a decoded value alias b; copy them to keep them beyond
// the lifetime of b.
package abi
