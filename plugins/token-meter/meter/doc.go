// Package meter is the logic of Weir's token meter (spec section 12): it
// folds a session log event by event and answers how many tokens the next
// request will cost.
//
// The package is pure: it imports the event model (surface), the tokenizers
// (sdk/tokenizer) and nothing of the host, so a WebAssembly guest can run it
// unchanged. The host uses it through plugins/token-meter/native.
//
// # Prices
//
// Every surface node has two prices. HeuristicTokens is the fixed estimator
// of 12.1 (EstimateBlock, EstimateMessage, EstimateNode, EstimateTools):
// ceil(len/4) per text with UTF-16 lengths, +4 per block and per message, 0
// for a node that projects to no message. Tokens is the price under the
// tokenizer of the route (Config.Routes; DeepSeek routes default to the
// DeepSeek V3 tokenizer, others to the estimator): the tokens of what the
// request encoder sends for that message, with the chat template's framing
// of that one message. The DeepSeek template's per-request tokens (the BOS
// and the generation prompt, 2 tokens) belong to no node and are not
// counted. Under the estimator both prices are equal. Prices are cached by
// content hash per tokenizer, so a step that adds one node prices only that
// node, and switching routes back and forth reprices nothing twice.
//
// # Replay state
//
// Meter keeps the replay state of 12.2: the current canonical header, the
// open step, the priced surface (appends and positional replaces) and the
// anchor captured at each assistant/message: the header, the price of the
// nodes before it (all a measurement reads of them), assistantTokens and
// usage. Observe folds one committed event, plan then commit: an event it
// cannot fold (an assistant/message outside its step, a second step/start,
// a mismatched step/end, a replace naming a range not on the surface, an
// unreadable payload) leaves the state unchanged, stops the meter at that
// seq, makes Measure fail with the same error, and fails identically when
// observed again.
//
// Measure applies the three cases of 12.2 under the effective header (an
// override, canonicalized, else the logged one): an anchor with an equal
// header gives a usage or estimated baseline and a signed surface delta; no
// header and a surface priced 0 gives baseline "none"; otherwise the
// estimate tools + surface. Beyond the spec a measurement carries a
// breakdown by category, the signed error of the estimate of the last call
// against its usage, and the tokenizer name. A fresh replay of the same log
// yields an identical measurement.
//
// # State blobs
//
// AppendState and Restore carry the replay state across processes or
// WebAssembly instances (the token-meter plugin keeps it in the host's
// state blob): the fold position and stop error, the header, the open
// step, each surface node's seq, kind and prices, and the anchor, a few
// bytes per node. Contents and the price cache stay behind; a restored
// meter loads a node's content through Config.Content when a route change
// or a header override makes it reprice. A restored meter folds and
// measures exactly as the meter that wrote the blob.
//
// # Projections
//
// Projections are the O(1) folds of 12.3 (tokenUsage, contextPressure,
// contextBreakdown) with the shadow-price protocol: compaction/summary or
// compaction/prune arms a claim on shadowedRange and shadowedTokenCount;
// the replace right after it consumes the claim (the running surface total
// moves by the new node's price minus the claim); any other event expires
// it; a replace without a claim moves the total by 0; a claim naming
// another range than the replace is an error.
package meter
