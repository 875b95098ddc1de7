package plugins

import _ "embed"

// Names of the first-party plugins, as the host loads them.
const (
	SystemPrompt    = "system-prompt"
	CompactionBasic = "compaction-basic"
	TokenMeter      = "token-meter"
)

// firstPartyWasm is the first-party module: the three plugins in one
// module, which serves each under its name (see the package comment).
//
//go:embed firstparty/firstparty.wasm
var firstPartyWasm []byte

// FirstParty maps each first-party plugin's name to its module bytes,
// built from the sources next to them by go generate (see the package
// comment). The three names map to the same bytes: one module holds the
// three plugins, and the host's runtime compiles it once for all of them.
// The module must be loaded under one of these names. Callers must not
// modify the bytes.
var FirstParty = map[string][]byte{
	SystemPrompt:    firstPartyWasm,
	CompactionBasic: firstPartyWasm,
	TokenMeter:      firstPartyWasm,
}
