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
// (sessions.store of the configuration file configFile, "" for the
// default), for reading only. A format-v2 file is converted to v3 in
// memory; the file is never changed.
func loadLog(path, configFile string) (*loaded, error) {
	if !isSessionFile(path) {
		return loadStored(path, configFile)
	}
	ld, err := winspect.Load(path)
	if err != nil {
		return nil, err
	}
	return &loaded{id: ld.ID, log: ld.Log, torn: ld.Torn, migratedFrom: ld.MigratedFrom}, nil
}
