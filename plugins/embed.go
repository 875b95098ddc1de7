package plugins

import _ "embed"

// Names of the first-party plugins, as the host loads them.
const (
	SystemPrompt    = "system-prompt"
	CompactionBasic = "compaction-basic"
	TokenMeter      = "token-meter"
)

var (
	//go:embed system-prompt/system-prompt.wasm
	systemPromptWasm []byte
	//go:embed compaction-basic/compaction-basic.wasm
	compactionBasicWasm []byte
	//go:embed token-meter/token-meter.wasm
	tokenMeterWasm []byte
)

// FirstParty maps each first-party plugin's name to its module bytes,
// built from the sources next to them by go generate (see the package
// comment). Callers must not modify the bytes.
var FirstParty = map[string][]byte{
	SystemPrompt:    systemPromptWasm,
	CompactionBasic: compactionBasicWasm,
	TokenMeter:      tokenMeterWasm,
}
