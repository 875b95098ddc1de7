package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
	v2 "github.com/weirhost/weir/surface/v2"
)

// loaded is a session log read for inspection.
type loaded struct {
	id           string
	log          *surface.Log
	torn         int64
	migratedFrom int
}

// loadLog reads a session file, or a session id of the configured store
// (sessions.store), for reading only. A format-v2 file is
// converted to v3 in memory; the file is never changed.
func loadLog(path string) (*loaded, error) {
	if !isSessionFile(path) {
		return loadStored(path)
	}
	ld, err := jsonl.Load(path)
	if err == nil {
		return &loaded{id: ld.Header.ID, log: ld.Log, torn: ld.Torn}, nil
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
	return &loaded{id: res.Header.ID, log: l, migratedFrom: 2}, nil
}
