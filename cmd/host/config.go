package cli

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/host/config"
)

func init() {
	register(&command{name: "config", summary: "print the effective configuration and where each value came from", run: configCmd})
}

// configJSON is the shape of "host config --json" (docs/config.md).
type configJSON struct {
	// File is the configuration file read, null when none.
	File *string `json:"file"`
	// Searched are the places looked at when --config was not given.
	Searched []string `json:"searched"`
	// Entries are every leaf key with its value and source.
	Entries []config.Entry `json:"entries"`
}

func configCmd(e *env, args []string) error {
	fs := flag.NewFlagSet("config", flag.ContinueOnError)
	file := fs.String("config", "", "configuration file (default: ./weir.yaml, then weir/weir.yaml in the user config folder)")
	asJSON := fs.Bool("json", false, "print JSON: {file, searched, entries: [{key, value, source: {kind, name, key}}]}")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
		return err
	}
	_, src, err := config.Load(config.Options{File: *file})
	if err != nil {
		return configError(e, "config", err)
	}
	if *asJSON {
		out := configJSON{Searched: append([]string{}, src.Searched...), Entries: src.Entries()}
		if src.File != "" {
			out.File = &src.File
		}
		return writeJSON(e.stdout, out)
	}
	if src.File != "" {
		fmt.Fprintf(e.stdout, "configuration file: %s\n\n", src.File)
	} else {
		fmt.Fprintf(e.stdout, "no configuration file (looked for %s)\n\n", strings.Join(src.Searched, ", "))
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, en := range src.Entries() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", en.Key, cell(en.Value), en.Source)
	}
	return tw.Flush()
}

// cell renders a value on one line of at most 60 characters.
func cell(v any) string {
	var s string
	switch v := v.(type) {
	case string:
		if v == "" {
			return `""`
		}
		s = v
		if strings.ContainsAny(s, "\n\t") {
			s = strconv.Quote(s)
		}
	case jsontext.Value:
		c := v.Clone()
		if err := c.Compact(); err == nil {
			v = c
		}
		s = string(v)
	default:
		s = fmt.Sprint(v)
	}
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59]) + "…"
	}
	return termLine(s)
}

// configError prints a configuration's problems on stderr, one a line, and
// returns errSilent (exit status 1), or a usage mistake (exit status 2)
// when a value a flag gave is among them: the command line must change,
// as for an unknown flag. Other errors are returned as they are.
func configError(e *env, cmd string, err error) error {
	var errs config.Errors
	if !errors.As(err, &errs) {
		return err
	}
	noun := "problems"
	if len(errs) == 1 {
		noun = "problem"
	}
	fmt.Fprintf(e.stderr, "%s %s: the configuration has %d %s:\n", prog, cmd, len(errs), noun)
	fromFlag := false
	for _, p := range errs {
		fmt.Fprintf(e.stderr, "  %s\n", termLine(p.Error()))
		fromFlag = fromFlag || p.Source.Kind == config.FromFlag
	}
	if fromFlag {
		return &exitStatus{code: 2}
	}
	return errSilent
}
