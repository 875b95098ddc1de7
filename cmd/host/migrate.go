package cli

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v2 "github.com/weirhost/weir/surface/v2"
)

func init() {
	register(&command{name: "migrate", args: "IN [OUT]", summary: "convert a format-v2 session log to format v3", run: migrateCmd})
}

func migrateCmd(e *env, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	force := fs.Bool("force", false, "overwrite OUT when it exists")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		return usagef("usage: %[1]s migrate [--force] IN [OUT]", prog)
	}
	in := pos[0]
	out := strings.TrimSuffix(in, ".jsonl") + ".v3.jsonl"
	if len(pos) == 2 {
		out = pos[1]
	}
	if st, err := os.Stat(out); err == nil {
		switch {
		case st.IsDir():
			return fmt.Errorf("%s is a folder, not a file: give the path of the converted log, e.g. %s", out,
				filepath.Join(out, strings.TrimSuffix(filepath.Base(in), ".jsonl")+".v3.jsonl"))
		case !*force:
			return fmt.Errorf("%s already exists; pass --force to replace it, or give another OUT", out)
		}
	}
	var opts []v2.FileOption
	if *force {
		opts = append(opts, v2.Overwrite())
	}
	if err := v2.ConvertFile(in, out, opts...); err != nil {
		if v2.CaseOf(err) == v2.CaseOutput && !*force && strings.Contains(err.Error(), "already exists") {
			return fmt.Errorf("%s already exists (it was created meanwhile); pass --force to replace it, or give another OUT", out)
		}
		return err
	}
	fmt.Fprintf(e.stdout, "converted %s (format v2) to %s (format v3); the input is unchanged\n", in, out)
	return nil
}
