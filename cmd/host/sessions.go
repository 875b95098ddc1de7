package cli

import (
	"bytes"
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
	"github.com/weirhost/weir/host/setup"
	"github.com/weirhost/weir/host/store"
	"github.com/weirhost/weir/host/store/file"
	"github.com/weirhost/weir/host/store/postgres"
	"github.com/weirhost/weir/surface"
	"github.com/weirhost/weir/surface/jsonl"
)

func init() {
	register(&command{name: "sessions", args: "list | show ID | delete ID | release ID | expire --older-than DURATION", summary: "list the sessions of the configured store (sessions.store) or of --store, show one with its writer's lease, delete one, release a dead writer's lease, or delete those not written to for a while", run: sessionsCmd})
	register(&command{name: "export", args: "SESSION --to STORE", summary: "copy a session from the configured store to another store, events byte for byte", run: exportCmd})
	register(&command{name: "import", args: "SESSION [--from STORE]", summary: "copy a session from another store into the configured store, events byte for byte", run: importCmd})
}

// A store spec is a sessions.store value ("file", "sqlite:PATH",
// "postgres://..."), "file:DIR" for the file store of another folder, or
// the path of one session file (ending in .jsonl).
const storeSpecHelp = `"file" (sessions.dir), "file:DIR", "sqlite:PATH", "postgres://USER@HOST:PORT/DB" or a session file path ending in .jsonl`

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
	st, err := setup.OpenStore(ctx, cfg.Sessions.Store, cfg.Sessions.Dir)
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

