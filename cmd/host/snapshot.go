package cli

import (
	"errors"
	"flag"
	"fmt"

	"github.com/weirhost/weir/host/snapshot"
)

func init() {
	register(&command{name: "snapshot", args: "SESSION DIR", summary: "write (or --check) the normalised wire requests of a session: what the model sees, for review and diffing", run: snapshotCmd})
}

func snapshotCmd(e *env, args []string) error {
	fs := flag.NewFlagSet("snapshot", flag.ContinueOnError)
	check := fs.Bool("check", false, "compare with the snapshot in DIR instead of writing it; exit 1 with a diff when what the model sees changed")
	configFile := fs.String("config", "", "the configuration whose sessions.store holds SESSION when it is a session id (default ./weir.yaml, then weir/weir.yaml in the user config folder)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("usage: %[1]s snapshot [--check] [--config FILE] SESSION DIR", prog)
	}
	ld, err := loadLog(pos[0], *configFile)
	if err != nil {
		return err
	}
	if ld.log.BaseSeq() != 0 {
		return fmt.Errorf("%s is a seeded log starting at seq %d: a snapshot needs every request, from seq 0", pos[0], ld.log.BaseSeq())
	}
	snap, err := snapshot.Build(ld.log.Events())
	if err != nil {
		return err
	}
	if *check {
		err := snap.Check(pos[1])
		var me *snapshot.MismatchError
		if errors.As(err, &me) {
			fmt.Fprint(e.stdout, termSafe(me.Diff))
			return &exitStatus{code: 1, msg: fmt.Sprintf("%s: what the model sees changed (%d changed, %d new, %d gone files; diff above); rewrite the snapshot with \"%s snapshot %s %s\" if the change is intended",
				pos[1], len(me.Changed), len(me.Added), len(me.Removed), prog, pos[0], pos[1])}
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s: %s: unchanged\n", pos[1], snapshotCounts(snap))
		return nil
	}
	if err := snap.Write(pos[1]); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s: %s written\n", pos[1], snapshotCounts(snap))
	return nil
}

// snapshotCounts says what a snapshot holds: "8 requests, 2 prompt
// versions, 1 header pin".
func snapshotCounts(snap *snapshot.Snapshot) string {
	return counted(len(snap.Requests), "request", "requests") + ", " +
		counted(len(snap.Prompts), "prompt version", "prompt versions") + ", " +
		counted(len(snap.Pins), "header pin", "header pins")
}

// counted is "1 thing" or "n things".
func counted(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
