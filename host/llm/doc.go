// Package llm is Weir's model client layer: the interface the agent loop
// calls, the adapters that turn a request into an API's wire body and its
// stream back into a reply (OpenAI-compatible chat completions, Anthropic
// Messages, Gemini; see [API]), a streaming HTTP client, the stream record
// the session log keeps, and an offline scripted model.
//
// # Model
//
// The loop builds a [Request] from the session fold (config of the latest
// request header, the derived surface history with the system message
// first, the header's tools, the session id) and calls [Model.Stream]. The
// model reports live output as [Delta] values and returns a [Result]: the
// assistant content as surface blocks (reasoning, text and tool calls in
// provider order), the provider usage in disjoint buckets, the finish
// reason, and Stream, the attempt's provider stream record.
//
// # Wire bytes
//
// [Encode] is a pure function: the same API and Request always yield the
// same body bytes ([EncodeRequest], [EncodeAnthropic], [EncodeGemini]),
// and the [Client] sends exactly those bytes. The host can therefore
// rebuild every body it sent from the log (reconstruction, spec 7.5); the
// stream record names the API of a non-OpenAI attempt. Provider-specific
// rules (DeepSeek's reasoning_content replay) are keyed by the provider
// name in the config.
//
// # Usage
//
// Every adapter reports usage in the same disjoint buckets of
// surface.Usage: Input is uncached input, CacheRead and CacheWrite the
// cached input read and written, Output all output (reasoning included),
// Reasoning the part of Output that was reasoning when the provider says.
// Providers that count the cache inside their input figure (OpenAI's
// prompt_tokens, Gemini's promptTokenCount) have it subtracted; Anthropic's
// input_tokens already excludes it.
//
// # Stream record
//
// Every attempt, successful or not, yields a stream record: a compact JSON
// value holding each SSE data payload verbatim with its arrival time in
// milliseconds since the request was sent, the [DONE] time, the status and
// body of a refused request, and how a failed attempt ended (see
// [Reassemble] and the format notes in record.go). The session log stores
// it in assistant/message.stream and assistant/attempt.stream; the token
// meter rebuilds the provider output from it with [Reassemble], which runs
// the same chunk assembler as the live client, so the two always agree.
//
// # Errors
//
// Failures are *[Error] values with a stable Code (AUTH, QUOTA, RATE_LIMIT,
// CONTEXT_WINDOW_EXCEEDED, BAD_REQUEST, SERVER_ERROR, BROKEN_STREAM,
// CANCELLED, TIMEOUT, NETWORK, RESPONSE_TOO_LARGE) that the loop records
// as the turn-end error code; errors.Is matches them against the Err*
// sentinels. A failed stream
// still returns the Result delivered so far, so the loop can record the
// prefix. The API key never appears in an error, a Result or a record.
//
// # Bounds
//
// The stream is untrusted, so every attempt of the [Client] is bounded (see
// [ClientConfig]): an overall deadline, an idle timeout that only progress
// resets (SSE keep-alive comments and empty chunks do not), and a cap on
// the response bytes. Each has a default and fails with an error naming
// the route key that raises it.
//
// # Offline
//
// [Scripted] plays replies from a [Script] file with no network, streaming
// them in small pieces and recording them in the same stream record format;
// [Open] opens it from the CLI form "offline:<path-to-script>". Package
// llmtest provides a loopback server speaking the real protocol for tests.
package llm
