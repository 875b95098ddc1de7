package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/host/store/file"
	"github.com/weirhost/weir/host/store/postgres"
	"github.com/weirhost/weir/host/store/sqlite"
	"github.com/weirhost/weir/surface"
)

func init() {
	register(&command{name: "sessions", args: "list | expire --older-than DURATION", summary: "list the sessions of the configured store (sessions.store) or of --store, or delete those not written to for a while", run: sessionsCmd})
	register(&command{name: "export", args: "SESSION --to STORE", summary: "copy a session from the configured store to another store, events byte for byte", run: exportCmd})
	register(&command{name: "import", args: "SESSION --from STORE", summary: "copy a session from another store into the configured store, events byte for byte", run: importCmd})
}

// A store spec is a sessions.store value ("file", "sqlite:PATH",
// "postgres://..."), "file:DIR" for the file store of another folder, or
// the path of one session file (ending in .jsonl).
const storeSpecHelp = `"file" (sessions.dir), "file:DIR", "sqlite:PATH", "postgres://USER@HOST:PORT/DB" or a session file path ending in .jsonl`

// openStore opens the store a spec names; dir is sessions.dir.
func openStore(ctx context.Context, spec, dir string) (store.Store, error) {
	switch {
	case spec == "" || spec == "file":
		return file.Dir(dir), nil
	case strings.HasPrefix(spec, "file:"):
		return file.Dir(strings.TrimPrefix(spec, "file:")), nil
	case strings.HasSuffix(spec, file.Ext) && !strings.Contains(spec, "://"):
		return file.Single(spec), nil
	}
	if why := config.StoreProblem(spec); why != "" {
		return nil, fmt.Errorf("store: %s", why)
	}
	if strings.HasPrefix(spec, "sqlite:") {
		return sqlite.Open(ctx, strings.TrimPrefix(spec, "sqlite:"))
	}
	return postgres.Open(ctx, spec, postgres.Password(postgres.PasswordEnv))
}

// isSessionFile says whether a command's SESSION argument names a file
// rather than a session id of the configured store: it exists as a file,
// holds a path separator or ends in .jsonl.
func isSessionFile(ref string) bool {
	if strings.ContainsRune(ref, os.PathSeparator) || strings.ContainsRune(ref, '/') || strings.HasSuffix(ref, file.Ext) {
		return true
	}
	st, err := os.Stat(ref)
	return err == nil && !st.IsDir()
}

// openSession opens SESSION for writing: a session file, or a session id in
// the configured store. With mustExist, a session that does not exist is
// an error; otherwise it is created. release closes the session (flushing
// it) and the store.
func openSession(cfg *config.Config, ref string, mustExist bool, opts ...host.SessionOption) (s *host.Session, release func() error, err error) {
	if isSessionFile(ref) {
		if mustExist {
			if _, err := os.Stat(ref); err != nil {
				return nil, nil, err
			}
		}
		s, err := host.OpenFile(ref, opts...)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	}
	ctx := context.Background()
	st, err := openStore(ctx, cfg.Sessions.Store, cfg.Sessions.Dir)
	if err != nil {
		return nil, nil, err
	}
	if mustExist {
		opts = append(opts, host.Existing())
	}
	s, err = host.Open(ctx, st, ref, opts...)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return s, func() error { return errors.Join(s.Close(), st.Close()) }, nil
}

// newStoredSession creates a new session in the configured store: a new
// file under sessions.dir for the file store (as before), a fresh id in
// any other store. name is the file or the id, for messages.
func newStoredSession(cfg *config.Config) (s *host.Session, release func() error, name string, err error) {
	if cfg.Sessions.Store == "" || cfg.Sessions.Store == "file" {
		path, err := newSessionPath(cfg.Sessions.Dir, "")
		if err != nil {
			return nil, nil, "", err
		}
		s, release, err := openSession(cfg, path, false)
		return s, release, path, err
	}
	s, release, err = openSession(cfg, "", false)
	if err != nil {
		return nil, nil, "", err
	}
	return s, release, s.ID(), nil
}

