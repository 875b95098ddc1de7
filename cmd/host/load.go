package cli

import (
	winspect "github.com/weirhost/weir/host/inspect"

	"github.com/weirhost/weir/surface"
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
	ld, err := winspect.Load(path)
	if err != nil {
		return nil, err
	}
	return &loaded{id: ld.ID, log: ld.Log, torn: ld.Torn, migratedFrom: ld.MigratedFrom}, nil
}
