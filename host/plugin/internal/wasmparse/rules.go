package wasmparse

import (
	"crypto/sha256"
	_ "embed" // the parser's and the checker's sources
	"encoding/hex"
	"sync"
)

var (
	//go:embed wasmparse.go
	parseSource []byte
	//go:embed code.go
	checkSource []byte
)

// RulesVersion identifies the rules Parse and CheckCode apply: a hash of
// their sources. A verdict recorded under it (a module that passed, not
// walked again on the next start) is void once either changes, without
// anyone remembering to bump a number.
var RulesVersion = sync.OnceValue(func() string {
	h := sha256.New()
	h.Write(parseSource)
	h.Write([]byte{0})
	h.Write(checkSource)
	return hex.EncodeToString(h.Sum(nil)[:16])
})
