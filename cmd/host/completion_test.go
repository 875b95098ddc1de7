package cli

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBashCompletionCompletes sources the bash script in a real bash and
// asks it what it completes: commands at the first word, a command's own
// flags after it.
func TestBashCompletionCompletes(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	require.NoError(t, err, "the test needs bash")
	dir := t.TempDir()
	r := runHost(t, dir, "", "completion", "bash")
	require.Equal(t, 0, r.code, r.stderr)
	cases := []struct {
		name  string
		words string
		cword int
		want  []string
	}{
		{"commands", "weir ver", 1, []string{"version"}},
		{"commands by prefix", "weir re", 1, []string{"replay", "request"}},
		{"a command's flags", "weir replay --j", 2, []string{"--json"}},
		{"run's flags", "weir run --ses", 2, []string{"--session"}},
		{"flags of another command stay out", "weir replay --ses", 2, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			script := r.stdout + "\nCOMP_WORDS=(" + c.words + "); COMP_CWORD=" + string(rune('0'+c.cword)) +
				"; _weir; printf '%s\\n' \"${COMPREPLY[@]}\"\n"
			cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, string(out))
			got := strings.Fields(string(out))
			if c.want == nil {
				require.Empty(t, got)
				return
			}
			require.Equal(t, c.want, got)
		})
	}
}

// TestCompletionScripts: the zsh and fish scripts name every command and
// every flag of run; a shell that is installed parses them (-n).
func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, shell := range []string{"zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			r := runHost(t, dir, "", "completion", shell)
			require.Equal(t, 0, r.code, r.stderr)
			for name := range commands {
				require.Contains(t, r.stdout, name)
			}
			for _, flag := range []string{"session", "route", "api-key-env"} {
				require.Contains(t, r.stdout, map[string]string{"zsh": "'--" + flag + "[", "fish": "-l " + flag + " "}[shell])
			}
			if path, err := exec.LookPath(shell); err == nil {
				cmd := exec.Command(path, "-n")
				cmd.Stdin = strings.NewReader(r.stdout)
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, string(out))
			}
		})
	}
	r := runHost(t, dir, "", "completion", "tcsh")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `unknown shell "tcsh"`)
}
