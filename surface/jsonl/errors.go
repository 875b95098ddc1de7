package jsonl

import (
	"errors"
	"fmt"
)

// ErrLocked is matched (errors.Is) by the error of opening a session log
// whose lock another writer holds.
var ErrLocked = errors.New("session log is locked by another writer")

// ErrNotContinuous is matched by the error of an append whose batch does not
// continue the stored log.
var ErrNotContinuous = errors.New("batch does not continue the stored log")

// ErrClosed is matched by the error of using a closed Session.
var ErrClosed = errors.New("session log is closed")

// LineError is a line of a session file that refuses the load: a complete
// line that does not parse or does not pass admission, or a torn tail that
// holds a retired v3-forbidden shape.
type LineError struct {
	Path string // the file, when known
	Line int    // 1-based line number
	Seq  int64  // the event's seq, -1 when unknown
	Torn bool   // the line is the torn tail (it lacks its newline)
	Err  error  // the cause, usually a *surface.Error
}

func (e *LineError) Error() string {
	var b []byte
	if e.Path != "" {
		b = append(b, e.Path...)
		b = append(b, ": "...)
	}
	b = fmt.Appendf(b, "line %d", e.Line)
	if e.Seq >= 0 {
		b = fmt.Appendf(b, " (seq %d)", e.Seq)
	}
	if e.Torn {
		b = append(b, " (torn tail, kept: a retired v3-forbidden shape refuses the load instead of being truncated)"...)
	}
	b = append(b, ": "...)
	b = append(b, e.Err.Error()...)
	return string(b)
}

func (e *LineError) Unwrap() error { return e.Err }

// VersionError is the error of a session file whose header names a format
// version other than [Version]. A newer version needs a newer build; version
// 2 can be converted by the v2 importer (Importable reports it); older
// versions are refused.
type VersionError struct {
	Path    string
	Version int64
}

// Importable reports whether the v2 importer can convert the file.
func (e *VersionError) Importable() bool { return e.Version == 2 }

func (e *VersionError) Error() string {
	name := e.Path
	if name == "" {
		name = "session log"
	}
	switch {
	case e.Version > Version:
		return fmt.Sprintf("%s: format version %d is newer than this build reads (version %d): upgrade weir", name, e.Version, Version)
	case e.Importable():
		return fmt.Sprintf("%s: format version 2 must be imported to version %d by the v2 importer before use", name, Version)
	default:
		return fmt.Sprintf("%s: format version %d is not supported: this build reads version %d and imports version 2", name, e.Version, Version)
	}
}

// LockedError is the error of opening a session log whose advisory lock is
// held by another writer, in this process or another.
type LockedError struct{ Path string }

func (e *LockedError) Error() string {
	return fmt.Sprintf("session log %s: another writer holds it (its lock is taken); only one writer per session", e.Path)
}

// Is matches ErrLocked.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }
