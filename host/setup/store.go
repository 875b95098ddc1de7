package setup

import (
	"context"
	"fmt"
	"strings"

	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/host/store/file"
	"github.com/weirhost/weir/host/store/postgres"
	"github.com/weirhost/weir/host/store/sqlite"
)

// OpenStore opens the session store a sessions.store setting names, with
// dir the sessions.dir setting:
//
//   - "" or "file": one file per session under dir (file.Dir);
//   - "file:DIR": the same, under DIR;
//   - "sqlite:PATH": the SQLite database at PATH;
//   - "postgres://USER@HOST:PORT/DB": a PostgreSQL database, its password
//     read from the environment variable postgres.PasswordEnv (a password
//     in the URL is refused);
//   - a path ending in .jsonl: that one session file (file.Single).
//
// A spec config.StoreProblem refuses is an error naming why. The caller
// closes the store once its sessions are closed.
func OpenStore(ctx context.Context, spec, dir string) (store.Store, error) {
	switch {
	case spec == "" || spec == "file":
		return file.Dir(dir), nil
	case strings.HasPrefix(spec, "file:"):
		return file.Dir(strings.TrimPrefix(spec, "file:")), nil
	case strings.HasSuffix(spec, file.Ext) && !strings.Contains(spec, "://"):
		return file.Single(spec), nil
	}
	if why := config.StoreProblem(spec); why != "" {
		return nil, fmt.Errorf("sessions.store: %s", why)
	}
	if path, ok := strings.CutPrefix(spec, "sqlite:"); ok {
		return sqlite.Open(ctx, path)
	}
	return postgres.Open(ctx, spec, postgres.Password(postgres.PasswordEnv))
}

// OpenSessionStore opens the store cfg's sessions.store and sessions.dir
// settings name (see OpenStore).
func OpenSessionStore(ctx context.Context, cfg *config.Config) (store.Store, error) {
	return OpenStore(ctx, cfg.Sessions.Store, cfg.Sessions.Dir)
}
