package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/host/store/file"
)

// copySource opens the store export and import read session ref from,
// under the rule every command follows for a SESSION argument: a ref that
// exists as a file, holds a "/" or ends in .jsonl is a session file,
// anything else a session id.
//
//   - With no --from, a session file is read as it is (never as the id
//     "demo.jsonl" of the configured store); an id is of the configured
//     store for export, and a usage mistake for import, which needs a
//     store to import from.
//   - With --from FILE.jsonl, ref must name that session: the same file,
//     or the id its header holds (check, after the load, says which).
//   - With --from another store, ref must be an id of that store: a
//     session file there is a usage mistake, not silently another session.
func (o *storeFlags) copySource(ctx context.Context, e *env, name, from, ref string) (src store.Store, check func(store.Info) error, err error) {
	none := func(store.Info) error { return nil }
	isFile := isSessionFile(ref)
	switch {
	case from == "" && isFile:
		return file.Single(ref), none, nil
	case from == "" && name == "import":
		return nil, nil, usagef("import %s: give the store to import from with --from STORE, or SESSION as a session file (a path, or a name ending in %s)", ref, file.Ext)
	case from == "":
		src, err := o.open(ctx, e, name, "")
		return src, none, err
	case strings.HasSuffix(from, file.Ext) && !strings.Contains(from, "://"):
		if isFile {
			if !sameFile(from, ref) {
				return nil, nil, usagef("%s is a session file and --from names another, %s: give one of them", ref, from)
			}
			return file.Single(from), none, nil
		}
		return file.Single(from), func(info store.Info) error {
			if info.ID != ref {
				return usagef("--from %s holds session %s, not %s: give its id, or the file itself", from, info.ID, ref)
			}
			return nil
		}, nil
	case isFile:
		return nil, nil, usagef("%s is a session file, but --from names the store %s: give a session id of that store, or leave out --from to copy the file", ref, storeName(from))
	}
	src, err = o.open(ctx, e, name, from)
	return src, none, err
}

// sameFile reports whether paths a and b name one file: the same file on
// disk, or, when either is missing, the same clean path.
func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(fa, fb)
	}
	return filepath.Clean(a) == filepath.Clean(b)
}