// loadStored reads session id of the store configFile configures ("" for
// the default configuration) for inspection.
func loadStored(ref, configFile string) (*loaded, error) {
	cfg, _, err := config.Load(config.Options{File: configFile})
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	st, err := setup.OpenStore(ctx, cfg.Sessions.Store, cfg.Sessions.Dir)
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
	return setup.OpenStore(ctx, spec, cfg.Sessions.Dir)
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
	usage := fmt.Sprintf("usage: %[1]s sessions list [--json] | show ID | delete ID | release ID | expire --older-than DURATION  [--store STORE] [--config FILE]", prog)
	if len(pos) == 0 || (pos[0] == "expire") != (*olderThan > 0) {
		return usagef("%s", usage)
	}
	switch pos[0] {
	case "list", "expire":
		if len(pos) != 1 {
			return usagef("%s", usage)
		}
	case "show", "delete", "release":
		if len(pos) != 2 {
			return usagef("%s", usage)
		}
	default:
		return usagef("%s", usage)
	}
	ctx := context.Background()
	st, err := o.open(ctx, e, "sessions", *spec)
	if err != nil {
		return err
	}
	defer st.Close()
	switch pos[0] {
	case "show":
		return showSession(ctx, e, st, pos[1])
	case "delete":
		d, ok := st.(store.Deleter)
		if !ok {
			return fmt.Errorf("sessions delete: this store does not delete sessions")
		}
		if err := d.Delete(ctx, pos[1]); err != nil {
			return fmt.Errorf("sessions delete: %w", err)
		}
		fmt.Fprintln(e.stdout, "deleted", pos[1])
		return nil
	case "release":
		l, ok := st.(store.Leaser)
		if !ok {
			return fmt.Errorf("sessions release: this store has no lease to release")
		}
		lease, err := l.Lease(ctx, pos[1])
		if err != nil {
			return fmt.Errorf("sessions release: %w", err)
		}
		if err := l.Lapse(ctx, pos[1]); err != nil {
			return fmt.Errorf("sessions release: %w", err)
		}
		if !lease.Held() {
			fmt.Fprintf(e.stdout, "session %s: no writer held its lease\n", pos[1])
			return nil
		}
		fmt.Fprintf(e.stdout, "released session %s: writer %s (epoch %d) had %s of its lease left; if it is alive, its next append is refused\n",
			pos[1], lease.Holder, lease.Epoch, lease.Left.Round(time.Millisecond))
		return nil
	}
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

// showSession prints one session of st: its counts and times, and its
// writer's lease where the store has one.
func showSession(ctx context.Context, e *env, st store.Store, id string) error {
	list, err := st.List(ctx)
	if err != nil {
		return err
	}
	var info *store.Info
	for i := range list {
		if list[i].ID == id {
			info = &list[i]
		}
	}
	if info == nil {
		return fmt.Errorf("sessions show %s: %w", id, store.ErrNotFound)
	}
	stamp := func(ms int64) string {
		if ms == 0 {
			return "-"
		}
		return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
	}
	tw := tabwriter.NewWriter(e.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\nevents\t%d\ncreated\t%s\nupdated\t%s\n", info.ID, info.Events, stamp(info.CreatedAt), stamp(info.UpdatedAt))
	if l, ok := st.(store.Leaser); ok {
		lease, err := l.Lease(ctx, id)
		if err != nil {
			return err
		}
		holder := lease.Holder
		switch {
		case lease.UntilExit && holder == "":
			holder = "a process of this machine"
		case holder == "":
			holder = "-"
		}
		left := "free"
		switch {
		case lease.UntilExit:
			left = "until its writer closes the session or its process exits"
		case lease.Left > 0:
			left = lease.Left.Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "writer\t%s\n", holder)
		if lease.Epoch > 0 {
			fmt.Fprintf(tw, "epoch\t%d\n", lease.Epoch)
		}
		fmt.Fprintf(tw, "lease left\t%s\n", left)
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
	batch := o.fs.Int("batch", 1000, "events per transaction of the copy: a copy cut off keeps whole batches and resumes after them when run again")
	pos, err := parseArgs(o.fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *batch < 1 || *to == "" {
		return usagef("usage: %[1]s export SESSION --to STORE [--from STORE] [--id ID] [--batch N]", prog)
	}
	return copySession(e, o, "export", *from, *to, pos[0], *id, *batch)
}

func importCmd(e *env, args []string) error {
	o := newStoreFlags("import")
	from := o.fs.String("from", "", "the store to copy from: "+storeSpecHelp)
	to := o.fs.String("to", "", "the store to copy to instead of sessions.store: "+storeSpecHelp)
	id := o.fs.String("id", "", "the session's id in the target store (default its id in the source)")
	batch := o.fs.Int("batch", 1000, "events per transaction of the copy: a copy cut off keeps whole batches and resumes after them when run again")
	pos, err := parseArgs(o.fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *batch < 1 { // no --from: SESSION must be a file (copySource)
		return usagef("usage: %[1]s import SESSION [--from STORE] [--to STORE] [--id ID] [--batch N]", prog)
	}
	return copySession(e, o, "import", *from, *to, pos[0], *id, *batch)
}

// copySession copies session ref of store from to store to, as id (default
// the source's id): its header (every member, unknown ones included) and
// its events, byte for byte. Every event is admitted on the way, so only a
// valid log is copied. The target session must not exist, or hold a
// prefix of the source's events, byte for byte: a copy cut off (killed,
// or its connection lost) resumes where it stopped when run again. The
// copy is read back and compared before the command succeeds.
func copySession(e *env, o *storeFlags, name, from, to, ref, id string, batch int) error {
	ctx, _, stop := interrupts(e)
	defer stop()
	src, check, err := o.copySource(ctx, e, name, from, ref)
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
	if err := check(info); err != nil {
		return err
	}
	if id == "" {
		id = info.ID
	}
	have := 0
	w, err := dst.Open(ctx, id, store.OpenOptions{Create: true, CreatedAt: info.CreatedAt, Header: info.Header}, func(ev surface.Event) error {
		if have >= len(evs) || !bytes.Equal(surface.AppendEvent(nil, &ev), surface.AppendEvent(nil, &evs[have])) {
			return fmt.Errorf("%s: the target's session %s holds other events than the source's (seq %d differs); refusing to copy over them", name, id, ev.Seq)
		}
		have++
		return nil
	})
	if err != nil {
		return err
	}
	if have > 0 {
		fmt.Fprintf(e.stdout, "session %s already holds the first %d events of the source; resuming the copy\n", id, have)
	}
	for i := have; i < len(evs); i += batch {
		if err := w.Append(ctx, evs[i:min(i+batch, len(evs))]); err != nil {
			w.Close()
			return fmt.Errorf("%s: write %s: %w", name, id, err)
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	n := 0
	got, err := dst.Load(ctx, id, func(ev surface.Event) error {
		if n >= len(evs) || string(surface.AppendEvent(nil, &ev)) != string(surface.AppendEvent(nil, &evs[n])) {
			return fmt.Errorf("%s: the copy differs from the source at seq %d", name, ev.Seq)
		}
		n++
		return nil
	})
	if err == nil && n != len(evs) {
		err = fmt.Errorf("%s: the copy holds %d events, the source %d", name, n, len(evs))
	}
	if err == nil {
		err = sameHeader(name, info, got)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "copied session %s (%d events) as %s; header and events read back byte for byte\n", info.ID, len(evs), id)
	return nil
}

// sameHeader compares the header of a copy with its source's, every member
// but the id (a copy may take another), byte for byte.
func sameHeader(name string, src, dst store.Info) error {
	line := func(i store.Info) ([]byte, error) {
		h := jsonl.Header{}
		if i.Header != nil {
			h = *i.Header
		}
		h.ID, h.CreatedAt = "-", i.CreatedAt
		return jsonl.MarshalHeader(h)
	}
	a, err := line(src)
	if err != nil {
		return fmt.Errorf("%s: the source's header: %w", name, err)
	}
	b, err := line(dst)
	if err != nil {
		return fmt.Errorf("%s: the copy's header: %w", name, err)
	}
	if !bytes.Equal(a, b) {
		return fmt.Errorf("%s: the copy's header differs from the source's:\n source %s\n copy   %s", name, a, b)
	}
	return nil
}
