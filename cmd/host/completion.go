package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

func init() {
	register(&command{name: "completion", args: "bash|zsh|fish", summary: "print a shell completion script for commands and their flags", run: completionCmd})
}

func completionCmd(e *env, args []string) error {
	fs := flag.NewFlagSet("completion", flag.ContinueOnError)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("usage: %s completion bash|zsh|fish", prog)
	}
	cmds := completions()
	switch pos[0] {
	case "bash":
		bashCompletion(e.stdout, cmds)
	case "zsh":
		zshCompletion(e.stdout, cmds)
	case "fish":
		fishCompletion(e.stdout, cmds)
	default:
		return usagef("unknown shell %q: completion is written for bash, zsh and fish", pos[0])
	}
	return nil
}

// completion is what a shell completes for one command.
type completion struct {
	name, summary string
	flags         []flagCompletion
}

type flagCompletion struct{ name, usage string }

// completions lists the commands and their flags. A command's flags are
// those its help shows: the command is asked for its help (-h), which
// every command answers before it reads a file or the configuration.
func completions() []completion {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []completion
	for _, n := range names {
		c := commands[n]
		cp := completion{name: n, summary: c.summary}
		var hr *helpRequest
		if err := c.run(&env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}, []string{"-h"}); errors.As(err, &hr) && hr.fs != nil {
			hr.fs.VisitAll(func(f *flag.Flag) {
				usage, _, _ := strings.Cut(f.Usage, "\n")
				cp.flags = append(cp.flags, flagCompletion{name: f.Name, usage: usage})
			})
		}
		out = append(out, cp)
	}
	return out
}

// fn is the shell function name the scripts define, from the program's
// name.
func completionFunc() string {
	return "_" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, prog)
}

func bashCompletion(w io.Writer, cmds []completion) {
	fn := completionFunc()
	var names []string
	for _, c := range cmds {
		names = append(names, c.name)
	}
	fmt.Fprintf(w, "# bash completion for %[1]s: eval \"$(%[1]s completion bash)\"\n", prog)
	fmt.Fprintf(w, "%s() {\n", fn)
	fmt.Fprintf(w, "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" flags=\"\"\n")
	fmt.Fprintf(w, "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n    COMPREPLY=($(compgen -W %q -- \"$cur\"))\n    return\n  fi\n", strings.Join(names, " "))
	fmt.Fprintf(w, "  case \"${COMP_WORDS[1]}\" in\n")
	for _, c := range cmds {
		var fl []string
		for _, f := range c.flags {
			fl = append(fl, "--"+f.name)
		}
		fmt.Fprintf(w, "    %s) flags=%q ;;\n", c.name, strings.Join(fl, " "))
	}
	fmt.Fprintf(w, "  esac\n")
	fmt.Fprintf(w, "  if [[ \"$cur\" == -* ]]; then\n    COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n  else\n    COMPREPLY=($(compgen -f -- \"$cur\"))\n  fi\n}\n")
	fmt.Fprintf(w, "complete -o filenames -F %s %s\n", fn, prog)
}

func zshCompletion(w io.Writer, cmds []completion) {
	fn := completionFunc()
	fmt.Fprintf(w, "#compdef %s\n# zsh completion for %[1]s: %[1]s completion zsh > \"${fpath[1]}/_%[1]s\"\n", prog)
	fmt.Fprintf(w, "%s() {\n  local -a cmds\n  cmds=(\n", fn)
	for _, c := range cmds {
		fmt.Fprintf(w, "    %s\n", zshQuote(c.name+":"+c.summary))
	}
	fmt.Fprintf(w, "  )\n  if (( CURRENT == 2 )); then\n    _describe command cmds\n    return\n  fi\n  case $words[2] in\n")
	for _, c := range cmds {
		fmt.Fprintf(w, "    %s)\n      _arguments", c.name)
		for _, f := range c.flags {
			fmt.Fprintf(w, " %s", zshQuote("--"+f.name+"["+zshBrackets(f.usage)+"]"))
		}
		fmt.Fprintf(w, " '*:file:_files' ;;\n")
	}
	fmt.Fprintf(w, "  esac\n}\n%s \"$@\"\n", fn)
}

func fishCompletion(w io.Writer, cmds []completion) {
	fmt.Fprintf(w, "# fish completion for %[1]s: %[1]s completion fish > ~/.config/fish/completions/%[1]s.fish\n", prog)
	for _, c := range cmds {
		fmt.Fprintf(w, "complete -c %s -f -n __fish_use_subcommand -a %s -d %s\n", prog, c.name, fishQuote(c.summary))
	}
	for _, c := range cmds {
		for _, f := range c.flags {
			fmt.Fprintf(w, "complete -c %s -n %s -l %s -d %s\n", prog, fishQuote("__fish_seen_subcommand_from "+c.name), f.name, fishQuote(f.usage))
		}
	}
}

// zshQuote and fishQuote quote a word in single quotes for the shell.
func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

// zshBrackets escapes what ends or nests an _arguments description.
func zshBrackets(s string) string {
	return strings.NewReplacer("[", `\[`, "]", `\]`, ":", `\:`).Replace(s)
}
