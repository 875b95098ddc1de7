// Package sdk is the Go guest SDK of Weir plugins.
//
// A plugin is a WebAssembly reactor module built from an ordinary Go main
// package:
//
//	package main
//
//	import "github.com/weirhost/weir/sdk"
//
//	type prompt struct{}
//
//	func (prompt) RenderPrompt(h *sdk.Host, req *sdk.RenderRequest) (string, error) {
//		...
//	}
//
//	func init() {
//		sdk.Register(sdk.Plugin{Name: "my-prompt", Version: "1.0.0", SystemPrompt: prompt{}})
//	}
//
//	func main() {}
//
// built with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o my-prompt.wasm .
//
// (sdk/wasmbuild builds reproducibly and sdk/plugintest runs a plugin under
// the real host sandbox inside go test). In a reactor module main is never
// called: register from an init function.
//
// A module may hold several plugins: register each, under distinct names.
// The host's init call then selects the one named as the host loads it,
// and describe is answered only after init (docs/abi.md, section 2). Weir's
// first-party module (plugins/firstparty) holds its three plugins this
// way, so that the host compiles one module instead of three.
//
// The SDK implements the guest side of the ABI described in docs/abi.md: it
// exports weir_abi_version, weir_input and weir_call, decodes requests
// without reflection, calls the registered provider, and encodes its answer
// into a reused output buffer. Every call is wrapped: a panic becomes an
// error frame with status "panic" (the host then discards the instance), and
// runtime.Gosched runs before control returns to the host so the guest's
// garbage collector keeps up.
//
// Requests are borrowed: byte slices inside a request (event JSON, state
// blobs) alias the SDK's input buffer and are valid only until the provider
// method returns; copy what must outlive the call. Strings are owned.
//
// Host queries (surface nodes, message content, generations, header, meter
// measurement, summarize, count_tokens) are methods of the *Host handed to
// each provider method. They return owned values. Which queries a call may
// use depends on its provider kind (abi.Granted); others fail with
// ErrNotGranted.
//
// Plugin instances are interchangeable and may be replaced at any time:
// keep durable state in the state blob of the compaction and token meter
// methods, never in package variables. A compaction state blob is durable:
// when a result returns a changed state, the host writes it to the session
// log (a plugin/state event committed or refused with that result), and
// every later request carries the latest one of this plugin and module, in
// this process or the next. A new module version starts from an empty
// state; a state over 1 MiB is refused (docs/abi.md section 2).
package sdk
