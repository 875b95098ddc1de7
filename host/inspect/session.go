// Package inspect is Weir's read-only session inspector: it reads session
// logs and serves them as web pages (sessions, trajectory, requests,
// tokens over time) with the JSON endpoints behind them, and it classifies
// system-prompt events for every consumer (the terminal printer, host
// inspect and the web view). Nothing here writes a session.
package inspect

import (
	"errors"
	"fmt"
	"os"

	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
	v2 "github.com/weirhost/weir/surface/v2"
)

// Session is a session log read for inspection.
type Session struct {
	ID           string
	Path         string
	Log          *surface.Log
	Torn         int64
	MigratedFrom int
	// Size is the length of the file's complete lines: the bytes read.
	Size int64
}

// Load reads a session file for reading only. A format-v2 file is
// converted to v3 in memory; the file is never changed.
func Load(path string) (*Session, error) {
	ld, err := jsonl.Load(path)
	if err == nil {
		return &Session{ID: ld.Header.ID, Path: path, Log: ld.Log, Torn: ld.Torn, Size: ld.Size}, nil
	}
	var ve *jsonl.VersionError
	if !errors.As(err, &ve) || !ve.Importable() {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res, err := v2.Convert(f)
	if err != nil {
		return nil, fmt.Errorf("%s is a format-v2 log that cannot be converted: %w", path, err)
	}
	l, err := surface.Restore(res.Events)
	if err != nil {
		return nil, fmt.Errorf("%s: the converted log does not load: %w", path, err)
	}
	return &Session{ID: res.Header.ID, Path: path, Log: l, MigratedFrom: 2}, nil
}
