// Command host is Weir's command-line interface: it runs agent sessions
// (demo, run), inspects session logs (replay, request, inspect, transcript),
// maintains them (compact, migrate) and checks plugins and tokenizers.
//
// Usage:
//
//	host <command> [flags] [args]
//
// Run "host help" for the list of commands.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(env *env, args []string) error
}

// env is what a command writes to; tests substitute buffers.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// usageError is a command-line mistake: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

func main() {
	os.Exit(run(&env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:]))
}

// run executes a command line and returns the exit status.
func run(e *env, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printHelp(e.stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "host: unknown command %q; run \"host help\" for the list\n", args[0])
		return 2
	}
	err := c.run(e, args[1:])
	if err == nil {
		return 0
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(e.stderr, "host %s: %v\n", c.name, err)
		return 2
	}
	if errors.Is(err, errSilent) {
		return 1
	}
	fmt.Fprintf(e.stderr, "host %s: %v\n", c.name, err)
	return 1
}

// errSilent is returned by a command that already reported its failure.
var errSilent = errors.New("failed")

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "Weir: a plugin host for LLM agent loops.")
	fmt.Fprintln(w, "\nUsage: host <command> [flags] [args]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-11s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun \"host <command> -h\" for a command's flags.")
}
