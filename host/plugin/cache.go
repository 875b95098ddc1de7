package plugin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// The compilation cache directory (WithCacheDir) holds wazero's native
// code, one file per module in a folder per wazero version and platform
// (wazero-VERSION-GOARCH-GOOS), and the checked records (checkedDir).
// Every entry is sealed with the user's cache key (seal.go); one that does
// not verify is dropped before wazero may read it.
// wazero checks an entry's CRC when it reads it and fails the compilation
// when it does not match, which would fail every later load of the module
// until the user deleted the folder. The runtime heals instead: on such a
// failure it drops the entries of this platform's wazero folders (wazero
// names an entry by a hash that includes internal CPU feature bits, so the
// bad entry cannot be told from the others), logs a warning, and compiles
// again, which writes a fresh entry. The cache is disposable: the other
// modules cost one compilation the next time they load.

// cacheFailure reports whether err is wazero's failure to read an entry
// of its compilation cache.
func cacheFailure(err error) bool {
	return err != nil && strings.Contains(err.Error(), "compilationcache:")
}

// dropCacheEntries removes the entries of this platform's wazero folders
// of the cache directory, after cause (a cacheFailure) and returns how many
// it removed. The folders stay: wazero writes its entries into them.
func (r *Runtime) dropCacheEntries(cause error) int {
	dirs, _ := filepath.Glob(filepath.Join(r.cfg.cacheDir, "wazero-*-"+runtime.GOARCH+"-"+runtime.GOOS))
	n := 0
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.Type().IsRegular() && os.Remove(filepath.Join(d, e.Name())) == nil {
				n++
			}
		}
	}
	if r.sealer != nil {
		r.sealer.forget()
	}
	r.log.Warn("the compilation cache held an entry wazero cannot read; dropped the cached native code and compiling again",
		"dir", r.cfg.cacheDir, "dropped", n, "error", cause)
	return n
}

// CheckCacheDir reports why the compilation cache directory dir (and its
// wazero and checked folders and its key file, where they exist) cannot be
// trusted with code the host will run: a folder not owned by the user
// running the host or writable by its group or by others, where another
// user could plant native code, or a key file others may read or write
// (CacheKeyPath). nil: dir is trusted, or does not exist yet. The runtime
// ignores an untrusted directory (it compiles in memory and says so);
// embedders keeping other files beside the code check it the same way.
func CheckCacheDir(dir string) error {
	if dir == "" {
		return nil
	}
	dirs := []string{dir, filepath.Join(dir, checkedDir)}
	more, _ := filepath.Glob(filepath.Join(dir, "wazero-*"))
	if fi, err := os.Lstat(CacheKeyPath(dir)); err == nil {
		if err := keyFileRule(CacheKeyPath(dir), fi); err != nil {
			return err
		}
	}
	for _, d := range append(dirs, more...) {
		fi, err := os.Lstat(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("compilation cache %s: %w", d, err)
		}
		switch {
		case !fi.IsDir():
			return fmt.Errorf("compilation cache %s is not a folder", d)
		case fi.Mode().Perm()&0o022 != 0:
			return fmt.Errorf("compilation cache %s is writable by its group or by others (mode %v)", d, fi.Mode().Perm())
		case ownedByOther(fi):
			return fmt.Errorf("compilation cache %s is owned by another user", d)
		}
	}
	return nil
}
