package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/weirhost/weir/surface/jsonl"
)

// explain puts the cause a person can act on in front of an error that
// reached the command line: a full disk, a session file another process
// created meanwhile (the only file the writing commands create is the
// session log; migrate reports its own), a format-v2 session that must be
// migrated first.
func explain(err error) error {
	var ve *jsonl.VersionError
	switch {
	case errors.As(err, &ve) && ve.Importable():
		path := ve.Path
		if path == "" {
			path = "FILE"
		}
		return fmt.Errorf("%s is a format-v2 session log; convert it first with \"%s migrate %s\" "+
			"and continue with the converted file (replay, inspect and transcript read v2 files as they are)", path, prog, path)
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("the disk is full, so the session log cannot be written; free some space and run again "+
			"(what was acknowledged before is kept and resumes): %w", err)
	case errors.Is(err, syscall.EDQUOT):
		return fmt.Errorf("the disk quota is exhausted, so the session log cannot be written; free some space and run again: %w", err)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("another process created the session file first, and a session is never overwritten; "+
			"run again (a new file is chosen) or give another --session path: %w", err)
	}
	return err
}
