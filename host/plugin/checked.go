package plugin

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"

	"github.com/weirhost/weir/host/plugin/internal/wasmparse"
)

// checkedDir is the folder of the compilation cache directory that holds
// the records of modules that passed the code check and compiled.
const checkedDir = "weir-checked"

// A checked record is an empty file in the cache directory whose name is
// an HMAC, under the cache key (seal.go), of the module's sha256, the module limits, the rules of the code
// check (wasmparse.RulesVersion, a hash of their sources) and the wazero
// version. It says that the module passed the code check under those
// limits and rules and was compiled by that wazero into this cache, so a
// later Load of the same bytes with the same limits does not walk the code
// again (tens of milliseconds for the largest first-party module) and
// knows it will not compile (see WithCompileHook). A different module,
// other limits, changed rules or another wazero find no record and are
// checked again. Without the key no one can name the record of a module,
// so a record planted in the folder matches none.

// checkedPath is the path of the checked record of the module whose
// sha256 is sum, or "" when the runtime has no cache directory.
func (r *Runtime) checkedPath(sum [32]byte) string {
	if r.sealer == nil {
		return ""
	}
	l := r.cfg.moduleLimits
	h := hmac.New(sha256.New, r.sealer.key)
	fmt.Fprintf(h, "weir checked module\x00rules %s\x00wazero %s\x00limits %d %d %d %d %d\x00",
		wasmparse.RulesVersion(), wazeroVersion(), l.MaxFunctions, l.MaxBodySize, l.MaxCodeSize, l.MaxNesting, l.MaxControl)
	h.Write(sum[:])
	return filepath.Join(r.cfg.cacheDir, checkedDir, hex.EncodeToString(h.Sum(nil)))
}

// isChecked reports whether the checked record at path exists.
func isChecked(path string) bool {
	if path == "" {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// markChecked writes the checked record at path. A failure only costs the
// next start the check, so it is logged and otherwise ignored.
func (r *Runtime) markChecked(path string) {
	if path == "" {
		return
	}
	err := os.MkdirAll(filepath.Dir(path), 0o755)
	if err == nil {
		err = os.WriteFile(path, nil, 0o644)
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		r.log.Debug("cannot record a checked module in the compilation cache", "error", err)
	}
}

// wazeroVersion is the version of wazero built into this program.
var wazeroVersion = sync.OnceValue(func() string {
	const path = "github.com/tetratelabs/wazero"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				if d.Replace != nil {
					return d.Replace.Path + "@" + d.Replace.Version + " " + d.Replace.Sum
				}
				return d.Version + " " + d.Sum
			}
		}
	}
	return "unknown"
})