// loadStored reads session id of the configured store for inspection.
func loadStored(ref string) (*loaded, error) {
	cfg, _, err := config.Load(config.Options{})
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	st, err := openStore(ctx, cfg.Sessions.Store, cfg.Sessions.Dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	l := surface.New()
	info, err := st.Load(ctx, ref, l.Admit)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%s: no such session file, and no session of that id in the store %q: %w", ref, storeName(cfg.Sessions.Store), fs.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	return &loaded{id: info.ID, log: l}, nil
}

func storeName(spec string) string {
	if strings.Contains(spec, "://") {
		return postgres.Redact(spec)
	}
	return spec
}

type storeFlags struct {
	fs         *flag.FlagSet
	configFile string
}

func newStoreFlags(name string) *storeFlags {
	o := &storeFlags{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	o.fs.StringVar(&o.configFile, "config", "", "configuration file (default ./weir.yaml, then weir/weir.yaml in the user config folder)")
	return o
}

func (o *storeFlags) open(ctx context.Context, e *env, name, spec string) (store.Store, error) {
	cfg, _, err := config.Load(config.Options{File: o.configFile})
	if err != nil {
		return nil, configError(e, name, err)
	}
	if spec == "" {
		spec = cfg.Sessions.Store
	}
	return openStore(ctx, spec, cfg.Sessions.Dir)
}

func sessionsCmd(e *env, args []string) error {
	o := newStoreFlags("sessions")
	spec := o.fs.String("store", "", "the store to list instead of sessions.store: "+storeSpecHelp)
	olderThan := o.fs.Duration("older-than", 0, "expire: delete the sessions not appended to for this long (and whose lease no writer holds)")
	asJSON := o.fs.Bool("json", false, "list: print a JSON array of {id, events, createdAt, updatedAt}")
	pos, err := parseArgs(o.fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || (pos[0] != "list" && pos[0] != "expire") || (pos[0] == "expire") != (*olderThan > 0) {
		return usagef("usage: %[1]s sessions list [--store STORE] | %[1]s sessions expire --older-than DURATION [--store STORE]", prog)
	}
	ctx := context.Background()
	st, err := o.open(ctx, e, "sessions", *spec)
	if err != nil {
		return err
	}
	defer st.Close()
	if pos[0] == "expire" {
		ex, ok := st.(store.Expirer)
		if !ok {
			return fmt.Errorf("sessions expire: this store does not expire sessions (the file store keeps one file per session: delete the files)")
		}
		ids, err := ex.Expire(ctx, time.Now().Add(-*olderThan))
		if err != nil {
			return err
		}
		for _, id := range ids {
			fmt.Fprintln(e.stdout, "expired", id)
		}
		fmt.Fprintf(e.stdout, "%d session(s) expired\n", len(ids))
		return nil
	}
	list, err := st.List(ctx)
	if err != nil {
		return err
	}
	iso := func(ms int64) string {
		if ms == 0 {
			return ""
		}
		return time.UnixMilli(ms).UTC().Format(time.RFC3339)
	}
	stamp := func(ms int64) string {
		if ms == 0 {
			return "-"
		}
		return iso(ms)
	}
	if *asJSON {
		out := make([]sessionJSON, 0, len(list))
		for _, i := range list {
			out = append(out, sessionJSON{ID: i.ID, Events: i.Events, CreatedAt: iso(i.CreatedAt), UpdatedAt: iso(i.UpdatedAt)})
		}
		return writeJSON(e.stdout, out)
	}
	tw := tabwriter.NewWriter(e.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEVENTS\tCREATED\tUPDATED")
	for _, i := range list {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", i.ID, i.Events, stamp(i.CreatedAt), stamp(i.UpdatedAt))
	}
	return tw.Flush()
}

// sessionJSON is one entry of "weir sessions list --json"; a time the
// store does not know is left out.
type sessionJSON struct {
	ID        string `json:"id"`
	Events    int64  `json:"events"`
	CreatedAt string `json:"createdAt,omitzero"`
	UpdatedAt string `json:"updatedAt,omitzero"`
}

func exportCmd(e *env, args []string) error {
	o := newStoreFlags("export")
	from := o.fs.String("from", "", "the store to copy from instead of sessions.store: "+storeSpecHelp)
	to := o.fs.String("to", "", "the store to copy to: "+storeSpecHelp)
	id := o.fs.String("id", "", "the session's id in the target store (default its id in the source)")
	pos, err := parseArgs(o.fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *to == "" {
		return usagef("usage: %[1]s export SESSION --to STORE [--from STORE] [--id ID]", prog)
	}
	return copySession(e, o, "export", *from, *to, pos[0], *id)
}

func importCmd(e *env, args []string) error {
	o := newStoreFlags("import")
	from := o.fs.String("from", "", "the store to copy from: "+storeSpecHelp)
	to := o.fs.String("to", "", "the store to copy to instead of sessions.store: "+storeSpecHelp)
	id := o.fs.String("id", "", "the session's id in the target store (default its id in the source)")
	pos, err := parseArgs(o.fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *from == "" {
		return usagef("usage: %[1]s import SESSION --from STORE [--to STORE] [--id ID]", prog)
	}
	return copySession(e, o, "import", *from, *to, pos[0], *id)
}

// copySession copies session ref of store from to store to, as id (default
// the source's id), byte for byte. Every event is admitted on the way, so
// only a valid log is copied; the target session must not exist or be
// empty. The copy is read back and compared before the command succeeds.
func copySession(e *env, o *storeFlags, name, from, to, ref, id string) error {
	ctx, _, stop := interrupts(e)
	defer stop()
	src, err := o.open(ctx, e, name, from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := o.open(ctx, e, name, to)
	if err != nil {
		return err
	}
	defer dst.Close()
	var evs []surface.Event
	l := surface.New()
	info, err := src.Load(ctx, ref, func(ev surface.Event) error {
		if err := l.Admit(ev); err != nil {
			return err
		}
		evs = append(evs, ev)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: read %s: %w", name, ref, err)
	}
	if id == "" {
		id = info.ID
	}
	w, err := dst.Open(ctx, id, store.OpenOptions{Create: true, CreatedAt: info.CreatedAt}, func(surface.Event) error {
		return fmt.Errorf("%s: the target already holds events of session %s; refusing to copy over them", name, id)
	})
	if err != nil {
		return err
	}
	for i := 0; i < len(evs); i += 1000 {
		if err := w.Append(ctx, evs[i:min(i+1000, len(evs))]); err != nil {
			w.Close()
			return fmt.Errorf("%s: write %s: %w", name, id, err)
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	n := 0
	_, err = dst.Load(ctx, id, func(ev surface.Event) error {
		if n >= len(evs) || string(surface.AppendEvent(nil, &ev)) != string(surface.AppendEvent(nil, &evs[n])) {
			return fmt.Errorf("%s: the copy differs from the source at seq %d", name, ev.Seq)
		}
		n++
		return nil
	})
	if err == nil && n != len(evs) {
		err = fmt.Errorf("%s: the copy holds %d events, the source %d", name, n, len(evs))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "copied session %s (%d events) as %s; read back byte for byte\n", info.ID, len(evs), id)
	return nil
}
