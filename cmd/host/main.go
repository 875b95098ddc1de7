// Package cli is Weir's command-line interface, the program installed as
// weir (cmd/weir is its main): it runs agent sessions (demo, run), inspects
// session logs (replay, request, inspect, transcript), maintains them
// (compact, migrate) and checks plugins and tokenizers.
//
// Usage:
//
//	weir <command> [flags] [args]
//
// Flags may stand before or after the arguments; "--" ends the flags. Run
// "weir help" for the list of commands and "weir <command> -h" for one
// command's flags. Every message names the program as it was invoked
// (the base name of os.Args[0]), so a binary built under another name
// speaks of itself by that name.
//
// The package lives at cmd/host, the path the design names for the host's
// command line; it is a library so that the installed binary can be called
// weir, which shadows no system tool (a binary called host would shadow
// the DNS lookup tool of the same name).
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
)

// command is one subcommand.
type command struct {
	name string
	// args are the positional arguments, as help shows them ("FILE",
	// "[PROMPT...]"); "" when the command takes none.
	args    string
	summary string
	run     func(env *env, args []string) error
}

// env is what a command writes to; tests substitute buffers.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// compiling says "compiling plugins…" once per command, however many
	// hosts it loads (eval's sets load theirs at once).
	compiling sync.Once
}

// usageError is a command-line mistake: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// usageExit ends a command whose command line was wrong, once its message
// is printed: it points at the command's help and returns exit status 2.
// Every usage mistake ends here, a bad flag value the configuration
// rejects as much as an unknown flag.
func usageExit(e *env, cmd string) int {
	fmt.Fprintf(e.stderr, "run \"%s %s -h\" for its usage\n", prog, cmd)
	return 2
}

// helpRequest is returned for -h or --help: the command's help goes to
// standard output and the exit status is 0.
type helpRequest struct{ fs *flag.FlagSet }

func (h *helpRequest) Error() string { return "help requested" }

// exitStatus ends the command with a status of its own after its message
// (if any) was printed.
type exitStatus struct {
	code int
	msg  string
}

func (e *exitStatus) Error() string { return e.msg }

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// prog is the name messages, help and trailers give the program: the
// base name it was invoked as (Main sets it), "weir" until then.
var prog = "weir"

// Main runs the command line of the process (os.Args) with its standard
// streams and returns the exit status: 0 on success, 1 when the command
// failed, 2 for a command-line mistake, 130 when interrupted.
func Main() int {
	if len(os.Args) > 0 {
		if name := filepath.Base(os.Args[0]); name != "" && name != "." && name != string(filepath.Separator) {
			prog = strings.TrimSuffix(name, ".exe")
		}
	}
	var stderr io.Writer = os.Stderr
	if isTerminal(os.Stderr) {
		stderr = newStatus(os.Stderr) // a status line for long waits (progress.go)
	}
	return run(&env{stdin: os.Stdin, stdout: os.Stdout, stderr: stderr}, os.Args[1:])
}

// run executes a command line and returns the exit status.
func run(e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		printHelp(e.stdout)
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = []string{"version"}
	}
	if args[0] == "help" {
		if len(args) == 1 {
			printHelp(e.stdout)
			return 0
		}
		c, ok := commands[args[1]]
		if !ok || len(args) > 2 {
			fmt.Fprintf(e.stderr, "%[1]s help: unknown command %[2]q; run \"%[1]s help\" for the list\n", prog, strings.Join(args[1:], " "))
			return 2
		}
		args = []string{c.name, "-h"}
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "%[1]s: unknown command %[2]q; run \"%[1]s help\" for the list\n", prog, args[0])
		return 2
	}
	err := runWithTelemetry(e, c, args[1:])
	if err == nil {
		return 0
	}
	var (
		ue *usageError
		hr *helpRequest
		xs *exitStatus
	)
	switch {
	case errors.As(err, &hr):
		printCommandHelp(e.stdout, c, hr.fs)
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(e.stderr, "%s %s: %s\n", prog, c.name, termSafe(err.Error()))
		return usageExit(e, c.name)
	case errors.As(err, &xs):
		if xs.msg != "" {
			fmt.Fprintf(e.stderr, "%s %s: %s\n", prog, c.name, termSafe(xs.msg))
		}
		if xs.code == 2 {
			return usageExit(e, c.name)
		}
		return xs.code
	case errors.Is(err, errSilent):
		return 1
	}
	fmt.Fprintf(e.stderr, "%s %s: %s\n", prog, c.name, termSafe(explain(err).Error()))
	return 1
}

// errSilent is returned by a command that already reported its failure.
var errSilent = errors.New("failed")

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "Weir: a plugin host for LLM agent loops.")
	fmt.Fprintf(w, "\nUsage: %s <command> [flags] [args]\n\nCommands:\n", prog)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, n := range names {
		c := commands[n]
		fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimSpace(c.name+" "+c.args), c.summary)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nFlags may stand before or after the arguments; \"--\" ends the flags.")
	fmt.Fprintf(w, "Run \"%[1]s <command> -h\" (or \"%[1]s help <command>\") for a command's flags.\n", prog)
}

// printCommandHelp prints one command's usage, summary and flags.
func printCommandHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	name := c.name
	if fs != nil && strings.HasPrefix(fs.Name(), c.name+" ") {
		name = fs.Name()
	}
	usage := prog + " " + name
	hasFlags := false
	if fs != nil {
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	}
	if hasFlags {
		usage += " [flags]"
	}
	if c.args != "" && name == c.name {
		usage += " " + c.args
	}
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", usage, c.summary)
	if hasFlags {
		fmt.Fprintln(w, "\nFlags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}

// parseArgs parses a command line whose flags may stand before or after
// the positional arguments: it parses flags, collects the next positional
// argument, and goes on; "--" ends the flags, everything after it is
// positional. -h and --help return a *helpRequest.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var pos []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			return nil, &helpRequest{fs: fs}
		}
		if err != nil {
			return nil, usagef("%s", flagError(err, args))
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if endedByTerminator(fs, args, rest) {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// endedByTerminator reports whether fs.Parse(args) stopped at "--" rather
// than at the positional argument rest[0].
func endedByTerminator(fs *flag.FlagSet, args, rest []string) bool {
	i := len(args) - len(rest) - 1 // the argument before rest
	if i < 0 || args[i] != "--" {
		return false
	}
	// "--" may be the value of a preceding flag that takes one ("-x --").
	if i > 0 {
		if prev := args[i-1]; strings.HasPrefix(prev, "-") && prev != "-" && prev != "--" && !strings.Contains(prev, "=") {
			if f := fs.Lookup(strings.TrimLeft(prev, "-")); f != nil && !isBoolFlag(f) {
				return false
			}
		}
	}
	return true
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// flagError rewords the flag package's errors so they name the flag as
// the user typed it in args ("--jsn", not the package's "-jsn").
func flagError(err error, args []string) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		// name is "-jsn" whether "-jsn" or "--jsn" was typed.
		for _, a := range args {
			if typed, _, _ := strings.Cut(a, "="); typed == name || typed == "-"+name {
				return "unknown flag " + typed
			}
		}
		return "unknown flag " + name
	}
	return msg
}

// noArgs refuses positional arguments of a command that takes none.
func noArgs(pos []string) error {
	if len(pos) > 0 {
		return usagef("unexpected argument %q: the command takes only flags", pos[0])
	}
	return nil
}
