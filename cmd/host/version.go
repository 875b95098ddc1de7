package cli

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
)

func init() {
	register(&command{name: "version", summary: "print the module version and VCS revision the program was built from", run: versionCmd})
}

func versionCmd(e *env, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
		return err
	}
	info, _ := debug.ReadBuildInfo()
	fmt.Fprintln(e.stdout, versionLine(info))
	return nil
}

// versionLine describes the build: "weir v1.4.0 (go1.26.8 linux/amd64)" for
// a module installed at a version, "weir (devel) revision 0123abcd…, dirty,
// 2026-12-01T10:00:00Z (…)" for a build from a checkout, where the VCS
// stamp is the only way to tell builds apart. info is nil when the binary
// carries no build information.
func versionLine(info *debug.BuildInfo) string {
	version, rev, at, dirty := "(unknown)", "", "", false
	if info != nil {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	line := prog + " " + version
	if rev != "" {
		line += " revision " + rev
		if dirty {
			line += ", dirty"
		}
		if at != "" {
			line += ", " + at
		}
	}
	return line + " (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
}
